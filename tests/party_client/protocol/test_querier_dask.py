"""The querier's encryption on its own Dask cluster (``party join|dedup --dask``, docs/protocol.md,
"Scaling out"): a real ``dask scheduler`` and ``dask worker`` processes on loopback.  The result equals
the local run's (the plaintext join); the tasks run ``encrypt_items``, the local encryption worker's
function, and receive only bytes, ints and the scheme's name; a scheduler killed mid-encryption costs
nothing (the rest is encrypted locally, said in one line)."""
from __future__ import annotations

import subprocess

import pandas as pd
import pytest

pytest.importorskip("distributed")

from daskhelpers import DaskCluster  # noqa: E402
from linkhelpers import (SCHEMES, TEST_KEY_BITS, canonical, encoding_length, key_bits_for, make_parties, party_cmd,  # noqa: E402
                         plaintext_join, serve_and_join, start_keyholder, tables)

RELEASE = ["diagnosis"]


@pytest.fixture
def dask_cluster(tmp_path):
    started = []

    def make(workers: int = 2) -> DaskCluster:
        found = DaskCluster(tmp_path / f"dask{len(started)}", workers=workers)
        started.append(found)
        return found.start()
    yield make
    for found in started:
        found.stop()


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_query_encrypted_on_the_cluster_gives_the_local_result(dask_cluster, tmp_path, scheme):
    """Same join locally and with ``dask_client=``; the tasks' arguments are plain values only."""
    dask = dask_cluster()
    server = start_keyholder(tmp_path / "kh", tls=False)
    client = dask.client()
    try:
        (qdir, _), (hdir, hname) = make_parties(server, tmp_path, 2, cli=False)
        querier, holder = tables(51, n=700, m=80, overlap=40)
        arguments: list[tuple] = []
        submit = client.submit

        def recording(function, *args, **kwargs):            # what the cluster receives, as submitted
            arguments.append((function, args))
            return submit(function, *args, **kwargs)
        client.submit = recording
        runs = [serve_and_join(qdir, hdir, hname, querier, holder,
                               holder=dict(id_column="health_no", release_columns=RELEASE),
                               join=dict(id_column="hcn", key_bits=key_bits_for(scheme), scheme=scheme, **extra))
                for extra in ({}, {"dask_client": client})]
        expected = canonical(plaintext_join(querier, holder, RELEASE))
        assert canonical(runs[0].frame) == canonical(runs[1].frame) == expected
        names = {args[0].__name__ for _, args in arguments}
        assert names == {"encrypt_items"}, names
        assert len(arguments) >= 2, "the query was not cut into several tasks"
        for _, args in arguments:
            assert {type(value) for value in args[1:]} <= {bytes, int, str}, args[1:]
        framed = 1 + encoding_length(scheme)                                  # flag + encoding per slot
        assert sum(len(args[4]) for _, args in arguments) == runs[1].report["table_slots"] * framed
    finally:
        client.close()
        server.stop()


def test_a_scheduler_lost_mid_encryption_costs_nothing(dask_cluster, tmp_path):
    """``party join --dask``: the scheduler is killed -9 while an encryption task runs; the join still
    equals the plaintext join, exit 0, with one line saying the rest was encrypted locally."""
    dask = dask_cluster(workers=1)
    server = start_keyholder(tmp_path / "kh", tls=False)
    (qdir, _), (hdir, hname) = make_parties(server, tmp_path, 2, cli=False)
    querier, holder = tables(52, n=6000, m=60, overlap=30)
    querier.to_csv(tmp_path / "q.csv", index=False)
    holder.to_csv(tmp_path / "h.csv", index=False)
    client = dask.client()
    hold = subprocess.Popen(party_cmd("hold", "--dir", str(hdir), *server.flags(), "--input", str(tmp_path / "h.csv"),
                                      "--id-column", "health_no", "--release-columns", ",".join(RELEASE),
                                      "--poll-seconds", "1", "--quiet"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        killer = dask.kill_when_busy(client, "encrypt_items", target="scheduler")
        join = subprocess.run(party_cmd("join", "--dir", str(qdir), *server.flags(), "--holder", hname, "--input",
                                        str(tmp_path / "q.csv"), "--id-column", "hcn", "--out", str(tmp_path / "j.csv"),
                                        "--key-bits", str(TEST_KEY_BITS), "--timeout", "120", "--quiet",
                                        "--dask", dask.address, "--dask-timeout", "60"),
                              capture_output=True, text=True, timeout=300, env=dask.env())
        killer.join(timeout=5)
        assert killer.killed == "scheduler", "no encryption task was seen on the cluster"
        assert join.returncode == 0, join.stderr
        assert "Traceback" not in join.stderr
        lines = [line for line in join.stderr.splitlines() if "encrypting the rest of the query locally" in line]
        assert len(lines) == 1 and "is gone" in lines[0], join.stderr
        got = pd.read_csv(tmp_path / "j.csv", dtype=str, keep_default_na=False)
        assert canonical(got) == canonical(plaintext_join(querier, holder, RELEASE))
    finally:
        hold.kill()
        hold.wait()
        client.close()
        server.stop()
