"""The holder's validation of a received query on its Dask cluster (docs/protocol.md, "Scaling out"),
piece by piece as the query's records arrive: on a real ``dask scheduler`` and ``dask worker``
processes, the count equals the local validation's and a bad ciphertext in a late piece is refused
naming its place in the whole query, as locally."""
from __future__ import annotations

import os

import pytest

pytest.importorskip("distributed")

from common.distributed import Cluster  # noqa: E402
from common.schemes import InvalidCiphertext, get_scheme  # noqa: E402
from daskhelpers import DaskCluster  # noqa: E402
from linkhelpers import SCHEMES, key_bits_for  # noqa: E402
from party_client.protocol import scheduling  # noqa: E402
from party_client.protocol.wire import read_query  # noqa: E402
from proto import linkage_pb2 as pb  # noqa: E402


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    dask = DaskCluster(tmp_path_factory.mktemp("dask")).start()
    client = dask.client()
    try:
        yield Cluster(client)
    finally:
        client.close()
        dask.stop()


def records(block: bytes, width: int, per_record: int = 40) -> list[bytes]:
    """A query's opened records: a header, then chunks of ``per_record`` ciphertexts."""
    return [pb.QueryHeader().SerializeToString()] + [
        pb.CiphertextChunk(ciphertexts=block[i:i + per_record * width]).SerializeToString()
        for i in range(0, len(block), per_record * width)]


@pytest.mark.parametrize("scheme_name", SCHEMES)
def test_a_query_validated_on_the_cluster_as_locally(cluster, monkeypatch, scheme_name):
    scheme = get_scheme(scheme_name)
    pair = scheme.generate_key(key_bits_for(scheme_name) or 256)
    width = scheme.ciphertext_width(pair.public)
    block = scheme.encrypt(pair.public, [os.urandom(scheme.encoding_bytes(pair.public)) for _ in range(300)])
    monkeypatch.setattr(scheduling, "VALIDATION_PIECE_BYTES", 32 * width)      # 10 pieces of 32
    on_cluster = scheduling.cluster_validation(cluster, scheme, pair.public)
    query, received = read_query(records(block, width), scheme, pair.public, on_cluster)
    assert query.ciphertexts == 300 and received == block
    bad = 250
    broken = block[:bad * width] + b"\xff" * width + block[(bad + 1) * width:]
    with pytest.raises(InvalidCiphertext) as local:
        read_query(records(broken, width), scheme, pair.public)
    with pytest.raises(InvalidCiphertext) as remote:
        read_query(records(broken, width), scheme, pair.public, on_cluster)
    assert str(remote.value) == str(local.value) and str(bad) in str(remote.value)


def test_a_dask_worker_sizes_the_arithmetic_pool_by_its_own_threads(cluster):
    """A worker started with ``--nthreads 1`` was given one core: the scheme's threads there are one, not
    one per core of the host (which would take the neighbouring workers' cores); outside Dask, one per
    core."""
    from common.schemes.pool import pool_threads
    assert cluster.submit(pool_threads).result() == 1
    assert pool_threads() == (os.cpu_count() or 2)
