"""A large query is sent while it is encrypted and read by the holder while it comes in
(docs/protocol.md, "Streaming the query"), with a real key holder process and the real ``party`` CLI
or API: the holder starts on it before the upload ends and the join is exact under either kind of
arithmetic; a querier killed in the middle of its upload leaves no round, no spooled bytes and a
holder that goes on, and its re-run sends the query again and gets the exact join; a key holder
killed in the middle of an upload comes back to a querier that sends the query again and a holder
that serves the new upload; Ctrl-C in the middle of an upload stops the querier with one line."""
from __future__ import annotations

import json
import signal
import subprocess
import time

import pandas as pd
import pytest

from linkhelpers import REPRESENTATIVE, canonical, keyholder_cmd, make_party, party_cmd, plaintext_join, \
    scheme_flags, tables
from party_client.protocol.querier import STREAM_MIN_SLOTS


def start_holder(server, hdir, tmp_path) -> subprocess.Popen:
    """``party hold`` polling, its INFO log in holder.log; returned once it waits for queries (a streamed
    query then wakes its long-poll at once, so it reads the query while it still comes in)."""
    holder = subprocess.Popen(party_cmd("--log-level", "INFO", "hold", "--dir", str(hdir), *server.flags(), "--input",
                                        str(tmp_path / "h.csv"), "--id-column", "health_no", "--release-columns",
                                        "diagnosis", "--poll-seconds", "5", "--quiet"),
                              stdout=subprocess.DEVNULL, stderr=open(tmp_path / "holder.log", "w"), text=True)
    deadline = time.monotonic() + 60
    while "waiting for queries" not in (tmp_path / "holder.log").read_text():
        assert time.monotonic() < deadline and holder.poll() is None, (tmp_path / "holder.log").read_text()
        time.sleep(0.05)
    return holder


def join_command(server, qdir, hname, tmp_path, scheme: str) -> list[str]:
    return party_cmd("join", "--dir", str(qdir), *server.flags(), "--holder", hname, "--input",
                     str(tmp_path / "q.csv"), "--id-column", "hcn", "--out", str(tmp_path / "j.csv"),
                     "--report", str(tmp_path / "report.json"), *scheme_flags(scheme), "--quiet")


def linked_pair(server, tmp_path, seed: int, n: int, m: int):
    (qdir, _), (hdir, hname) = make_party(server, tmp_path, cli=False), make_party(server, tmp_path, cli=False)
    querier_rows, holder_rows = tables(seed, n=n, m=m, overlap=m // 2)
    querier_rows.to_csv(tmp_path / "q.csv", index=False)
    holder_rows.to_csv(tmp_path / "h.csv", index=False)
    return qdir, hdir, hname, plaintext_join(querier_rows, holder_rows, ["diagnosis"])


def holder_log(tmp_path) -> str:
    return (tmp_path / "holder.log").read_text()


def join_while_holder_reads(server, qdir, hname, tmp_path, scheme: str = "ristretto") -> subprocess.Popen:
    """A ``party join`` frozen (SIGSTOP) in the middle of its upload, returned once the holder reads
    the query (the caller resumes it with SIGCONT or kills it): whatever the machine's load, the holder
    reads a query still coming in."""
    join = subprocess.Popen(join_command(server, qdir, hname, tmp_path, scheme), stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not list((server.data_dir / "spool").rglob("*.partial")):       # K has begun spooling it
        assert time.monotonic() < deadline and join.poll() is None, "the upload never began"
        time.sleep(0.01)
    join.send_signal(signal.SIGSTOP)
    wait_for_holder_log(tmp_path, "query still coming in")
    return join


@pytest.mark.parametrize("scheme", REPRESENTATIVE)
def test_the_holder_reads_a_streamed_query_while_it_comes_in_and_the_join_is_exact(fresh_keyholder, tmp_path, scheme):
    server = fresh_keyholder()
    qdir, hdir, hname, expected = linked_pair(server, tmp_path, 21, n=8000, m=80)   # 19,661 slots
    holder = start_holder(server, hdir, tmp_path)
    try:
        join = join_while_holder_reads(server, qdir, hname, tmp_path, scheme)
        join.send_signal(signal.SIGCONT)
        assert join.wait(timeout=180) == 0, join.stderr.read()
    finally:
        holder.terminate()
        holder.wait(timeout=30)
    assert json.loads((tmp_path / "report.json").read_text())["table_slots"] >= STREAM_MIN_SLOTS   # streamed
    joined = pd.read_csv(tmp_path / "j.csv", dtype=str, keep_default_na=False)
    assert canonical(joined) == canonical(expected)
    assert "(a join query still coming in)" in holder_log(tmp_path)        # listed and read before its end


def wait_for_holder_log(tmp_path, *needles: str, seconds: float = 60) -> None:
    """Until the holder's log says one of ``needles``."""
    deadline = time.monotonic() + seconds
    while not any(needle in holder_log(tmp_path) for needle in needles):
        assert time.monotonic() < deadline, holder_log(tmp_path)
        time.sleep(0.05)


@pytest.fixture
def big_join(fresh_keyholder, tmp_path, request):
    """A key holder, a polling ``party hold`` (stopped after the test) and a querier with 20,000 keys
    (55,611 slots: seconds of encryption); yields (server, querier dir, holder name, expected join)."""
    server = fresh_keyholder()
    qdir, hdir, hname, expected = linked_pair(server, tmp_path, request.param, n=20000, m=60)
    holder = start_holder(server, hdir, tmp_path)
    try:
        yield server, qdir, hname, expected
        assert holder.poll() is None                                       # the holder went on throughout
    finally:
        holder.terminate()
        holder.wait(timeout=30)


@pytest.mark.parametrize("big_join", [22], indirect=True)
def test_a_querier_killed_mid_upload_leaves_nothing_and_its_rerun_joins_exactly(big_join, tmp_path):
    server, qdir, hname, expected = big_join
    join = join_while_holder_reads(server, qdir, hname, tmp_path)
    join.kill()                                                            # kill -9 the querier mid-upload
    join.wait()
    wait_for_holder_log(tmp_path, "broke off", seconds=30)                 # K told the holder
    assert [p for p in (server.data_dir / "spool").rglob("*") if p.is_file()] == []   # no half query at K
    again = subprocess.run(join_command(server, qdir, hname, tmp_path, "ristretto"), stderr=subprocess.PIPE,
                           text=True, timeout=180)
    assert again.returncode == 0, again.stderr
    joined = pd.read_csv(tmp_path / "j.csv", dtype=str, keep_default_na=False)
    assert canonical(joined) == canonical(expected)
    audit = subprocess.run(keyholder_cmd("audit", "--data-dir", str(server.data_dir)), capture_output=True,
                           text=True, check=True).stdout
    actions = [line.split("\t")[2] for line in audit.splitlines()]
    assert actions.count("open_session") == 1 and actions.count("relay_query") == 1    # one round: the re-run's


@pytest.mark.parametrize("big_join", [23], indirect=True)
def test_a_key_holder_killed_mid_upload_gets_the_query_again_and_the_join_is_exact(big_join, tmp_path):
    server, qdir, hname, expected = big_join
    join = join_while_holder_reads(server, qdir, hname, tmp_path)
    server.stop(kill=True)                                                  # kill -9 K mid-upload
    join.send_signal(signal.SIGCONT)
    time.sleep(1.0)
    server.start()                                                          # same port, same data
    assert join.wait(timeout=180) == 0, join.stderr.read()
    wait_for_holder_log(tmp_path, "ended before it was complete", "broke off")   # its read of the first upload
    joined = pd.read_csv(tmp_path / "j.csv", dtype=str, keep_default_na=False)
    assert canonical(joined) == canonical(expected)
    assert [p for p in (server.data_dir / "spool").rglob("*.partial")] == []


@pytest.mark.parametrize("big_join", [24], indirect=True)
def test_ctrl_c_mid_upload_stops_the_querier_with_one_line_and_no_traceback(big_join, tmp_path):
    """The upload's encryption is stopped under grpc's request thread: no "Exception iterating requests"."""
    server, qdir, hname, _ = big_join
    join = join_while_holder_reads(server, qdir, hname, tmp_path)
    join.send_signal(signal.SIGINT)
    join.send_signal(signal.SIGCONT)
    assert join.wait(timeout=30) == 130
    message = join.stderr.read()
    assert "Traceback" not in message and "Exception iterating" not in message, message
    assert len(message.strip().splitlines()) == 1, message
