"""Insertion failure probability of the querier's cuckoo table (h = 2, expansion 2.4, stash 0).

    python -m benchmarks.cuckoo_failure [--n 1000 10000 100000] [--edges 200000000] [--json OUT]

Exact criterion: keys are the edges of a multigraph on the B bins (key k joins
its two positions; both positions equal is a self-loop).  A placement with one
key per bin exists iff every connected component has at most as many edges as
vertices (at most one cycle).  Many independent trials are packed into one
disjoint graph and solved with one ``scipy.sparse.csgraph.connected_components``
call (union-find in C), so millions of trials are cheap.  Positions are uniform
(``PRF_s(...) mod B`` in the product, bias < 2^-100).

``place()`` itself gives up after 1000 evictions (a random walk), so it may fail
where a placement exists: ``--check-place`` runs the product's ``place`` on the
first trials of each size and counts disagreements with the exact criterion.

Sizes: ``keys = n`` placed in ``B = bin_count(n)`` bins, which is what the product
does (B comes from the padded size, so the load is at most 1/2.4); with
``--padded`` the key count is the padded size itself (the worst load, 1/2.4).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from party_client.crypto.cuckoo import CuckooFailure, CuckooParams, bin_count, padded_size, place


def failing_trials(positions: np.ndarray, bins: int, stash: int = 0) -> np.ndarray:
    """Indices of the trials (first axis of ``positions``: trials x keys x h) with no placement.

    With ``stash`` slots a trial fails iff the components' excess edges (edges - vertices,
    summed over components with more edges than vertices) exceed the stash.  For h > 2 the
    positions would form a hypergraph; only h = 2 is handled.
    """
    trials, keys, h = positions.shape
    if h != 2:
        raise ValueError("the exact criterion is implemented for h = 2 only")
    offsets = (np.arange(trials, dtype=np.int64) * bins)[:, None]
    u = (positions[:, :, 0] + offsets).ravel()
    v = (positions[:, :, 1] + offsets).ravel()
    vertices = trials * bins
    graph = coo_matrix((np.ones(len(u), dtype=np.int8), (u, v)), shape=(vertices, vertices)).tocsr()
    count, labels = connected_components(graph, directed=False)
    excess = np.bincount(labels[u], minlength=count) - np.bincount(labels, minlength=count)
    bad = excess > 0
    if not bad.any():
        return np.empty(0, dtype=np.int64)
    component_trial = np.empty(count, dtype=np.int64)
    component_trial[labels] = np.arange(vertices, dtype=np.int64) // bins
    per_trial = np.bincount(component_trial[bad], weights=excess[bad], minlength=trials)
    return np.flatnonzero(per_trial > stash)


def wilson(failures: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson interval; with no failure the upper bound is the rule of three (3 / trials)."""
    if failures == 0:
        return 0.0, 3.0 / trials
    p = failures / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - half), centre + half


def measure(n: int, trials: int, params: CuckooParams, padded: bool, rng: np.random.Generator,
            batch_edges: int, check_place: int) -> dict:
    bins = bin_count(n, params)
    keys = padded_size(n) if padded else n
    per_batch = max(1, batch_edges // keys)
    check_place = min(check_place, max(10, 2_000_000 // keys))
    failures, done, disagreements, place_failures, checked = 0, 0, 0, 0, 0
    started = time.perf_counter()
    while done < trials:
        t = min(per_batch, trials - done)
        positions = rng.integers(0, bins, size=(t, keys, params.hash_functions), dtype=np.int64)
        failed = set(failing_trials(positions, bins, params.stash).tolist())
        failures += len(failed)
        for i in range(min(t, check_place - checked)):
            try:
                place(positions[i].tolist(), bins, params.stash)
                ok = True
            except CuckooFailure:
                ok = False
                place_failures += 1
            disagreements += ok == (i in failed)
            checked += 1
        done += t
    low, high = wilson(failures, trials)
    return {"n": n, "keys": keys, "bins": bins, "load": round(keys / bins, 4), "trials": trials,
            "failures": failures, "rate": failures / trials, "ci95": [low, high],
            "n_times_rate": round(n * failures / trials, 3),
            "place_checked": checked, "place_failures": place_failures, "place_disagreements": disagreements,
            "seconds": round(time.perf_counter() - started, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cuckoo_failure", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--edges", type=float, default=2e8,
                        help="keys placed in total per size (trials = edges / keys, at least --min-trials)")
    parser.add_argument("--min-trials", type=int, default=1000)
    parser.add_argument("--batch-edges", type=float, default=4e6, help="keys per connected_components call")
    parser.add_argument("--check-place", type=int, default=200,
                        help="trials per size also run through party_client.crypto.cuckoo.place")
    parser.add_argument("--padded", action="store_true", help="place padded_size(n) keys (worst load)")
    parser.add_argument("--expansion", type=float, default=2.4, help="bins per padded key (product: 2.4)")
    parser.add_argument("--stash", type=int, default=0, help="stash slots (product default: 0)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    params = CuckooParams(expansion=args.expansion, stash=args.stash)  # product: h = 2, 2.4, stash 0
    rng = np.random.default_rng(args.seed)
    rows = []
    print(f"h={params.hash_functions}, expansion={params.expansion}, stash={params.stash}")
    print(f"{'n':>8} {'keys':>8} {'bins':>8} {'load':>6} {'trials':>9} {'fails':>6} {'rate':>10} "
          f"{'95% CI':>23} {'n*rate':>7} {'place fails/checked':>20} {'s':>6}")
    for n in args.n:
        keys = padded_size(n) if args.padded else n
        trials = max(args.min_trials, int(args.edges // keys))
        row = measure(n, trials, params, args.padded, rng, int(args.batch_edges), args.check_place)
        rows.append(row)
        low, high = row["ci95"]
        print(f"{row['n']:>8} {row['keys']:>8} {row['bins']:>8} {row['load']:>6} {row['trials']:>9} "
              f"{row['failures']:>6} {row['rate']:>10.2e} [{low:.2e}, {high:.2e}] {row['n_times_rate']:>7} "
              f"{row['place_failures']:>9}/{row['place_checked']:<4} ({row['place_disagreements']} differ) "
              f"{row['seconds']:>6}", flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"params": {"hash_functions": params.hash_functions, "expansion": params.expansion,
                              "stash": params.stash}, "padded": args.padded, "rows": rows}, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
