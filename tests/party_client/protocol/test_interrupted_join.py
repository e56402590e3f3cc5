"""Interrupts as documented (docs/protocol.md, "Interrupted runs"), with real processes: Ctrl-C on a
querier waiting for its round leaves the session open and says how to resume it; re-running the same
command resumes the round (nothing encrypted again) and links exactly; and a holder comparing a round
whose session the querier then closes stops that round's work within seconds and goes on serving."""
from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import threading
import time

import numpy as np
import pandas as pd

from linkhelpers import TEST_KEY_BITS, canonical, party_cmd, plaintext_join, relayed, run_party, tables
from party_client.protocol.round_watch import CHECK_SECONDS


def _lines(stream, sink: queue.Queue) -> threading.Thread:
    thread = threading.Thread(target=lambda: [sink.put(line) for line in stream], daemon=True)
    thread.start()
    return thread


def cpu_seconds(pid: int, over: float) -> float:
    """CPU seconds the process (all its threads) used in the next ``over`` seconds (Linux /proc)."""
    def used() -> float:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    before = used()
    time.sleep(over)
    return used() - before


def test_ctrl_c_leaves_the_session_to_resume_and_the_re_run_resumes_it(keyholder, parties, tmp_path):
    (qdir, _), (hdir, hname) = parties(2)
    querier, holder = tables(11, n=30, m=40, overlap=12)
    querier.to_csv(tmp_path / "q.csv", index=False)
    holder.to_csv(tmp_path / "h.csv", index=False)
    flags = ["--keyholder", keyholder.address]
    command = party_cmd("join", "--dir", str(qdir), *flags, "--holder", hname, "--input", str(tmp_path / "q.csv"),
                        "--id-column", "hcn", "--out", str(tmp_path / "j.csv"), "--key-bits", str(TEST_KEY_BITS),
                        "--quiet")
    join = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        session_id = relayed(qdir)                     # the query is at K; no holder is serving yet
        join.send_signal(signal.SIGINT)
        _, err = join.communicate(timeout=30)
    finally:
        if join.poll() is None:
            join.kill()
    lines = err.strip().splitlines()
    assert join.returncode == 130 and len(lines) == 1, err
    assert lines[0] == (f"party: interrupted; session {session_id} stays open: re-run the same command to resume "
                        f"it, or `party sessions close {session_id}`")
    listed = run_party("sessions", "list", "--dir", str(qdir), *flags).stdout
    assert session_id in listed and "open" in listed

    run_party("hold", "--dir", str(hdir), *flags, "--input", str(tmp_path / "h.csv"), "--id-column", "health_no",
              "--release-columns", "diagnosis", "--once", "--quiet")
    again = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert f"resuming session {session_id} round 1" in again.stderr
    linked = pd.read_csv(tmp_path / "j.csv", dtype=str, keep_default_na=False)
    expected = plaintext_join(querier, holder, ["diagnosis"])
    assert canonical(linked[expected.columns]) == canonical(expected)
    assert session_id not in run_party("sessions", "list", "--dir", str(qdir), *flags).stdout


def test_the_holder_stops_a_round_whose_session_was_closed(keyholder, parties, tmp_path):
    """A blocked Paillier round (each holder row compares hundreds of entries): closing its session stops
    the holder's work within seconds.  Batches of 256 such rows were minutes of work each, so the holder
    learnt of the close only when its first batch was submitted."""
    (qdir, _), (hdir, hname) = parties(2)
    rng = np.random.default_rng(4)

    def people(n: int) -> pd.DataFrame:                 # few dates of birth: full bins, every row compared a lot
        letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
        return pd.DataFrame({"first": ["".join(rng.choice(letters, 6)) for _ in range(n)],
                             "last": ["".join(rng.choice(letters, 7)) for _ in range(n)],
                             "dob": [f"1970{m:02d}01" for m in rng.integers(1, 13, n)]})
    people(150).to_csv(tmp_path / "q.csv", index=False)
    people(40).to_csv(tmp_path / "h.csv", index=False)
    flags = ["--keyholder", keyholder.address]
    preset = ["--preset", "person", "--map", "first=first,last=last,dob=dob"]
    hold = subprocess.Popen(party_cmd("--log-level", "INFO", "hold", "--dir", str(hdir), *flags, "--input",
                                      str(tmp_path / "h.csv"), *preset, "--poll-seconds", "1", "--quiet"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err: queue.Queue = queue.Queue()
    out: queue.Queue = queue.Queue()
    _lines(hold.stderr, err), _lines(hold.stdout, out)
    join = subprocess.Popen(party_cmd("join", "--dir", str(qdir), *flags, "--holder", hname, "--input",
                                      str(tmp_path / "q.csv"), *preset, "--out", str(tmp_path / "j.csv"),
                                      "--key-bits", str(TEST_KEY_BITS), "--quiet"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    told: queue.Queue = queue.Queue()
    _lines(join.stderr, told)
    try:
        seen: list[str] = []
        session_id = relayed(qdir, deadline=120)        # the query is at K, the holder comparing
        said: list[str] = []                            # the querier relays the holder's progress
        # the first step shown, with or without the time left (a loaded machine may show its first
        # estimate only at 90 %, too late to close the session before the round ends)
        while not any(re.search(r"holder '.+': [1-9]0 % of round 1 compared", line) for line in said):
            try:
                said.append(told.get(timeout=90))
            except queue.Empty:
                raise AssertionError(f"the querier showed no progress of the holder's round: {said}") from None
        print("querier:", said)
        join.kill()                                     # the querier is gone; its user closes the session
        join.wait()
        run_party("sessions", "close", session_id, "--dir", str(qdir), *flags)
        closed = time.monotonic()
        while not any("not served" in line and "closed" in line for line in seen):
            assert hold.poll() is None, seen
            try:
                seen.append(err.get(timeout=120))
            except queue.Empty:
                raise AssertionError(f"the holder did not stop the closed round: {seen}") from None
        stopped = time.monotonic() - closed
        time.sleep(2.0)                                 # the batches under way end (a second or two each)
        busy = cpu_seconds(hold.pid, over=3.0)
        print(f"the holder stopped the closed round {stopped:.1f} s after the close; then {busy:.2f} CPU s in 3 s")
        assert stopped < CHECK_SECONDS + 10, seen
        assert busy < 0.6                               # its cores are free: nothing of the dead round runs
        assert out.empty()                              # the round was never reported served
        assert hold.poll() is None                      # and the holder goes on serving
    finally:
        for process in (join, hold):
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
