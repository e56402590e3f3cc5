"""Polling ``party hold`` says what it waits for, then prints one JSON line per round as it is served
(stdout is a pipe here, not a terminal)."""
from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading

from linkhelpers import TEST_KEY_BITS, party_cmd, run_party
from linkhelpers import tables


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
