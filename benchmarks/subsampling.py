"""Benchmark (not a test): covering designs for El Emam & Arbuckle's Table 7-6 and subsampling on Adult.

Run once:  PYTHONPATH=. python -m benchmarks.subsampling [--improve-seconds 20] [--draws 100] [--json OUT]

* Table 7-6 (ch. 7, "Covering BORN"): for (15, k, t), t = 3, 5, 7, the book's printed number of blocks,
  the Schönheim lower bound, our greedy design and the greedy design after ``--improve-seconds`` of local
  search (every design checked to cover);
* ``deid subsample --find-fraction`` on Adult (30,162 records): time, the fraction found and the risk
  distribution at it; the average risk per fraction (the shape of the book's Figure 7-1);
* ``deid assess --known`` and ``deid search --method ola --known`` on Adult: time and blocks per design.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "deid_core"))

from deid_core.io import read_table  # noqa: E402
from deid_core.risk.covering import covering_design, is_covering  # noqa: E402
from deid_core.spec import parse_spec  # noqa: E402
from deid_testdata import ADULT, adult_spec_toml  # noqa: E402

#: Table 7-6 as printed: (k, t) -> blocks of a (15, k, t) covering design.
PRINTED = {(3, 3): 455, (4, 3): 124, (5, 3): 56, (6, 3): 31, (7, 3): 15, (8, 3): 13, (9, 3): 10, (10, 3): 7,
           (5, 5): 3003, (6, 5): 578, (7, 5): 189, (8, 5): 89, (9, 5): 42, (10, 5): 27,
           (7, 7): 6435, (8, 7): 871, (9, 7): 270, (10, 7): 108}


def designs(improve_seconds: float) -> list[dict]:
    rows = []
    for (k, t), printed in sorted(PRINTED.items(), key=lambda x: (x[0][1], x[0][0])):
        t0 = time.perf_counter()
        greedy = covering_design(15, k, t)
        t_greedy = time.perf_counter() - t0
        row = {"k": k, "t": t, "printed": printed, "schonheim": greedy.lower_bound, "greedy": len(greedy),
               "greedy_s": round(t_greedy, 3), "printed_below_bound": printed < greedy.lower_bound}
        if improve_seconds and k > t:
            better = covering_design(15, k, t, improve_seconds=improve_seconds)
            assert is_covering(better.blocks, 15, t)
            row["improved"] = len(better)
        rows.append(row)
        print(row, file=sys.stderr, flush=True)
    return rows


def subsampling(draws: int) -> dict:
    from deid_core.subsample import find_fraction, prepare, risk_of

    df = read_table(ADULT / "adult.csv")
    spec = parse_spec(__import__("tomllib").loads(adult_spec_toml(threshold=0.1)), base_dir=REPO)
    t0 = time.perf_counter()
    sub = prepare(df, spec)
    t_prep = time.perf_counter() - t0
    t0 = time.perf_counter()
    found = find_fraction(sub, 0.115, "average", draws=draws, seed=1, step=0.01)
    t_search = time.perf_counter() - t0
    curve = []
    for frac in (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0):
        samples = [sub.measure(sub.draw(frac, seed=2, draw=i)) for i in range(20)]
        curve.append({"fraction": frac, **{f"mean_{m}_risk": round(statistics.mean(risk_of(x, m) for x in samples), 4)
                                           for m in ("average", "max")}})
    return {"records": len(df), "prepare_s": round(t_prep, 3), "threshold": 0.115, "draws": draws,
            "find_fraction_s": round(t_search, 3), "probes": found["probes_evaluated"], "fraction": found["fraction"],
            "at_fraction": found["at_fraction"], "full_prosecutor": sub.full["prosecutor"], "curve": curve}


def known_on_adult() -> list[dict]:
    from deid_core.algorithm import optimal_release
    from deid_core.assess import assess, assess_known
    from deid_core.risk.known_subsets import known_qis

    df = read_table(ADULT / "adult.csv")
    spec = parse_spec(__import__("tomllib").loads(adult_spec_toml(threshold=0.1, release="public")), base_dir=REPO)
    out = []
    base = optimal_release(df, spec, k=5, measure="max")
    out.append({"known": "all 8", "ola_loss": round(base.best["information_loss"], 1),
                "ola_levels": list(base.best["levels"].values())})
    for m, block in ((2, None), (3, None), (3, 4), (3, 5), (5, None)):
        known = known_qis(spec.quasi, m, block)
        t0 = time.perf_counter()
        a = assess(df, spec)
        r = assess_known(df, spec, None, a, known)
        t_assess = time.perf_counter() - t0
        t0 = time.perf_counter()
        best = optimal_release(df, spec, k=5, measure="max", known=known)
        out.append({"known": m, "block": known.design.k, "blocks": len(known.design),
                    "prosecutor_max": r["worst"]["prosecutor"]["max"],
                    "prosecutor_average": round(r["worst"]["prosecutor"]["average"], 4),
                    "assess_s": round(t_assess, 3), "ola_s": round(time.perf_counter() - t0, 3),
                    "ola_nodes": best.search.nodes_evaluated, "ola_loss": round(best.best["information_loss"], 1),
                    "ola_levels": list(best.best["levels"].values())})
        print(out[-1], file=sys.stderr, flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--improve-seconds", type=float, default=20.0)
    ap.add_argument("--draws", type=int, default=100)
    ap.add_argument("--json")
    a = ap.parse_args()
    result = {"table_7_6": designs(a.improve_seconds), "subsample_adult": subsampling(a.draws),
              "known_adult": known_on_adult()}
    text = json.dumps(result, indent=1)
    print(text)
    if a.json:
        Path(a.json).write_text(text)


if __name__ == "__main__":
    main()
