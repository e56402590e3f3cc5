"""Benchmark (not a test): a synthetic claims table shaped like the Heritage Health Prize release, and timings.

Shape (El Emam et al. 2012): ~113,000 members, ~2.67 M claims, median 11
claims per member, a long tail up to 136. Columns: member_id, sex,
birth_year, dx (ICD-9-like codes, Zipf-skewed, with per-member chronic codes
that repeat), admit_date, los, provider (per-member regular providers).

  python -m benchmarks.claims --persons 113000 --seed 1 --out claims.parquet   # write the table
  python -m benchmarks.claims --time [--persons N] [--iterations 10000] [--json OUT]

``--time`` generates the table in memory, then times patient-level risk,
adversary power and the simulated attack (p_max 5, 10, 15) on the raw table
and on an HHP-like generalization (birth decade, 3-digit dx, LOS bands, days
since first claim in 30-day bins), and claim truncation (bins of 5, k = 10).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from deid_core.longitudinal.attack import simulate_attack
from deid_core.longitudinal.dates import days_since_first
from deid_core.longitudinal.persons import patient_risk
from deid_core.longitudinal.power import adversary_power
from deid_core.longitudinal.truncate import truncate_claims

MAX_CLAIMS = 136


def claims_per_person(n: int, rng: np.random.Generator) -> np.ndarray:
    """Mixture of a lognormal body (median 7.5) and a chronic component (median 60); draws above 136 are redrawn."""
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:
        heavy = rng.random(todo.size) < 0.24
        x = np.where(heavy, np.exp(np.log(60) + 0.28 * rng.standard_normal(todo.size)),
                     np.exp(np.log(7.5) + 0.9 * rng.standard_normal(todo.size)))
        x = np.ceil(x).astype(np.int64)
        ok = (x >= 1) & (x <= MAX_CLAIMS)
        out[todo[ok]] = x[ok]
        todo = todo[~ok]
    return out


def _zipf_pool(rng: np.random.Generator, size: int, k: int, s: float = 1.1) -> np.ndarray:
    w = 1.0 / np.arange(1, k + 1) ** s
    return rng.choice(k, size=size, p=w / w.sum())


def generate(persons: int = 113_000, seed: int = 1) -> pd.DataFrame:
    """The synthetic claims table (all columns text, one row per claim)."""
    rng = np.random.default_rng(seed)
    n = claims_per_person(persons, rng)
    pid = np.repeat(np.arange(persons), n)
    rows = len(pid)
    # ICD-9-like pool: 3-digit categories with 0-2 decimals, ranked by a random permutation
    cats = rng.permutation(np.arange(1, 1000))
    pool = np.array([f"{c:03d}" + ("" if j == 0 else f".{rng.integers(0, 10 ** j):0{j}d}")
                     for c in cats for j in (0, 1, 2)][:3000], dtype=object)
    chronic = _zipf_pool(rng, persons * 3, len(pool)).reshape(persons, 3)
    own = rng.random(rows) < 0.5
    dx_idx = np.where(own, chronic[pid, rng.integers(0, 3, rows)], _zipf_pool(rng, rows, len(pool)))
    providers = np.array([f"P{i:05d}" for i in range(20_000)], dtype=object)
    regular = _zipf_pool(rng, persons * 2, len(providers), s=0.9).reshape(persons, 2)
    prov_idx = np.where(rng.random(rows) < 0.7, regular[pid, rng.integers(0, 2, rows)],
                        _zipf_pool(rng, rows, len(providers), s=0.9))
    start = np.datetime64("2008-01-01") + rng.integers(0, 730, persons).astype("timedelta64[D]")
    admit = start[pid] + rng.integers(0, 365, rows).astype("timedelta64[D]")
    los = np.where(rng.random(rows) < 0.85, 0, rng.geometric(0.25, rows))
    sex = np.where(rng.random(persons) < 0.55, "F", "M")
    birth = 2010 - np.clip(rng.normal(48, 22, persons), 0, 89).astype(int)
    return pd.DataFrame({"member_id": np.char.add("M", pid.astype(str)).astype(object),
                         "sex": sex[pid].astype(object), "birth_year": birth[pid].astype(str).astype(object),
                         "dx": pool[dx_idx], "admit_date": admit.astype(str).astype(object),
                         "los": los.astype(str).astype(object), "provider": providers[prov_idx]})


def generalize_hhp_like(df: pd.DataFrame, dx_groups: int | None = None) -> pd.DataFrame:
    """Birth decade, dx to 3 digits (or to ``dx_groups`` contiguous ranges of 3-digit categories, like the
    release's ~45 primary condition groups), LOS bands (0, 1-3, 4-7, 8+), days since first claim in 30-day bins."""
    out = pd.DataFrame({"member_id": df["member_id"], "sex": df["sex"]})
    out["birth_year"] = (df["birth_year"].astype(int) // 10 * 10).astype(str)
    out["dx"] = df["dx"].str[:3]
    if dx_groups:
        out["dx"] = (out["dx"].astype(int) * dx_groups // 1000).astype(str)
    los = df["los"].astype(int)
    out["los"] = pd.cut(los, [-1, 0, 3, 7, 10**6], labels=["0", "1-3", "4-7", "8+"]).astype(str)
    out["dsfc"] = (days_since_first(df, person="member_id", date="admit_date") // 30).astype(str)
    return out


def _t(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def run_timing(persons: int, seed: int, iterations: int) -> dict:
    res: dict = {"persons": persons, "seed": seed, "iterations": iterations}
    res["generate_s"], df = _t(lambda: generate(persons, seed))
    counts = df.groupby("member_id").size()
    res.update(claims=len(df), median_claims=float(counts.median()), max_claims=int(counts.max()))
    print(f"generated {len(df):,} claims for {persons:,} persons in {res['generate_s']:.1f} s", file=sys.stderr)
    l1 = ["sex", "birth_year"]
    res["patient_risk_s"], pr = _t(lambda: patient_risk(df, person="member_id", level1=l1))
    res["patient_risk"] = pr.summary()
    level2 = ["dx", "los", "dsfc"]
    for label, groups in (("dx3", None), ("dx45", 45)):
        gen = generalize_hhp_like(df, groups)
        res[f"power_s_{label}"], power5 = _t(lambda: adversary_power(gen, person="member_id", level2=level2))
        attacks = {}
        for pmax in (5, 10, 15):
            power = power5 if pmax == 5 else adversary_power(gen, person="member_id", level2=level2, p_max=pmax)
            secs, r = _t(lambda: simulate_attack(gen, person="member_id", level1=l1, level2=level2, power=power,
                                                 iterations=iterations, seed=seed))
            attacks[pmax] = {"seconds": secs, **r.summary()}
            print(f"{label} attack p_max={pmax}: {r.average_risk:.4f} {r.ci95} in {secs:.1f} s", file=sys.stderr)
        res[f"attack_{label}"] = attacks
    secs, r = _t(lambda: simulate_attack(df, person="member_id", level1=l1, level2=["dx", "los", "admit_date"],
                                         power=5, iterations=iterations, seed=seed))
    res["attack_raw_p5"] = {"seconds": secs, **r.summary()}
    secs, tr = _t(lambda: truncate_claims(gen, person="member_id", level2=level2, k=10, seed=seed))
    res["truncate"] = {"seconds": secs, **{k: v for k, v in tr.summary().items()
                                           if k not in ("bins_before", "bins_after")}}
    secs, r = _t(lambda: simulate_attack(tr.frame, background=gen, person="member_id", level1=l1, level2=level2,
                                         power=power5, iterations=iterations, seed=seed))
    res["attack_truncated_p5"] = {"seconds": secs, **r.summary()}
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--persons", type=int, default=113_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", help="write the table (.csv or .parquet)")
    ap.add_argument("--time", action="store_true", help="time risk, power, attack and truncation")
    ap.add_argument("--iterations", type=int, default=10_000)
    ap.add_argument("--json", help="write the timing numbers as JSON")
    a = ap.parse_args(argv)
    if not a.out and not a.time:
        ap.error("give --out F.csv|F.parquet and/or --time")
    if a.out:
        df = generate(a.persons, a.seed)
        out = Path(a.out)
        if out.suffix == ".parquet":
            df.to_parquet(out, index=False)
        elif out.suffix == ".csv":
            df.to_csv(out, index=False)
        else:
            ap.error("--out must end in .csv or .parquet")
        print(f"wrote {len(df):,} claims for {a.persons:,} persons to {out}", file=sys.stderr)
    if a.time:
        res = run_timing(a.persons, a.seed, a.iterations)
        text = json.dumps(res, indent=2, default=str)
        print(text)
        if a.json:
            Path(a.json).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
