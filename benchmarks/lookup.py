"""Single-record lookup latency against a large holder.

    python -m benchmarks.lookup [--rows 1000000] [--lookups 10] [--population 10000000]
                                [--max-risk 0.05] [--scheme paillier|ec] [--key-bits 2048]
                                [--no-release] [--json OUT]

The key holder runs as its own process (``keyholder serve --insecure``); the
holder is a ``Party.holder(...)`` object kept alive in this process, serving in
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
    parser.add_argument("--scheme", choices=("paillier", "ec", "ristretto"), default="paillier")
    parser.add_argument("--key-bits", type=int, default=2048,
                        help="Paillier key size (ignored with --scheme ec|ristretto)")
    parser.add_argument("--fast-blinding", action="store_true")
    parser.add_argument("--no-release", action="store_true", help="the holder releases no column")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile the holder's round processing over the lookups after the first")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args(argv)

    from party_client.api import Party
    from party_client.lookups import plan_buckets

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
        ids = np.unique(rng.integers(10 ** 9, 10 ** 10, size=int(args.rows * 1.01) + 100))
        ids = rng.permutation(ids)
        holder_ids = ids[:args.rows].astype(str)
        absent = ids[args.rows:].astype(str)
        frame = pd.DataFrame({"id": holder_ids, "age": (holder_ids.astype(np.int64) % 97)})
        t = time.perf_counter()
        holder = holder_party.holder(frame, "id", [] if args.no_release else ["age"],
                                     allow_fast_blinding=True)
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

        plan = plan_buckets(args.population, args.max_risk)
        results.update(buckets=plan.buckets, risk=round(plan.risk, 5),
                       rows_per_bucket=round(args.rows / plan.buckets, 2))
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
                                    fast_blinding=args.fast_blinding, scheme=args.scheme)
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
              f"{plan.buckets} buckets (risk {plan.risk:.4f}, ~{results['rows_per_bucket']} holder rows per bucket)")
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


if __name__ == "__main__":
    sys.exit(main())
