"""``party hold --concurrency N`` serves several rounds at once, and a lookup never waits behind a join.

Real processes throughout: the session's ``keyholder serve`` (mTLS), one polling ``party hold
--concurrency 2`` and several querier CLIs at once.
"""
from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
import time

import pandas as pd

from linkhelpers import TEST_KEY_BITS, make_party, party_cmd
from party_client import Party
from linkhelpers import serve_in_thread, canonical, plaintext_join, tables


def _lines(stream, sink: queue.Queue) -> None:
    """Each line with the moment it arrived."""
    threading.Thread(target=lambda: [sink.put((time.monotonic(), line)) for line in stream], daemon=True).start()


def _until(sink: queue.Queue, text: str, timeout: float) -> float:
    deadline = time.monotonic() + timeout
    while True:
        at, line = sink.get(timeout=max(0.1, deadline - time.monotonic()))
        if text in line:
            return at


def _finish(process: subprocess.Popen, name: str) -> float:
    """Wait for a querier CLI; the moment it ended (polled every 20 ms)."""
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    ended = time.monotonic()
    _, stderr = process.communicate(timeout=10)
    assert process.returncode == 0, f"{name}: {stderr}"
    return ended


def test_lookups_are_served_while_a_large_join_is_compared(keyholder, parties, tmp_path):
    (jdir, _), (l1dir, _), (l2dir, _), (hdir, hname) = parties(4)
    querier, holder = tables(7, n=300, m=2400, overlap=120)
    querier.to_csv(tmp_path / "q.csv", index=False)
    holder.to_csv(tmp_path / "h.csv", index=False)
    small = [querier.iloc[[4, 5, 200]], querier.iloc[[6, 250]]]        # two present, one absent; one of each
    for index, frame in enumerate(small):
        frame.to_csv(tmp_path / f"l{index}.csv", index=False)
    flags = keyholder.flags()
    hold = subprocess.Popen(party_cmd("--log-level", "INFO", "hold", "--dir", str(hdir), *flags, "--input",
                                      str(tmp_path / "h.csv"), "--id-column", "health_no", "--release-columns",
                                      "diagnosis", "--poll-seconds", "2", "--concurrency", "2", "--quiet"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = queue.Queue(), queue.Queue()
    _lines(hold.stdout, out), _lines(hold.stderr, err)

    def query(mode: str, folder, source: str, target: str, *extra: str) -> subprocess.Popen:
        return subprocess.Popen(party_cmd(mode, "--dir", str(folder), *flags, "--holder", hname, "--input",
                                          str(tmp_path / source), "--id-column", "hcn", "--out",
                                          str(tmp_path / target), "--key-bits", str(TEST_KEY_BITS), "--quiet",
                                          *extra),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _until(err, "waiting for queries", 60)
        join = query("join", jdir, "q.csv", "join.csv")
        _until(err, "(join)", 60)                                      # the holder is comparing the join now
        lookups = [query("lookup", folder, f"l{index}.csv", f"l{index}.out.csv", "--population", "5000")
                   for index, folder in enumerate((l1dir, l2dir))]
        lookup_ends = [_finish(process, f"lookup {i}") for i, process in enumerate(lookups)]
        join_end = _finish(join, "join")
        print("lookups ended", [round(join_end - e, 2) for e in lookup_ends], "s before the join")
        assert max(lookup_ends) < join_end - 1.0, (lookup_ends, join_end)
        summaries = [json.loads(line) for _, line in (out.get(timeout=30) for _ in range(3))]
        assert [s["rows"] for s in summaries][-1] == len(holder)        # the join's line comes last
        assert hold.poll() is None
    finally:
        hold.send_signal(signal.SIGINT)
        assert hold.wait(timeout=30) == 130

    expected = plaintext_join(querier, holder, ["diagnosis"])
    joined = pd.read_csv(tmp_path / "join.csv", dtype=str, keep_default_na=False)
    assert canonical(joined) == canonical(expected)
    present = set(expected.loc[expected["matched"], "hcn"])
    for index, frame in enumerate(small):
        found = pd.read_csv(tmp_path / f"l{index}.out.csv", dtype=str, keep_default_na=False)
        assert found["hcn"].tolist() == frame["hcn"].tolist()
        assert found["matched"].tolist() == [str(v in present) for v in frame["hcn"]]
        assert "True" in found["matched"].tolist()


def test_a_lookup_session_full_of_rounds_is_replaced(fresh_keyholder, tmp_path):
    """K caps the rounds of a session (here 2): the next lookup continues in a fresh session."""
    server = fresh_keyholder(extra=("--max-rounds", "2"))
    (qdir, _), (hdir, hname) = make_party(server, tmp_path, cli=False), make_party(server, tmp_path, cli=False)
    querier, holder = tables(3, n=20, m=30, overlap=10)
    q = Party(qdir, progress=False)
    stop = threading.Event()
    thread = serve_in_thread(Party(hdir, progress=False), holder, [], stop)
    expected = plaintext_join(querier, holder, [])
    try:
        reports = []
        for _ in range(3):
            found = q.lookup(hname, querier.iloc[4:7], "hcn", population=50_000, key_bits=TEST_KEY_BITS)
            assert found.frame["matched"].tolist() == expected["matched"].iloc[4:7].tolist()
            reports.append(found.report)
    finally:
        stop.set()
        thread.join(timeout=30)
    assert reports[0]["session_id"] == reports[1]["session_id"] != reports[2]["session_id"]
    assert [r["session_rounds"] for r in reports] == [1, 2, 1]
