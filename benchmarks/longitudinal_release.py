"""Benchmark (not a test): suppression of persons, BPS over persons and the dates timeline on the synthetic
claims table of :mod:`benchmarks.claims` (docs/longitudinal.md).

  python -m benchmarks.longitudinal_release [--persons 113000] [--bps-persons 10000] [--json OUT]

1. ``assess`` with record suppression (k = 20, threshold 0.05) on the HHP-like generalization (sex, birth
   decade; 45 dx groups, LOS bands): counted in rows (no ``[longitudinal]``) and in persons.
2. ``deid search --method bps`` (20 policies) on the first ``--bps-persons`` persons, threshold 0.05, rows vs
   persons.
3. ``generalize_timeline`` on every claim's admission and discharge (admission + LOS), anchored at a date of
   birth (1 July of the birth year, or the first admission when the synthetic birth year follows it), month
   anchor, week intervals.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import pandas as pd

from deid_core import assess
from deid_core.algorithm.subtree import SubtreeProblem, search_subtree
from deid_core.longitudinal.persons import person_class_size, person_index
from deid_core.risk import encode_table
from deid_core.risk.equivalence_classes import class_index
from deid_core.spec import parse_spec
from deid_core.transform.dates import generalize_timeline

from .claims import generate, generalize_hhp_like

QIS = ["sex", "birth_year", "dx", "los"]


def spec(longitudinal: bool) -> object:
    raw = {"columns": {"member_id": "direct", **dict.fromkeys(QIS, "quasi"), "dsfc": "other"},
           "release": {"type": "non-public", "threshold": 0.05}}
    if longitudinal:
        raw["longitudinal"] = {"person": "member_id", "level1": ["sex", "birth_year"], "level2": ["dx", "los"]}
    return parse_spec(raw)


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, round(time.perf_counter() - t, 2)


def run(persons: int, bps_persons: int) -> dict:
    raw, t_gen = _timed(lambda: generate(persons, seed=1))
    df = generalize_hhp_like(raw, dx_groups=45)
    out: dict = {"persons": persons, "claims": len(df), "generate_seconds": t_gen}
    print(f"{len(df):,} claims of {persons:,} persons ({t_gen} s)", file=sys.stderr)
    for name, lg in (("rows", False), ("persons", True)):
        a, t = _timed(lambda: assess(df, spec(lg), record_suppression=True))
        s = a.summary
        out[f"suppress_{name}"] = {"seconds": t, "suppressed_records": s["suppressed_records"],
                                   "suppressed_persons": s.get("suppressed_persons"), "k_min": s["k_min"],
                                   "persons_after": s.get("persons")}
        print(f"assess --suppress ({name}): {out[f'suppress_{name}']}", file=sys.stderr)
    pcode = person_index(df, "member_id", ["sex", "birth_year"])
    one_pass = person_class_size(class_index(df, QIS)[0], pcode, persons) < 20
    out["suppress_persons"]["first_pass_persons"] = int(one_pass.sum())  # before following persons out
    small = df[df["member_id"].isin(df["member_id"].unique()[:bps_persons])].reset_index(drop=True)
    for name, lg in (("rows", False), ("persons", True)):
        sp = spec(lg)
        persons_idx = person_index(small, "member_id", ["sex", "birth_year"]) if lg else None
        problem = SubtreeProblem(encode_table(small, sp), 0.05, persons_idx)
        res, t = _timed(lambda: search_subtree(problem, "bps", 20, seed=0))
        best = res.policies[0] if res.policies else {}
        out[f"bps_{name}"] = {"seconds": t, "claims": len(small), "policies_evaluated": res.nodes_evaluated,
                              "best_loss": best.get("information_loss"), "best_risk": best.get("risk"),
                              "risk_of_the_data": problem.risk(np.ones(problem.n_bits, dtype=bool))}
        print(f"bps ({name}): {out[f'bps_{name}']}", file=sys.stderr)
    admit = pd.to_datetime(raw["admit_date"])
    frame = pd.DataFrame({"member_id": raw["member_id"], "admit": raw["admit_date"],
                          "discharge": (admit + pd.to_timedelta(raw["los"].astype(int), unit="D")).dt.strftime("%Y-%m-%d"),
                          "dob": raw["birth_year"] + "-07-01"})
    # synthetic birth years can follow the claims: such persons are born on their first admission
    first = admit.groupby(raw["member_id"]).transform("min")
    frame["dob"] = np.minimum(pd.to_datetime(frame["dob"]), first).dt.strftime("%Y-%m-%d")
    new, t = _timed(lambda: generalize_timeline(frame, ["admit", "discharge"], person="member_id", birth="dob",
                                                rng=np.random.default_rng(0)))
    shift = (pd.to_datetime(new["admit"]) - admit).dt.days
    out["timeline"] = {"seconds": t, "dates": 2 * len(frame) + persons,
                       "admission_shift_days_median_abs": float(shift.abs().median()),
                       "admission_shift_days_p95_abs": float(shift.abs().quantile(0.95))}
    print(f"timeline: {out['timeline']}", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--persons", type=int, default=113_000)
    p.add_argument("--bps-persons", type=int, default=10_000)
    p.add_argument("--json")
    args = p.parse_args(argv)
    out = run(args.persons, args.bps_persons)
    text = json.dumps(out, indent=2)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
