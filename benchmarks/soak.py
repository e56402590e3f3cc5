"""Soak / load: many queriers against one holder through a real key holder, for a bounded time.

    python -m benchmarks.soak [--minutes 10] [--parties 8] [--lookups 64] [--joins 4] [--rows 2000]
                              [--key-bits 1024] [--concurrency 2] [--json OUT]

What runs (loopback only; everything stops by itself after ``--minutes`` plus the rounds in flight):

1. a development PKI (``keyholder pki init``) and ``keyholder serve`` with mTLS on a free loopback
   port, ``--min-key-bits 1024`` like the other benchmarks (the key size is printed);
2. a holder party serving ``--rows`` synthetic 10-digit ids (releasing ``age``, derived from the id)
   with the real CLI ``party hold --concurrency N`` (its own process, polling);
3. ``--parties`` querier parties (``party init``, ``keyholder pki issue``, register), and in this
   process ``--lookups`` lookup workers spread round-robin over them (at most 16 long-polls per party
   at K, so 8 per party stays under the cap) and ``--joins`` join workers (one per party: a join
   resumes by its inputs' fingerprint, so two concurrent joins of one party would share state);
4. each lookup worker keeps its own lookup session (the product's ``Querier`` with a fixed bucket
   secret, as ``Party.lookup`` does) and opens a fresh one before K's 64-round cap; each lookup is
   one identifier, present at the holder or not with even odds; each join worker runs
   ``Party.join`` of 100 ids (half present) over and over;
5. every result is checked exactly (lookups: matched or not; joins: the matched rows and the
   released ``age``).

Reported: operations, success rate and p50/p95/p99 latency per kind, errors by message, K's
VmRSS and open file descriptors (``/proc/PID/status``, ``/proc/PID/fd``) at start, every 30 s and
at the end, and K's spool (files, bytes) at the end (it should be empty: every query acknowledged).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.exact_join import PYTHON, Child, code_version, start_keyholder, run

LOOKUP_ROUNDS_PER_SESSION = 60          # below K's default cap of 64 rounds per session
JOIN_RECORDS = 100
SAMPLE_SECONDS = 30.0


def process_facts(pid: int) -> dict:
    """VmRSS (MiB) and open file descriptors of a live process."""
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kib = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
    return {"rss_mib": round(rss_kib / 1024, 1), "open_fds": len(os.listdir(f"/proc/{pid}/fd"))}


def spool_facts(spool: Path) -> dict:
    files = [p for p in spool.rglob("*") if p.is_file()] if spool.exists() else []
    return {"files": len(files), "bytes": sum(p.stat().st_size for p in files)}


def percentiles(values: list[float]) -> dict:
    if not values:
        return {"p50": None, "p95": None, "p99": None}
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return {"p50": round(float(p50), 3), "p95": round(float(p95), 3), "p99": round(float(p99), 3)}


class Tally:
    """Per-kind latencies and errors, shared by the worker threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ok: dict[str, list[float]] = {"lookup": [], "join": []}
        self.failed: dict[str, Counter] = {"lookup": Counter(), "join": Counter()}

    def add(self, kind: str, seconds: float, error: str | None) -> None:
        with self.lock:
            if error is None:
                self.ok[kind].append(seconds)
            else:
                self.failed[kind][error[:160]] += 1


def lookup_worker(party, holder: str, ids: list[str], present: set[str], buckets: int, key_bits: int,
                  deadline: float, tally: Tally, seed: int) -> None:
    """Single-record lookups until the deadline, in this worker's own lookup sessions."""
    from party_client.api import assemble
    from party_client.matching.keys import exact_querier_keys
    from party_client.protocol.engines.interface import QueryOptions
    from party_client.protocol.querier import Querier
    from party_client.waiting import Notice
    rng = random.Random(seed)
    options = QueryOptions(key_bits=key_bits, lookup_buckets=buckets, timeout=300.0, progress=False)
    with party.connect() as connection:
        connection.notice = Notice(sink=lambda text: None)     # 64 workers' wait notices: the soak reports instead
        querier = Querier(connection, party.dir)
        session, secret, rounds = None, b"", 0
        while time.monotonic() < deadline:
            value = rng.choice(ids)
            frame = pd.DataFrame({"id": [value]})
            keys = exact_querier_keys(frame["id"], "identifier")
            started = time.perf_counter()
            try:
                if session is None or rounds >= LOOKUP_ROUNDS_PER_SESSION:
                    if session is not None:
                        querier.close(session.session_id)
                    session = querier.open_session("lookup", holder, options, ttl=3600, keys=keys)
                    secret, rounds = os.urandom(32), 0
                rounds += 1
                outcome = querier.run(session, keys, options, lookup_secret=secret)
                matched = bool(assemble(frame, keys, outcome, "matched", with_payload=False)["matched"].iloc[0])
                error = None if matched == (value in present) else "WRONG RESULT"
            except Exception as problem:  # noqa: BLE001 - counted and reported by message
                error, session = f"{type(problem).__name__}: {problem}", None
            tally.add("lookup", time.perf_counter() - started, error)
        if session is not None:
            querier.close(session.session_id)


def join_worker(party, holder: str, ids: list[str], present: set[str], key_bits: int,
                deadline: float, tally: Tally, seed: int) -> None:
    """Joins of ``JOIN_RECORDS`` ids (about half present) until the deadline."""
    rng = random.Random(seed)
    inside, outside = sorted(present), sorted(set(ids) - present)
    while time.monotonic() < deadline:
        chosen = rng.sample(inside, JOIN_RECORDS // 2) + rng.sample(outside, JOIN_RECORDS - JOIN_RECORDS // 2)
        frame = pd.DataFrame({"id": chosen})
        started = time.perf_counter()
        try:
            result = party.join(holder, frame, id_column="id", key_bits=key_bits, timeout=600.0).frame
            hits = result[result["matched"]]
            right = (sorted(hits["id"]) == sorted(v for v in chosen if v in present)
                     and all(str(a) == str(int(v) % 97) for v, a in zip(hits["id"], hits["age"])))
            error = None if right else "WRONG RESULT"
        except Exception as problem:  # noqa: BLE001
            error = f"{type(problem).__name__}: {problem}"
        tally.add("join", time.perf_counter() - started, error)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0, help="how long new operations are started")
    parser.add_argument("--parties", type=int, default=8, help="querier parties")
    parser.add_argument("--lookups", type=int, default=64, help="concurrent lookup workers")
    parser.add_argument("--joins", type=int, default=4, help="concurrent join workers (at most --parties)")
    parser.add_argument("--rows", type=int, default=2000, help="holder rows")
    parser.add_argument("--key-bits", type=int, default=1024, help="session keys (K runs --min-key-bits 1024)")
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 1, help="party hold --concurrency")
    parser.add_argument("--population", type=int, default=100_000, help="lookup bucket plan")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    if not 1 <= args.joins <= args.parties or args.lookups < 0 or args.minutes <= 0:
        parser.error("need 1 <= --joins <= --parties, --lookups >= 0 and --minutes > 0")

    from party_client.api import Party
    from party_client.crypto.cuckoo import padded_floor
    from party_client.lookups import BucketSizing

    work = Path(tempfile.mkdtemp(prefix="bench-soak-"))
    results: dict = {"minutes": args.minutes, "parties": args.parties, "lookup_workers": args.lookups,
                     "join_workers": args.joins, "holder_rows": args.rows, "key_bits": args.key_bits,
                     "holder_concurrency": args.concurrency, "cores": os.cpu_count(),
                     "load_before": os.getloadavg(), "code": code_version(), "transport": "mTLS, loopback"}
    kh = hold = None
    try:
        tls = work / "tls"
        run([PYTHON, "-m", "keyholder.cli", "pki", "init", "--tls-dir", str(tls)])
        kh, address = start_keyholder(work, ["--tls-dir", str(tls)])

        def party(name: str):
            folder = work / name
            Party.init(folder, name, progress=False)
            run([PYTHON, "-m", "keyholder.cli", "pki", "issue", "--tls-dir", str(tls), "--name", name,
                 "--out", str(folder / "tls")])
            made = Party(folder, progress=False, insecure=False)
            made.register(address, insecure=False)
            return made
        party("registry")                                 # the holder: serves through `party hold` below
        queriers = [party(f"site{i}") for i in range(args.parties)]

        rng = np.random.default_rng(args.seed)
        ids = np.unique(rng.integers(10 ** 9, 10 ** 10, size=2 * args.rows + 64))
        ids = rng.permutation(ids)[:2 * args.rows].astype(str).tolist()
        present = set(ids[:args.rows])
        table = work / "registry.csv"
        pd.DataFrame({"id": ids[:args.rows], "age": [int(v) % 97 for v in ids[:args.rows]]}).to_csv(table,
                                                                                                    index=False)
        hold = Child("holder", [PYTHON, "-m", "party_client.cli", "hold", "--dir", str(work / "registry"),
                                "--keyholder", address, "--input", str(table), "--id-column", "id",
                                "--release-columns", "age", "--poll-seconds", "5", "--quiet",
                                "--concurrency", str(args.concurrency)], work / "holder.log")
        while "waiting for queries" not in hold.text():
            if not hold.alive():
                raise RuntimeError(hold.text())
            time.sleep(0.1)

        plan = BucketSizing(args.population, 0.05).plan(padded_floor(args.rows))   # what each Party.lookup plans
        results["lookup_buckets"] = plan.buckets
        samples = [{"t": 0.0, **process_facts(kh.proc.pid)}]
        results["keyholder_start"] = samples[0]
        tally = Tally()
        started = time.monotonic()
        deadline = started + args.minutes * 60
        threads = [threading.Thread(target=lookup_worker, name=f"lookup-{i}", daemon=True, args=(
            queriers[i % args.parties], "registry", ids, present, plan.buckets, args.key_bits, deadline, tally,
            args.seed * 1000 + i)) for i in range(args.lookups)]
        threads += [threading.Thread(target=join_worker, name=f"join-{i}", daemon=True, args=(
            queriers[i], "registry", ids, present, args.key_bits, deadline, tally, args.seed * 2000 + i))
            for i in range(args.joins)]
        for thread in threads:
            thread.start()
        print(f"soak: {args.lookups} lookup + {args.joins} join workers over {args.parties} parties for "
              f"{args.minutes:g} min ({args.key_bits}-bit keys, holder --concurrency {args.concurrency})",
              file=sys.stderr, flush=True)
        while any(t.is_alive() for t in threads):
            for thread in threads:
                thread.join(timeout=max(0.1, SAMPLE_SECONDS / len(threads)))
            now = time.monotonic() - started
            if now - samples[-1]["t"] >= SAMPLE_SECONDS:
                samples.append({"t": round(now, 1), **process_facts(kh.proc.pid)})
                with tally.lock:
                    done = {k: len(v) for k, v in tally.ok.items()}
                    bad = {k: sum(c.values()) for k, c in tally.failed.items()}
                print(f"soak: {now:6.0f} s  ok {done}  failed {bad}  K rss {samples[-1]['rss_mib']} MiB "
                      f"fds {samples[-1]['open_fds']}", file=sys.stderr, flush=True)
            if now > args.minutes * 60 + 900:
                raise RuntimeError("workers still running 15 min after the deadline")
        results["wall_seconds"] = round(time.monotonic() - started, 1)
        time.sleep(2.0)                                   # the last acknowledgements reach K
        results["keyholder_end"] = process_facts(kh.proc.pid)
        results["keyholder_samples"] = samples
        results["spool_end"] = spool_facts(work / "keyholder" / "spool")
        for kind in ("lookup", "join"):
            ok, failed = tally.ok[kind], tally.failed[kind]
            total = len(ok) + sum(failed.values())
            results[kind] = {"operations": total, "succeeded": len(ok),
                             "success_rate": round(len(ok) / total, 4) if total else None,
                             "per_minute": round(total / (results["wall_seconds"] / 60), 1),
                             **percentiles(ok), "errors": dict(failed)}
        hold.stop()
        results["holder_rounds_served"] = sum(1 for line in hold.text().splitlines() if line.startswith("{"))
        results["load_after"] = os.getloadavg()
        print_results(results)
        print(json.dumps(results, default=str))
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2, default=str))
        return 0 if all(results[k]["success_rate"] == 1.0 for k in ("lookup", "join")
                        if results[k]["operations"]) else 1
    finally:
        for child in (hold, kh):
            if child is not None:
                child.stop()
        import shutil
        shutil.rmtree(work, ignore_errors=True)


def print_results(r: dict) -> None:
    print(f"soak {r['minutes']:g} min ({r['wall_seconds']} s wall), {r['parties']} parties, {r['key_bits']}-bit "
          f"keys, holder {r['holder_rows']} rows --concurrency {r['holder_concurrency']}, {r['cores']} cores")
    print(f"{'kind':<8} {'ops':>6} {'ok %':>7} {'/min':>7} {'p50 s':>7} {'p95 s':>7} {'p99 s':>7}")
    for kind in ("lookup", "join"):
        k = r[kind]
        rate = "-" if k["success_rate"] is None else f"{100 * k['success_rate']:.2f}"
        print(f"{kind:<8} {k['operations']:>6} {rate:>7} {k['per_minute']:>7} "
              + " ".join(f"{'-' if k[p] is None else k[p]:>7}" for p in ("p50", "p95", "p99")))
        for message, count in k["errors"].items():
            print(f"  {count} x {message}")
    s, e = r["keyholder_start"], r["keyholder_end"]
    print(f"K: RSS {s['rss_mib']} -> {e['rss_mib']} MiB, open fds {s['open_fds']} -> {e['open_fds']}; "
          f"spool at the end: {r['spool_end']['files']} files, {r['spool_end']['bytes']} bytes; "
          f"holder served {r['holder_rounds_served']} rounds")


if __name__ == "__main__":
    sys.exit(main())
