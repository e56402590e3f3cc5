"""Lookup serving built for a desk: one querier's concurrent lookups share one session (none left
open unlisted), many parties' lookups are served at once, and a new session's bucket index over a
million rows is built in one vectorized pass.

Real processes: a plaintext loopback ``keyholder serve`` of the test's own (its audit log is read),
a real ``party hold`` process or the real ``Holder`` serving from a thread, real ``party`` CLIs.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from linkhelpers import keyholder_cmd, make_parties, make_party, party_cmd, run_party, tables
from party_client import Party
from party_client.crypto.encoding import lookup_buckets
from party_client.matching.keys import HolderKeys
from party_client.protocol.engines.interface import HolderData
from party_client.protocol.engines.lookup import bucket_index
from party_client.protocol.engines.session_indexes import SessionIndexes
from party_client.protocol.holder import LOOKUP_LANE
from party_client.matching.normalize import normalize_identifiers

POPULATION = 50_000
LOCK_DELETER = """
import os, sys, time
while True:
    try:
        os.unlink(sys.argv[1])
    except FileNotFoundError:
        pass
    time.sleep(0.001)
"""


def _audit(server) -> list[str]:
    result = subprocess.run(keyholder_cmd("audit", "--data-dir", str(server.data_dir)), capture_output=True,
                            text=True, check=True)
    return [line.split("\t")[2] for line in result.stdout.splitlines()]


def _listed(folder, server) -> list[list[str]]:
    lines = run_party("sessions", "list", "--dir", str(folder), *server.flags()).stdout.splitlines()
    return [line.split("\t") for line in lines[1:]]


def _expected(querier: pd.DataFrame, holder: pd.DataFrame) -> dict[str, bool]:
    present = set(normalize_identifiers(holder["health_no"]))
    return {v: n in present for v, n in zip(querier["hcn"], normalize_identifiers(querier["hcn"]))}


def test_concurrent_lookups_of_one_party_share_one_session(fresh_keyholder, tmp_path):
    """16 lookups at once from one party (14 threads, 2 CLI processes) against a real ``party hold``,
    while another process keeps deleting ``lookups/sessions.lock`` (it was the lock, and lookups that
    opened it afresh each took it: sessions were left open at K unlisted, their secrets lost): one
    lookup session, listed and open at K; a replaced session is closed once unused."""
    server = fresh_keyholder()
    (qdir, _), (hdir, hname) = make_party(server, tmp_path, cli=False), make_party(server, tmp_path, cli=False)
    querier, holder = tables(11, n=40, m=400, overlap=20)
    holder.to_csv(tmp_path / "h.csv", index=False)
    expected = _expected(querier, holder)
    picks = [querier.iloc[[i]] for i in range(4, 20)]
    clis = range(2)
    for index in clis:
        picks[index].to_csv(tmp_path / f"one{index}.csv", index=False)
    hold = subprocess.Popen(party_cmd("hold", "--dir", str(hdir), *server.flags(), "--input", str(tmp_path / "h.csv"),
                                      "--id-column", "health_no", "--poll-seconds", "2", "--quiet"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deleter = subprocess.Popen([sys.executable, "-c", LOCK_DELETER, str(qdir / "lookups" / "sessions.lock")])
    try:
        processes = [subprocess.Popen(party_cmd("lookup", "--dir", str(qdir), *server.flags(), "--holder", hname,
                                                "--input", str(tmp_path / f"one{index}.csv"), "--id-column", "hcn",
                                                "--out", str(tmp_path / f"one{index}.out.csv"), "--scheme", "ristretto",
                                                "--population", str(POPULATION), "--quiet"),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for index in clis]
        party = Party(qdir, progress=False)
        with ThreadPoolExecutor(len(picks) - len(clis)) as pool:
            found = list(pool.map(lambda frame: party.lookup(hname, frame, "hcn", POPULATION, scheme="ristretto",
                                                             timeout=120), picks[len(clis):]))
        for process in processes:
            _, stderr = process.communicate(timeout=180)
            assert process.returncode == 0, stderr
        deleter.terminate()
        deleter.wait(timeout=10)
        sessions = {result.report["session_id"] for result in found}
        for index in clis:
            out = pd.read_csv(tmp_path / f"one{index}.out.csv", dtype=str, keep_default_na=False)
            assert out["matched"].tolist() == [str(expected[picks[index]["hcn"].iloc[0]])]
        for frame, result in zip(picks[len(clis):], found):
            assert result.frame["matched"].tolist() == [expected[frame["hcn"].iloc[0]]]
        assert any(expected[frame["hcn"].iloc[0]] for frame in picks) and not all(expected.values())
        assert len(sessions) == 1
        assert _audit(server).count("open_session") == 1
        listed = _listed(qdir, server)
        assert len(listed) == 1 and listed[0][0] in sessions and listed[0][1:4] == [hname, "lookup", "16"]
        assert listed[0][6] == "open"                                   # as the key holder sees it

        # Another bucket count (another risk threshold) needs another session: the old one is retired
        # and, unused, closed at K at once; the list shows the new one only.
        other = party.lookup(hname, picks[2], "hcn", POPULATION, max_risk=0.1, scheme="ristretto", timeout=120)
        assert other.report["buckets"] != found[0].report["buckets"]
        assert other.report["session_id"] not in sessions
        actions = _audit(server)
        assert actions.count("open_session") == 2 and actions.count("close_session") == 1
        listed = _listed(qdir, server)
        assert [row[0] for row in listed] == [other.report["session_id"]] and listed[0][6] == "open"
        closed = run_party("sessions", "close", "--dir", str(qdir), *server.flags(), "--all").stdout
        assert "closed 1 session(s)" in closed and _listed(qdir, server) == []
        usage = run_party("hold", "--help").stdout                         # the serving model is stated
        assert f"({LOOKUP_LANE} at once)" in " ".join(usage.split()) and "--lookup-memory" in usage
    finally:
        deleter.kill()
        deleter.wait(timeout=10)
        hold.send_signal(signal.SIGINT)
        hold.wait(timeout=30)


def test_many_parties_lookups_are_served_at_once(fresh_keyholder, tmp_path):
    """8 parties each look one record up at once in a 20,000-row holder: all correct, served
    concurrently (more than the old two-round lane), the slowest well under the serial time."""
    server = fresh_keyholder()
    *queriers, (hdir, hname) = make_parties(server, tmp_path, 10, cli=False)
    querier, holder = tables(12, n=40, m=20_000, overlap=20)
    expected = _expected(querier, holder)
    serving = Party(hdir, progress=False).prepare_holder(holder, "health_no", [])
    in_flight, peak, lock = [0], [0], threading.Lock()
    process = serving.process

    def counted(item):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        try:
            time.sleep(0.2)             # each round holds the holder a little: concurrency becomes visible
            return process(item)
        finally:
            with lock:
                in_flight[0] -= 1
    serving.process = counted
    stop = threading.Event()
    thread = threading.Thread(target=serving.serve, kwargs={"once": False, "poll_seconds": 0.5,
                                                            "stop": stop.is_set}, daemon=True)
    thread.start()

    def lookup(index: int) -> tuple[float, bool]:
        frame = querier.iloc[[4 + index]]
        started = time.perf_counter()
        result = Party(queriers[index][0], progress=False).lookup(hname, frame, "hcn", POPULATION, scheme="ristretto",
                                                                  timeout=120)
        return time.perf_counter() - started, result.frame["matched"].tolist() == [expected[frame["hcn"].iloc[0]]]
    try:
        solo, correct = lookup(8)                       # a ninth party alone: a session, an index, a round
        assert correct
        with ThreadPoolExecutor(8) as pool:
            timed = list(pool.map(lookup, range(8)))
    finally:
        stop.set()
        thread.join(timeout=30)
        serving.connection.close()
    slowest = max(seconds for seconds, _ in timed)
    print(f"solo {solo:.2f} s; 8 at once: slowest {slowest:.2f} s; peak rounds in flight {peak[0]}; "
          f"load {os.getloadavg()[0]:.1f}")
    assert all(ok for _, ok in timed)
    assert peak[0] >= 4
    assert slowest < 8 * solo / 2, (solo, [seconds for seconds, _ in timed])


def test_a_new_sessions_index_over_a_million_rows_is_built_in_one_pass():
    """The bucket index for a new lookup session over 1,000,000 rows: one vectorized pass over the
    digests computed once per table (measured; the bound is generous)."""
    values = [str(v) for v in np.random.default_rng(5).integers(10 ** 9, 10 ** 10, 1_000_000)]
    data = HolderData(pd.DataFrame({"id": values}), HolderKeys(["id"], [values], "exact/id/identifier"), [])
    started = time.perf_counter()
    data.lookup_words()
    digests = time.perf_counter() - started
    builds = []
    for _ in range(3):
        started = time.perf_counter()
        buckets = bucket_index(data, os.urandom(32), 500_000)
        builds.append(time.perf_counter() - started)
    print(f"digests once: {digests:.2f} s; index per new session: {', '.join(f'{b:.3f}' for b in builds)} s "
          f"(load {os.getloadavg()[0]:.1f})")
    assert len(buckets) == 1_000_000 and int(buckets.max()) < 500_000
    assert min(builds) < 2.0


def test_session_indexes_are_kept_per_session_within_the_memory_budget():
    """Built once per session even when rounds ask at once; builds of different sessions overlap;
    expired sessions and, over the budget, the least recently used leave."""
    words = np.arange(20_000, dtype=np.uint64).reshape(2, 10_000)
    indexes = SessionIndexes(budget_bytes=3 * 40_000)             # three indexes of 10,000 uint32
    running, overlap, lock = [0], [0], threading.Lock()

    def build(secret: bytes):
        def run():
            with lock:
                running[0] += 1
                overlap[0] = max(overlap[0], running[0])
            time.sleep(0.3)
            with lock:
                running[0] -= 1
            return lookup_buckets(secret, words, 1000)
        return run
    secrets = {f"s{i}": os.urandom(32) for i in range(4)}
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda sid: indexes.get(sid, 1000, build(secrets[sid])), ["s0", "s0", "s1", "s1", "s2", "s0"]))
    assert indexes.builds == 3 and overlap[0] >= 2                   # one build per session, in parallel
    for used in ("s1", "s2", "s0"):                                   # used in this order: s1 is the oldest
        indexes.get(used, 1000, build(secrets[used]))
    assert indexes.builds == 3
    indexes.get("s3", 1000, build(secrets["s3"]))
    assert "s1" not in indexes and all(s in indexes for s in ("s0", "s2", "s3"))
    assert indexes.bytes <= 3 * 40_000
    indexes.get("gone", 1000, build(os.urandom(32)), expires_at=time.time() - 1)
    indexes.get("s4", 1000, build(os.urandom(32)))
    assert "gone" not in indexes


def test_a_damaged_lookup_registry_is_named_in_one_line_and_its_sessions_still_close(fresh_keyholder, tmp_path):
    """A corrupted ``lookups/sessions.json`` made ``party lookup``, ``party sessions list`` and ``party
    sessions close --all`` end in a traceback, so the party could not close its sessions.  Now each says in
    one line what is damaged and what to do; ``close --all`` closes at K the sessions the file still names
    and sets it aside, and the next lookup starts a new registry."""
    server = fresh_keyholder()
    (qdir, _), (hdir, hname) = make_party(server, tmp_path, cli=False), make_party(server, tmp_path, cli=False)
    querier, holder = tables(12, n=10, m=60, overlap=5)
    holder.to_csv(tmp_path / "h.csv", index=False)
    querier.head(1).to_csv(tmp_path / "one.csv", index=False)
    hold = subprocess.Popen(party_cmd("hold", "--dir", str(hdir), *server.flags(), "--input", str(tmp_path / "h.csv"),
                                      "--id-column", "health_no", "--poll-seconds", "1", "--quiet"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lookup = ("lookup", "--dir", str(qdir), *server.flags(), "--holder", hname, "--input", str(tmp_path / "one.csv"),
              "--id-column", "hcn", "--out", str(tmp_path / "one.out.csv"), "--scheme", "ristretto",
              "--population", str(POPULATION), "--quiet")
    try:
        run_party(*lookup)
        [session_id] = [row[0] for row in _listed(qdir, server)]
        registry = qdir / "lookups" / "sessions.json"
        registry.write_text(registry.read_text()[: len(registry.read_text()) // 2])      # cut off mid-write
        for command in (lookup, ("sessions", "list", "--dir", str(qdir), *server.flags())):
            failed = run_party(*command, check=False)
            assert failed.returncode == 2 and len(failed.stderr.strip().splitlines()) == 1, failed.stderr
            assert "sessions.json is damaged" in failed.stderr and "party sessions close --all" in failed.stderr
            assert "Traceback" not in failed.stderr
        closed = run_party("sessions", "close", "--dir", str(qdir), *server.flags(), "--all").stdout
        assert session_id in closed and "closed 1 session(s)" in closed
        assert "close_session" in _audit(server)
        assert (qdir / "lookups" / "sessions.json.damaged").exists() and not registry.exists()
        run_party(*lookup)                                                  # a new registry, a new session
        assert [row[0] for row in _listed(qdir, server)] != [session_id]
    finally:
        hold.terminate()
        hold.wait(timeout=30)
