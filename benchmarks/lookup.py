"""Single-record lookup latency against a large holder, and a lookup desk under load.

    python -m benchmarks.lookup [--rows 1000000] [--lookups 10] [--population 10000000]
                                [--max-risk 0.05] [--scheme paillier|ristretto] [--key-bits 2048]
                                [--no-release] [--json OUT]
    python -m benchmarks.lookup --desk [--rows 1000000] [--parties 64] [--rate 20] [--seconds 60]
                                [--clerks 8] [--workers 4] [--scheme ristretto] [--hostile [--churn-bits 4096]]
                                [--json OUT]

``--desk``: the holder is a real ``party hold`` process; the queriers are real parties run from
``--workers`` processes (threads within each).  First the index build for a new session over
the holder's rows is timed in this process (the digests, once per table, then one vectorized
pass per session).  Then a burst: ``--parties`` parties each look one record up at the same moment
(each opens its own lookup session: the holder builds one index per party).  Then a steady desk
load: ``--rate`` lookups per second for ``--seconds`` from ``--clerks`` parties (a party's
lookups share its session).  ``--hostile``: meanwhile a third party sends calls with a wrong token
(about 50 a second), churns ``--churn-bits`` Paillier sessions four at a time and holds 32 query uploads to
the holder begun and never finished
(``benchmarks.keyholder_contention``'s hostile party).  Every answer is checked; p50/p95 are end-to-end ``Party.lookup``
times; the load average is printed with them (the machine may be shared).

Without ``--desk``:
The key holder runs as its own process (``keyholder serve --insecure``); the
holder is a ``Party.prepare_holder(...)`` object kept alive in this process, serving in
a thread (``serve(once=False, stop=...)``); the querier calls ``Party.lookup``
with one identifier at a time (half of them present at the holder).  The first
lookup opens the lookup session (K generates its key) and makes the holder
build its bucket index (one keyed encoding + bucket per row); the following
lookups reuse the session and the index, as the product intends.  Each lookup is
timed end to end (``Party.lookup`` call: connect, encode, encrypt, relay, holder
plan + compare + zero test, fetch), and the querier's phases are kept.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.exact_join import code_version, start_keyholder

log = logging.getLogger("party")


class Timed(logging.Handler):
    """Collect the holder's per-round log lines (rows compared in X s)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lookup", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--lookups", type=int, default=10, help="timed lookups after the first")
    parser.add_argument("--population", type=int, default=10_000_000)
    parser.add_argument("--max-risk", type=float, default=0.05)
    parser.add_argument("--scheme", choices=("paillier", "ristretto"), default="paillier")
    parser.add_argument("--key-bits", type=int, default=2048,
                        help="Paillier key size (ignored with --scheme ristretto)")
    parser.add_argument("--no-release", action="store_true", help="the holder releases no column")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile the holder's round processing over the lookups after the first; with "
                             "--desk: the CPU time of every role's functions during the burst (yappi, "
                             "installed by hand), written to --profile-dir and summed up")
    parser.add_argument("--profile-dir", default="desk-profile", help="--desk --profile: where the profiles go")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument("--desk", action="store_true", help="the desk benchmark (see above)")
    parser.add_argument("--parties", type=int, default=64, help="--desk: parties in the burst")
    parser.add_argument("--rate", type=float, default=20.0, help="--desk: steady lookups per second")
    parser.add_argument("--seconds", type=float, default=60.0, help="--desk: length of the steady load")
    parser.add_argument("--clerks", type=int, default=8, help="--desk: parties sharing the steady load")
    parser.add_argument("--workers", type=int, default=4, help="--desk: querier processes")
    parser.add_argument("--hostile", action="store_true",
                        help="--desk: a third party sends wrong tokens and churns sessions during burst and steady load")
    parser.add_argument("--churn-bits", type=int, default=4096, help="--hostile: the churned sessions' Paillier key size")
    parser.add_argument("--stalled", type=int, default=32,
                        help="--hostile: query uploads begun to the holder and never finished")
    args = parser.parse_args(argv)
    if args.desk:
        return desk(args)

    from party_client.api import Party

    handler = Timed()
    logging.getLogger("party").addHandler(handler)
    logging.getLogger("party").setLevel(logging.INFO)
    work = Path(tempfile.mkdtemp(prefix="bench-lookup-"))
    results: dict = {"rows": args.rows, "population": args.population, "max_risk": args.max_risk,
                     "scheme": args.scheme, "key_bits": args.key_bits, "release": not args.no_release, "cores": os.cpu_count(),
                     "load_before": os.getloadavg(), "code": code_version()}
    kh = None
    stop = threading.Event()
    thread = None
    try:
        kh, address = start_keyholder(work, ["--insecure"])
        querier = Party.init(work / "q", "querier", progress=False)
        holder_party = Party.init(work / "h", "holder", progress=False)
        querier.register(address, insecure=True)
        holder_party.register(address, insecure=True)

        rng = np.random.default_rng(args.seed)
        holder_ids, absent = holder_and_absent_ids(args.rows, rng)
        frame = pd.DataFrame({"id": holder_ids, "age": (holder_ids.astype(np.int64) % 97)})
        t = time.perf_counter()
        holder = holder_party.prepare_holder(frame, "id", [] if args.no_release else ["age"])
        results["holder_load_s"] = round(time.perf_counter() - t, 2)
        print(f"holder: {args.rows} rows loaded in {results['holder_load_s']} s", file=sys.stderr, flush=True)
        served: list = []
        profiler = None
        if args.profile:
            import cProfile
            profiler = cProfile.Profile()
            process = holder.process
            profiled_rounds = [0]

            def profiled(item):
                profiled_rounds[0] += 1
                if profiled_rounds[0] == 1:  # the first round builds the index: not profiled
                    return process(item)
                profiler.enable()
                try:
                    return process(item)
                finally:
                    profiler.disable()
            holder.process = profiled

        def serve() -> None:
            served.append(holder.serve(once=False, poll_seconds=2.0, stop=stop.is_set))
        thread = threading.Thread(target=serve, name="holder", daemon=True)
        thread.start()

        plan = bucket_plan(args, len(holder_ids))
        results.update(buckets=plan.buckets, decided_by=plan.decided_by, risk=round(plan.risk, 5),
                       holder_risk=round(plan.holder_risk, 5), rows_per_bucket=round(args.rows / plan.buckets, 2))
        queries = []
        for i in range(args.lookups + 1):
            present = i % 2 == 0
            value = holder_ids[rng.integers(len(holder_ids))] if present else absent[i % len(absent)]
            queries.append((str(value), present))

        timings = []
        for i, (value, present) in enumerate(queries):
            mark = len(handler.lines)
            t = time.perf_counter()
            result = querier.lookup("holder", pd.DataFrame({"id": [value]}), "id", args.population,
                                    max_risk=args.max_risk,
                                    key_bits=None if args.scheme != "paillier" else args.key_bits,
                                    scheme=args.scheme)
            elapsed = time.perf_counter() - t
            matched = bool(result.frame["matched"].iloc[0])
            ok = matched == present
            if ok and present and "age" in result.frame.columns:  # lookup returns no payload today
                ok = int(result.frame["age"].iloc[0]) == int(value) % 97
            waited = time.monotonic() + 1.0  # the holder logs just after FinishRound
            while not any("rows compared" in line for line in handler.lines[mark:]) and time.monotonic() < waited:
                time.sleep(0.01)
            compared = next((line for line in handler.lines[mark:] if "rows compared" in line), "")
            entry = {"seconds": round(elapsed, 3), "present": present, "correct": ok,
                     "querier_phases": result.report["seconds"], "holder": compared.split(": ", 1)[-1],
                     "session_reused": result.report.get("session_reused")}
            timings.append(entry)
            label = "first (session + index)" if i == 0 else f"lookup {i}"
            print(f"  {label:24s} {elapsed:7.3f} s  {'hit ' if present else 'miss'} "
                  f"{'ok' if ok else 'WRONG'}  holder: {entry['holder']}", flush=True)
        steady = [e["seconds"] for e in timings[1:]]
        results.update(first_lookup_s=timings[0]["seconds"], lookups=timings,
                       lookup_median_s=round(statistics.median(steady), 3) if steady else None,
                       lookup_max_s=max(steady) if steady else None,
                       all_correct=all(e["correct"] for e in timings),
                       load_after=os.getloadavg())
        print("-" * 64)
        print(f"{args.scheme}: holder rows {args.rows}, population {args.population}, max risk {args.max_risk}: "
              f"{plan.buckets} buckets, decided by the {plan.decided_by} (risk {plan.risk:.4f} in the population, "
              f"{plan.holder_risk:.4f} among the holder's people; ~{results['rows_per_bucket']} holder rows per bucket)")
        print(f"holder load (normalize + payloads): {results['holder_load_s']} s")
        print(f"first lookup (K key + holder bucket index over all rows): {results['first_lookup_s']:.2f} s")
        if steady:
            print(f"single lookups after the index: median {results['lookup_median_s']:.3f} s, "
                  f"max {results['lookup_max_s']:.3f} s over {len(steady)}; "
                  f"{'all correct' if results['all_correct'] else 'SOME WRONG'}")
        print(f"load average before {results['load_before'][0]:.2f}, after {results['load_after'][0]:.2f}")
        if profiler is not None:
            import io
            import pstats
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(18)
            print(f"holder round processing, {len(steady)} lookups after the first (cProfile, cumulative):")
            print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[:6000])
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2, default=str))
        return 0 if results["all_correct"] else 1
    finally:
        stop.set()
        if thread is not None:
            thread.join(10)
        if kh is not None:
            kh.stop()
        shutil.rmtree(work, ignore_errors=True)


def holder_and_absent_ids(rows: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` distinct 10-digit ids for the holder and about 1 % more that it lacks."""
    ids = rng.permutation(np.unique(rng.integers(10 ** 9, 10 ** 10, size=int(rows * 1.01) + 100)))
    return ids[:rows].astype(str), ids[rows:].astype(str)


def percentile(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 3) if values else float("nan")


def index_build(holder_ids: np.ndarray, sessions: int = 3) -> dict:
    """The holder's lookup index for a new session over all rows, timed in this process."""
    from party_client.matching.keys import HolderKeys
    from party_client.protocol.engines.interface import HolderData
    from party_client.protocol.engines.lookup import bucket_index
    values = holder_ids.tolist()
    data = HolderData(pd.DataFrame({"id": values}), HolderKeys(["id"], [values], "exact/id/identifier"), [])
    started = time.perf_counter()
    data.lookup_words()
    digests = time.perf_counter() - started
    per_session = []
    for _ in range(sessions):
        started = time.perf_counter()
        bucket_index(data, os.urandom(32), 500_000)
        per_session.append(time.perf_counter() - started)
    return {"digests_once_s": round(digests, 3), "per_session_s": [round(t, 4) for t in per_session],
            "load": os.getloadavg()[0]}


def clerks(jobs: list[tuple], start_at: float, profile: str | None = None) -> list[dict]:
    """A querier process: each job ``(offset, party dir, holder, value, present, population, max_risk,
    scheme)`` starts ``offset`` seconds after ``start_at`` (wall clock) in a thread of its own."""
    from concurrent.futures import ThreadPoolExecutor

    from party_client.api import Party

    def one(job: tuple) -> dict:
        offset, folder, holder, value, present, population, max_risk, scheme = job
        started = time.perf_counter()
        try:
            found = Party(folder, progress=False).lookup(holder, pd.DataFrame({"id": [value]}), "id", population,
                                                         max_risk=max_risk, scheme=scheme, timeout=300)
            correct = bool(found.frame["matched"].iloc[0]) == present
            error, phases = "", found.report["seconds"]
        except Exception as failure:                       # counted as wrong, and said why
            correct, error, phases = False, f"{type(failure).__name__}: {failure}", {}
        return {"offset": offset, "seconds": time.perf_counter() - started, "correct": correct, "phases": phases,
                "late": max(0.0, time.time() - start_at - offset - (time.perf_counter() - started)),
                "error": error}
    futures = []
    if profile:
        import yappi
        yappi.set_clock_type("cpu")
        yappi.clear_stats()
        yappi.start(builtins=True, profile_threads=True)
    cpu = time.process_time()
    with ThreadPoolExecutor(max_workers=max(1, len(jobs))) as pool:
        for job in sorted(jobs):
            delay = start_at + job[0] - time.time()
            if delay > 0:
                time.sleep(delay)
            futures.append(pool.submit(one, job))
        done = [f.result() for f in futures]
    cpu = time.process_time() - cpu
    if profile:
        yappi.stop()
        yappi.get_func_stats().save(f"{profile}-{os.getpid()}.pstat", type="pstat")
    return done, cpu


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far (/proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _run_jobs(pool, jobs: list[tuple], workers: int, pids: dict[str, int],
              lead: float = 3.0, profile: str | None = None) -> tuple[list[dict], dict]:
    """Run the jobs over the worker processes; the results and the CPU seconds per lookup of the key
    holder, the holder and the queriers (a measure of capacity that a busy machine does not skew)."""
    start_at = time.time() + lead
    before = {name: process_cpu(pid) for name, pid in pids.items()}
    shares = [jobs[w::workers] for w in range(workers)]
    outcomes = [future.result() for future in [pool.submit(clerks, share, start_at, profile)
                                               for share in shares if share]]
    results = [r for done, _ in outcomes for r in done]
    cpu = {name: process_cpu(pid) - before[name] for name, pid in pids.items()}
    cpu["queriers"] = sum(seconds for _, seconds in outcomes)
    return results, {f"{name}_ms": round(1000 * seconds / max(1, len(results)), 1) for name, seconds in cpu.items()}


def _profiles_report(folder: Path, lookups: int, top: int = 30) -> None:
    """Per role (the querier processes summed): the functions with the most CPU time, own and
    inclusive, in milliseconds per lookup (yappi's statistics, in pstats form)."""
    import io
    import pstats
    for role in ("keyholder", "holder", "querier"):
        paths = sorted(str(p) for p in folder.glob(f"{role}*.pstat"))
        if not paths:
            continue
        stats = pstats.Stats(*paths, stream=io.StringIO())
        rows = [(tt, ct, nc, f"{Path(file).parent.name}/{Path(file).name}:{line} {name}")
                for (file, line, name), (_, nc, tt, ct, _) in stats.stats.items()]
        total = sum(r[0] for r in rows)
        per = 1000.0 / max(1, lookups)
        print(f"profile {role}: {total * per:.1f} ms CPU per lookup in Python threads ({len(paths)} file(s))")
        for title, key in (("own", 0), ("inclusive", 1)):
            print(f"  {title}:")
            for row in sorted(rows, key=lambda r: -r[key])[:top]:
                print(f"    {row[key] * per:8.2f} ms  {row[2] / max(1, lookups):8.1f}/lookup  {row[3][:140]}")


def _summary(results: list[dict]) -> dict:
    seconds = [r["seconds"] for r in results]
    return {"lookups": len(results), "all_correct": all(r["correct"] for r in results),
            "wrong": sum(not r["correct"] for r in results), "p50_s": percentile(seconds, 50),
            "p95_s": percentile(seconds, 95), "max_s": round(max(seconds), 3) if seconds else None,
            "errors": sorted({r["error"] for r in results if r["error"]})[:5], "load": os.getloadavg(),
            "round_phases_p50_s": {phase: percentile([r["phases"][phase] for r in results if phase in r["phases"]], 50)
                                   for phase in sorted({k for r in results for k in r["phases"]})}}


def bucket_plan(args, rows: int):
    """The buckets each lookup gets: the population's bound and the holder's, from the table size it
    announces (its people, one per row here, rounded down to the public step)."""
    from party_client.crypto.cuckoo import padded_floor
    from party_client.lookups import BucketSizing
    return BucketSizing(args.population, args.max_risk).plan(padded_floor(rows))


def desk(args) -> int:
    """The desk benchmark: index build, a burst of parties, a steady rate (module docstring)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from benchmarks.exact_join import PYTHON, Child
    from party_client.api import Party

    work = Path(tempfile.mkdtemp(prefix="bench-desk-"))
    rng = np.random.default_rng(args.seed)
    holder_ids, absent = holder_and_absent_ids(args.rows, rng)
    results: dict = {"rows": args.rows, "population": args.population, "max_risk": args.max_risk,
                     "scheme": args.scheme, "cores": os.cpu_count(), "load_before": os.getloadavg(),
                     "code": code_version()}
    results["index_build"] = index_build(holder_ids)
    build = results["index_build"]
    print(f"index for a new session over {args.rows} rows: {', '.join(f'{t:.3f}' for t in build['per_session_s'])} s "
          f"(digests once per table: {build['digests_once_s']:.2f} s; load {build['load']:.1f})", flush=True)
    kh = hold = None
    try:
        profiles = Path(args.profile_dir).resolve() if args.profile else None
        if profiles is not None:
            profiles.mkdir(parents=True, exist_ok=True)
            for old in profiles.glob("*.pstat"):
                old.unlink()
        def launcher(role: str) -> tuple[str, ...]:
            return ("-m",) if profiles is None else ("-m", "benchmarks.profiled", str(profiles / f"{role}.pstat"))
        kh, address = start_keyholder(work, ["--insecure"], launcher=launcher("keyholder"))
        holder_party = Party.init(work / "holder", "holder", progress=False)
        holder_party.register(address, insecure=True)
        count = args.parties + args.clerks
        folders = []
        for index in range(count):
            party = Party.init(work / f"q{index}", f"q{index}", progress=False)
            party.register(address, insecure=True)
            folders.append(str(party.dir.path))
        pd.DataFrame({"id": holder_ids}).to_csv(work / "holder.csv", index=False)
        hold = Child("holder", [PYTHON, *launcher("holder"), "party_client.cli", "--log-level", "INFO", "hold", "--dir",
                                str(work / "holder"), "--input", str(work / "holder.csv"), "--id-column", "id",
                                "--poll-seconds", "5", "--quiet"], work / "holder.log")
        deadline = time.monotonic() + 600
        while "waiting for queries" not in hold.text():
            if not hold.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"party hold did not start:\n{hold.text()}")
            time.sleep(0.2)
        time.sleep(2.0)                        # the digests for lookups are computed as serving starts
        results["buckets"] = bucket_plan(args, len(holder_ids)).buckets

        def job(offset: float, folder: str, index: int) -> tuple:
            present = index % 2 == 0
            value = str(holder_ids[rng.integers(len(holder_ids))] if present else absent[index % len(absent)])
            return (offset, folder, "holder", value, present, args.population, args.max_risk, args.scheme)
        loops = []
        if args.hostile:                       # a third party sending bad tokens and churning sessions throughout
            import grpc

            from benchmarks.keyholder_contention import hostile, token_of
            from proto import linkage_pb2_grpc as pb_grpc
            carol = Party.init(work / "carol", "carol", progress=False)
            carol.register(address, insecure=True)
            loops = hostile(pb_grpc.KeyHolderStub(grpc.insecure_channel(address)), token_of(carol.dir.path), "holder",
                            args.churn_bits, args.stalled)
            results["hostile"] = {"churn_bits": args.churn_bits, "stalled_uploads": args.stalled}
            print(f"hostile: a third party sends wrong tokens (~50/s), churns {args.churn_bits}-bit sessions and "
                  f"holds {args.stalled} unfinished uploads to the holder throughout", flush=True)
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=args.workers, mp_context=context) as pool:
            list(pool.map(time.sleep, [0.0] * args.workers))                  # the workers' imports, untimed
            pids = {"keyholder": kh.proc.pid, "holder": hold.proc.pid}
            if profiles is not None:
                for pid in pids.values():
                    os.kill(pid, signal.SIGUSR1)
            burst, cpu = _run_jobs(pool, [job(0.0, folders[i], i) for i in range(args.parties)], args.workers, pids,
                                   profile=str(profiles / "querier") if profiles else None)
            if profiles is not None:
                for pid in pids.values():
                    os.kill(pid, signal.SIGUSR2)
                time.sleep(3.0)
                _profiles_report(profiles, args.parties)
            results["burst"] = dict(_summary(burst), cpu_per_lookup=cpu)
            b = results["burst"]
            print(f"burst: {args.parties} parties x 1 lookup at once ({args.rows} rows, {args.scheme}): "
                  f"p50 {b['p50_s']:.2f} s, p95 {b['p95_s']:.2f} s, max {b['max_s']:.2f} s; "
                  f"{'all correct' if b['all_correct'] else str(b['wrong']) + ' WRONG'}; "
                  f"load {b['load'][0]:.1f}", flush=True)
            print(f"  round phases (p50, s): {b['round_phases_p50_s']}; CPU per lookup: {b['cpu_per_lookup']}",
                  flush=True)
            steady_jobs = [job(i / args.rate, folders[args.parties + i % args.clerks], i)
                           for i in range(int(args.rate * args.seconds))]
            steady, cpu = _run_jobs(pool, steady_jobs, args.workers, pids)
            results["steady"] = dict(_summary(steady), cpu_per_lookup=cpu)
            results["steady"]["started_late_p95_s"] = percentile([r["late"] for r in steady], 95)
            st = results["steady"]
            print(f"steady: {args.rate:g} lookups/s for {args.seconds:g} s from {args.clerks} parties: "
                  f"p50 {st['p50_s']:.2f} s, p95 {st['p95_s']:.2f} s, max {st['max_s']:.2f} s; "
                  f"{'all correct' if st['all_correct'] else str(st['wrong']) + ' WRONG'}; load {st['load'][0]:.1f}",
                  flush=True)
            print(f"  round phases (p50, s): {st['round_phases_p50_s']}; CPU per lookup: {st['cpu_per_lookup']}",
                  flush=True)
        if loops:
            results["hostile"]["calls"] = counts = {}
            for loop in loops:
                for name, n in loop.halt().items():
                    counts[name] = counts.get(name, 0) + n
            print(f"hostile party's calls by outcome: {counts}", flush=True)
        results["load_after"] = os.getloadavg()
        for kind in ("burst", "steady"):
            if results[kind]["errors"]:
                print(f"{kind} errors: {results[kind]['errors']}")
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2, default=str))
        return 0 if results["burst"]["all_correct"] and results["steady"]["all_correct"] else 1
    finally:
        if hold is not None:
            hold.stop()
        if kh is not None:
            kh.stop()
        if os.environ.get("KEEP_BENCH_DIR") is None:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work}")


if __name__ == "__main__":
    sys.exit(main())
