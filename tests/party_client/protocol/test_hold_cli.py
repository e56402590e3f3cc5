"""Polling ``party hold`` says what it waits for, then prints one JSON line per round as it is served
(stdout is a pipe here, not a terminal)."""
from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
import time

from linkhelpers import TEST_KEY_BITS, party_cmd, run_party
from linkhelpers import tables
from party_client import Party


def _lines(stream, sink: queue.Queue) -> threading.Thread:
    thread = threading.Thread(target=lambda: [sink.put(line) for line in stream], daemon=True)
    thread.start()
    return thread


def test_polling_hold_prints_each_round_as_served(keyholder, parties, tmp_path):
    (qdir, _), (hdir, hname) = parties(2)
    querier, holder = tables(5, n=30, m=40, overlap=12)
    querier.to_csv(tmp_path / "q.csv", index=False)
    holder.to_csv(tmp_path / "h.csv", index=False)
    hold = subprocess.Popen(party_cmd("hold", "--dir", str(hdir), "--keyholder", keyholder.address, "--input",
                                      str(tmp_path / "h.csv"), "--id-column", "health_no", "--release-columns",
                                      "diagnosis", "--poll-seconds", "2", "--quiet"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = queue.Queue(), queue.Queue()
    _lines(hold.stdout, out), _lines(hold.stderr, err)
    try:
        waiting = err.get(timeout=60)
        assert "waiting for queries from the key holder at " + keyholder.address in waiting
        assert "Ctrl-C to stop" in waiting
        for _ in range(2):                                # two rounds: a line for each, while still polling
            run_party("join", "--dir", str(qdir), "--keyholder", keyholder.address, "--holder", hname,
                      "--input", str(tmp_path / "q.csv"), "--id-column", "hcn", "--out", str(tmp_path / "j.csv"),
                      "--key-bits", str(TEST_KEY_BITS), "--quiet")
            summary = json.loads(out.get(timeout=30))
            assert summary["round"] == 1 and summary["session_id"]
            assert hold.poll() is None
    finally:
        hold.send_signal(signal.SIGINT)
        assert hold.wait(timeout=30) == 130


def test_ctrl_c_mid_round_stops_the_holder_within_seconds(keyholder, parties, tmp_path):
    """Ctrl-C while a round is being compared (the local thread pool): exit 130 within 5 s, the last
    line "party: interrupted", no traceback; the round stays unfinished for the next ``party hold``."""
    (qdir, _), (hdir, hname) = parties(2)
    querier, holder = tables(6, n=40, m=2500, overlap=20)
    querier.to_csv(tmp_path / "q.csv", index=False)
    holder.to_csv(tmp_path / "h.csv", index=False)
    flags = ["--keyholder", keyholder.address]
    hold = subprocess.Popen(party_cmd("--log-level", "INFO", "hold", "--dir", str(hdir), *flags, "--input",
                                      str(tmp_path / "h.csv"), "--id-column", "health_no", "--poll-seconds", "1",
                                      "--quiet"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err: queue.Queue = queue.Queue()
    reader = _lines(hold.stderr, err)
    join = subprocess.Popen(party_cmd("join", "--dir", str(qdir), *flags, "--holder", hname, "--input",
                                      str(tmp_path / "q.csv"), "--id-column", "hcn", "--out", str(tmp_path / "j.csv"),
                                      "--key-bits", str(TEST_KEY_BITS), "--quiet"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        seen = []
        while not any("(join)" in line for line in seen):              # "serving session … round 1 (join)"
            assert hold.poll() is None, seen
            seen.append(err.get(timeout=60))
        time.sleep(0.3)                                                 # comparisons under way
        started = time.monotonic()
        hold.send_signal(signal.SIGINT)
        try:
            status = hold.wait(timeout=5)
        except subprocess.TimeoutExpired:
            hold.kill()
            raise AssertionError("party hold did not stop within 5 s of SIGINT mid-round") from None
        print(f"stopped {time.monotonic() - started:.2f} s after SIGINT")
        reader.join(timeout=5)
        lines = seen + [err.get() for _ in range(err.qsize())]
        assert status == 130 and lines[-1].strip() == "party: interrupted", lines
        assert not any("Traceback" in line for line in lines), lines
        assert join.poll() is None                                      # the round was not finished
    finally:
        join.kill()
        join.wait()
        if hold.poll() is None:
            hold.kill()
        Party(qdir, progress=False).close_sessions(None)
