"""The holder's comparisons (``party hold --dask``) and the key holder's zero tests (``keyholder serve
--dask``) on a real Dask cluster on loopback: one scheduler and two single-threaded workers.  The
join equals the plaintext join, with TLS inside the cluster too; a worker killed mid-round loses
nothing; a scheduler lost mid-round stops the holder with one line and exit 1, and the round is
then finished by a holder without Dask."""
from __future__ import annotations

import signal
import subprocess
import sys

import pandas as pd
import pytest

pytest.importorskip("distributed")

from common.distributed import DaskUnavailable, check_scheduler_address  # noqa: E402
from daskhelpers import DaskCluster, dask_tls_files  # noqa: E402
from linkhelpers import (TEST_KEY_BITS, canonical, make_party, party_cmd, plaintext_join, run_party,  # noqa: E402
                         start_keyholder, tables)

RELEASE = ["diagnosis"]


@pytest.fixture
def cluster(tmp_path):
    started = []

    def make(tls: bool = False) -> DaskCluster:
        folder = tmp_path / f"dask{len(started)}"
        found = DaskCluster(folder, dask_tls_files(folder / "tls") if tls else None)
        started.append(found)
        return found.start()
    yield make
    for found in started:
        found.stop()


def _join_files(tmp_path, seed: int, m: int):
    querier, holder = tables(seed, n=60, m=m, overlap=30)
    querier.to_csv(tmp_path / "q.csv", index=False)
    holder.to_csv(tmp_path / "h.csv", index=False)
    return querier, holder


def _hold(server, directory, tmp_path, *extra: str, env=None, piped: bool = False) -> subprocess.Popen:
    """``party hold``; its output goes to hold.log unless ``piped`` (then read it with communicate)."""
    output = subprocess.PIPE if piped else open(tmp_path / "hold.log", "a")
    return subprocess.Popen(party_cmd("hold", "--dir", str(directory), *server.flags(), "--input",
                                      str(tmp_path / "h.csv"), "--id-column", "health_no", "--release-columns",
                                      ",".join(RELEASE), "--quiet", *extra),
                            stdout=output, stderr=output, text=True, env=env)


def _join(server, directory, holder_name, tmp_path, *, wait: bool = True):
    args = ("join", "--dir", str(directory), *server.flags(), "--holder", holder_name, "--input",
            str(tmp_path / "q.csv"), "--id-column", "hcn", "--out", str(tmp_path / "j.csv"),
            "--key-bits", str(TEST_KEY_BITS), "--timeout", "120", "--quiet")
    if wait:
        return run_party(*args)
    return subprocess.Popen(party_cmd(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _assert_plaintext_result(tmp_path, querier, holder):
    got = pd.read_csv(tmp_path / "j.csv", dtype=str, keep_default_na=False)
    assert canonical(got) == canonical(plaintext_join(querier, holder, RELEASE))


def _stop(hold: subprocess.Popen) -> None:
    """SIGINT, then fail if ``party hold`` is still running 30 s later (killed first: nothing outlives the test)."""
    if hold.poll() is None:
        hold.send_signal(signal.SIGINT)
        try:
            hold.wait(timeout=30)
        except subprocess.TimeoutExpired:
            hold.kill()
            hold.wait()
            raise AssertionError("party hold did not stop within 30 s of SIGINT") from None


def _teardown(hold: subprocess.Popen, client, server) -> None:
    """Stop the holder, the Dask client and the key holder, whichever of them fails to stop."""
    try:
        _stop(hold)
    finally:
        client.close()
        server.stop()


def test_a_worker_killed_mid_round_loses_nothing(cluster, tmp_path):
    """Both sides on the cluster; a worker running the holder's comparisons is killed -9 mid-round (its
    tasks are rerun; when it held the only replica of the scattered query, the holder scatters it again)."""
    dask = cluster()
    server = start_keyholder(tmp_path / "kh", tls=False,
                             extra=("--dask", dask.address, "--dask-min-comparisons", "64"))
    (qdir, _), (hdir, hname) = make_party(server, tmp_path), make_party(server, tmp_path)
    querier, holder = _join_files(tmp_path, 31, m=900)
    client = dask.client()
    hold = _hold(server, hdir, tmp_path, "--dask", dask.address, "--poll-seconds", "1", env=dask.env())
    try:
        killer = dask.kill_when_busy(client, "compare_units")
        _join(server, qdir, hname, tmp_path)
        killer.join(timeout=5)
        assert killer.killed, "no comparison task was seen running: the round did not go through the cluster"
        _assert_plaintext_result(tmp_path, querier, holder)
        assert {"compare_units", "zero_test"} <= dask.task_prefixes(client)
        assert hold.poll() is None
    finally:
        _teardown(hold, client, server)


def test_tls_cluster_for_holder_and_key_holder(cluster, tmp_path, monkeypatch):
    """Scheduler, workers and both clients speak Dask's TLS; the key holder needs no --insecure for it."""
    dask = cluster(tls=True)
    for name, value in dask.env().items():
        if name.startswith("DASK_"):
            monkeypatch.setenv(name, value)              # the key holder's process reads them at start
    server = start_keyholder(tmp_path / "kh", tls=False,
                             extra=("--dask", dask.address, "--dask-min-comparisons", "16"))
    (qdir, _), (hdir, hname) = make_party(server, tmp_path), make_party(server, tmp_path)
    querier, holder = _join_files(tmp_path, 32, m=200)
    client = dask.client()
    hold = _hold(server, hdir, tmp_path, "--dask", dask.address, "--poll-seconds", "1", env=dask.env())
    try:
        _join(server, qdir, hname, tmp_path)
        _assert_plaintext_result(tmp_path, querier, holder)
        assert dask.address.startswith("tls://")
        assert {"compare_units", "zero_test"} <= dask.task_prefixes(client)
    finally:
        _teardown(hold, client, server)


def test_scheduler_lost_mid_round_stops_the_holder_with_one_line(cluster, tmp_path):
    """exit 1, one line; the round is not finished, and a holder without Dask then finishes it."""
    dask = cluster()
    server = start_keyholder(tmp_path / "kh", tls=False)
    (qdir, _), (hdir, hname) = make_party(server, tmp_path), make_party(server, tmp_path)
    querier, holder = _join_files(tmp_path, 33, m=900)
    client = dask.client()
    join = _join(server, qdir, hname, tmp_path, wait=False)
    try:
        killer = dask.kill_when_busy(client, "compare_units", target="scheduler")
        hold = _hold(server, hdir, tmp_path, "--dask", dask.address, "--poll-seconds", "1", env=dask.env(),
                     piped=True)
        out, err = hold.communicate(timeout=90)
        assert killer.killed == "scheduler"
        assert hold.returncode == 1, err
        last = err.strip().splitlines()[-1]
        assert last.startswith("party: error: the Dask scheduler at ") and "is gone" in last, err
        assert "the round was not finished" in last
        assert "Traceback" not in err
        assert join.poll() is None                       # the round was not finished
        run_party("hold", "--dir", str(hdir), *server.flags(), "--input", str(tmp_path / "h.csv"),
                  "--id-column", "health_no", "--release-columns", ",".join(RELEASE), "--once", "--quiet")
        assert join.wait(timeout=60) == 0, join.stderr.read()
        _assert_plaintext_result(tmp_path, querier, holder)
    finally:
        if join.poll() is None:
            join.kill()
        client.close()
        server.stop()


def test_scheduler_address_rule_and_missing_extra(tmp_path):
    """TLS always; plaintext only on loopback (and, for the key holder, only with --insecure)."""
    assert check_scheduler_address("tls://10.0.0.5:8786", False) == "tls://10.0.0.5:8786"
    assert check_scheduler_address("127.0.0.1:8786", True) == "tcp://127.0.0.1:8786"
    for address, allow in (("tcp://10.0.0.5:8786", True), ("tcp://127.0.0.1:8786", False),
                           ("http://127.0.0.1:8786", True), ("tls://host", True)):
        with pytest.raises(DaskUnavailable):
            check_scheduler_address(address, allow)
    refused = subprocess.run([sys.executable, "-m", "keyholder.cli", "serve", "--listen", "127.0.0.1:0",
                              "--data-dir", str(tmp_path / "kh"), "--insecure", "--dask", "tcp://10.0.0.5:8786"],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "must be on loopback" in refused.stderr and not (tmp_path / "kh").exists()
    run_party("init", "--dir", str(tmp_path / "p"), "--name", "p")
    without = subprocess.run([sys.executable, "-c", "import sys; sys.modules['distributed'] = None; "
                              "from party_client.cli import main; sys.exit(main(sys.argv[1:]))",
                              "hold", "--dir", str(tmp_path / "p"), "--input", "h.csv", "--id-column", "id",
                              "--dask", "tcp://127.0.0.1:8786"], capture_output=True, text=True, timeout=60)
    assert without.returncode == 2 and without.stderr.count("\n") == 1, without.stderr
    assert 'pip install "securelink-deid[dask]"' in without.stderr
