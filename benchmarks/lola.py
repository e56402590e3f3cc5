"""Benchmark (not a test): LOLA (El Emam et al. 2012, Heritage Health Prize) on the synthetic HHP-shaped claims table.

Level 1: sex (flat), birth year (5, 10, 20 years); level 2: dx (ICD: 4 characters, 3-digit category,
chapter), length of stay (1, 2 weeks), days since first claim (1, 2, 4, 12 weeks). Criterion: risk
threshold 0.05, sampling fraction 1 (k = 20), MaxSup 0.8%, 10,000 attack targets per node.

  python -m benchmarks.lola [--persons 113000] [--power 5 10 15] [--iterations 10000] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from benchmarks.claims import generate
from deid_core.algorithm.lola import lola_release
from deid_core.longitudinal.dates import days_since_first
from deid_core.spec import parse_spec

LEVEL1 = ["sex", "birth_year"]
LEVEL2 = ["dx", "los", "dsfc"]


def spec(p_max: int):
    return parse_spec({
        "columns": {"member_id": "direct", **{q: "quasi" for q in LEVEL1 + LEVEL2}},
        "hierarchies": {"birth_year": {"builder": "interval", "widths": [5, 10, 20]}, "dx": {"builder": "icd"},
                        "los": {"builder": "interval", "widths": [7, 14]},
                        "dsfc": {"builder": "interval", "widths": [7, 14, 28, 84]}},
        "release": {"threshold": 0.05},
        "longitudinal": {"person": "member_id", "level1": LEVEL1, "level2": LEVEL2, "adversary_power": p_max},
    })


def run(persons: int, seed: int, powers: list[int], iterations: int) -> dict:
    t = time.perf_counter()
    df = generate(persons, seed)
    df["dsfc"] = days_since_first(df, person="member_id", date="admit_date").astype(str).astype(object)
    df = df[["member_id", *LEVEL1, *LEVEL2]]
    res: dict = {"persons": persons, "claims": len(df), "generate_s": round(time.perf_counter() - t, 1), "runs": {}}
    print(f"generated {len(df):,} claims for {persons:,} persons in {res['generate_s']} s", file=sys.stderr)
    for p in powers:
        t = time.perf_counter()
        found = lola_release(df, spec(p), iterations=iterations, seed=seed, progress=True)
        secs = time.perf_counter() - t
        r = found.search.to_dict()
        best = found.best or {}
        res["runs"][p] = {"seconds": round(secs, 1), "search_seconds": r["seconds"], "lattice_size": r["lattice_size"],
                          "nodes_evaluated": r["nodes_evaluated"], "minimal_nodes": r["minimal_nodes"],
                          "rejected_by_census": r["rejected_by_census"],
                          **{k: best.get(k) for k in ("levels", "risk", "high_risk_proportion", "suppressed_persons",
                                                       "suppressed_records", "suppressed_share", "information_loss",
                                                       "attack_average_risk", "attack_ci95")}}
        print(f"p_max {p}: {json.dumps(res['runs'][p])}", file=sys.stderr)
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--persons", type=int, default=113_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--power", type=int, nargs="+", default=[5])
    ap.add_argument("--iterations", type=int, default=10_000)
    ap.add_argument("--json", help="write the numbers as JSON")
    a = ap.parse_args(argv)
    res = run(a.persons, a.seed, a.power, a.iterations)
    text = json.dumps(res, indent=2)
    print(text)
    if a.json:
        Path(a.json).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
