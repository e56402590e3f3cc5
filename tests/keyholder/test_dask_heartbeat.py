"""``keyholder serve --dask``: a scheduler that keeps its connections but stops answering (SIGSTOP) while
K waits for a zero test is declared lost after ``--dask-timeout`` by the heartbeat, at WARNING, and K
finishes the round locally (before, K waited on the frozen scheduler for good, logging at INFO)."""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

pytest.importorskip("distributed")

from daskhelpers import DaskCluster  # noqa: E402
from linkhelpers import TEST_KEY_BITS, canonical, make_parties, plaintext_join, serve_and_join, start_keyholder, \
    tables  # noqa: E402

RELEASE = ["diagnosis"]


def test_a_frozen_scheduler_is_declared_lost_and_the_key_holder_goes_on_locally(tmp_path):
    timeout = 4
    dask = DaskCluster(tmp_path / "dask", None, workers=1).start()
    server = start_keyholder(tmp_path / "kh", tls=False, extra=(
        "--dask", dask.address, "--dask-min-comparisons", "16", "--dask-timeout", str(timeout)))
    client = dask.client()
    frozen = threading.Event()

    def freeze() -> None:
        if dask.busy_worker(client, "zero_test", timeout=120) is not None:
            os.kill(dask.scheduler.pid, signal.SIGSTOP)
            frozen.set()
    try:
        (qdir, _), (hdir, hname) = make_parties(server, tmp_path, 2, cli=False)
        querier, holder = tables(37, n=60, m=300, overlap=30)
        watcher = threading.Thread(target=freeze, daemon=True)
        watcher.start()
        started = time.monotonic()
        result = serve_and_join(qdir, hdir, hname, querier, holder,
                                holder=dict(id_column="health_no", release_columns=RELEASE),
                                join=dict(id_column="hcn", key_bits=TEST_KEY_BITS, timeout=120))
        seconds = time.monotonic() - started
        assert frozen.is_set(), "no zero test was seen on the cluster"
        assert canonical(result.frame) == canonical(plaintext_join(querier, holder, RELEASE))
        lines = server.log_path.read_text().splitlines()
        declared = [line for line in lines if "declared lost" in line and "has not answered for" in line]
        assert declared and all(" WARNING " in line for line in declared), lines[-20:]
        assert f"(--dask-timeout {timeout} s)" in declared[0]
        assert any("zero tests run locally" in line for line in lines)
        assert seconds < 90, seconds
    finally:
        if frozen.is_set():
            os.kill(dask.scheduler.pid, signal.SIGCONT)
        server.stop()
        client.close(timeout=5)
        dask.stop()
