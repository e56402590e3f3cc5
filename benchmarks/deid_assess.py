"""Benchmark (not a test): ``deid assess`` on Adult (8 QIs) and on synthetic data up to 10 million rows.

Run once:  PYTHONPATH=. python benchmarks/deid_assess.py [--rows 10000000] [--skip-large]
Prints a JSON summary (times in seconds, peak RSS in MiB via resource.getrusage).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "deid_core"))

import deid_core as dc  # noqa: E402
from deid_testdata import ADULT, ADULT_QIS as QIS  # noqa: E402  (shared/ beside the checkout)
ARX_NODE = {"sex": 1, "age": 2, "race": 1, "marital-status": 1, "education": 3, "native-country": 2,
            "workclass": 2, "occupation": 1}


def spec_text(extra_qis: str = "", extra_h: str = "") -> str:
    cols = "\n".join(f'"{q}" = "quasi"' for q in QIS) + '\n"salary-class" = "sensitive"\n' + extra_qis
    hier = "\n".join(f'"{q}" = {{ csv = "{ADULT}/adult_hierarchy_{q}.csv" }}' for q in QIS) + "\n" + extra_h
    return f'[columns]\n{cols}\n[hierarchies]\n{hier}\n[release]\ntype = "non-public"\nthreshold = 0.05\n'


def peak_rss_mib(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024.0  # Linux: KiB


def timed(fn, repeat: int = 5) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def bench_adult(tmp: Path) -> dict:
    spec_path = tmp / "adult.toml"
    spec_path.write_text(spec_text())
    spec = dc.load_spec(spec_path)
    t_read, df = timed(lambda: dc.read_table(ADULT / "adult.csv"))
    t_encode, table = timed(lambda: dc.encode_table(df, spec))
    t_eval, _ = timed(lambda: table.evaluate())
    t_node, _ = timed(lambda: table.evaluate(ARX_NODE), repeat=20)
    t_assess, _ = timed(lambda: dc.assess(df, spec))
    t_assess_node, _ = timed(lambda: dc.assess(df, spec, levels=ARX_NODE))
    cli = []
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "deid_core.cli", "assess", "--input", str(ADULT / "adult.csv"),
                        "--spec", str(spec_path), "--report", str(tmp / "r.json")], check=True, cwd=REPO,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
        cli.append(time.perf_counter() - t)
    reported = json.loads((tmp / "r.json").read_text())["seconds"]
    return {"rows": len(df), "qis": len(QIS), "read_csv": t_read, "encode": t_encode,
            "evaluate_original": t_eval, "evaluate_one_lattice_node": t_node,
            "assess_in_process": t_assess, "assess_with_levels_in_process": t_assess_node,
            "cli_process_wall_median": statistics.median(cli), "cli_reported_seconds": reported}


def synthetic(rows: int, seed: int = 1) -> pd.DataFrame:
    """Adult rows resampled with replacement + a synthetic 5-digit ZIP (2,000 codes) as a 9th QI."""
    rng = np.random.default_rng(seed)
    adult = dc.read_table(ADULT / "adult.csv")
    idx = rng.integers(0, len(adult), rows)
    out = {}
    for c in adult.columns:
        cat = adult[c]
        out[c] = pd.Categorical.from_codes(cat.cat.codes.to_numpy()[idx], categories=cat.cat.categories)
    zips = np.array([f"{z:05d}" for z in rng.choice(100_000, 2_000, replace=False)])
    out["zip"] = pd.Categorical.from_codes(rng.integers(0, len(zips), rows), categories=zips)
    return pd.DataFrame(out)


def bench_large(tmp: Path, rows: int) -> dict:
    spec_path = tmp / "big.toml"
    spec_path.write_text(spec_text('zip = "quasi"\n', 'zip = { builder = "prefix", levels = 5 }\n'))
    spec = dc.load_spec(spec_path)
    t = time.perf_counter()
    df = synthetic(rows)
    t_gen = time.perf_counter() - t
    # a census-like population table: every sample class with 5x its sample count
    t = time.perf_counter()
    pop = df.groupby(QIS + ["zip"], observed=True).size().reset_index(name="count")   # classes present only
    pop = pop[pop["count"] > 0].copy()
    pop["count"] *= 5
    t_pop = time.perf_counter() - t
    rss_before = peak_rss_mib()
    t = time.perf_counter()
    a = dc.assess(df, spec, pop)
    t_assess = time.perf_counter() - t
    levels = {**ARX_NODE, "zip": 2}
    t = time.perf_counter()
    b = dc.assess(df, spec, pop, levels=levels, record_suppression=True)
    t_assess_tr = time.perf_counter() - t
    rss_in_process = peak_rss_mib()
    parquet = tmp / "big.parquet"
    df.to_parquet(parquet, index=False)
    del a, b
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "deid_core.cli", "assess", "--input", str(parquet), "--spec", str(spec_path),
                    "--report", str(tmp / "big.json")], check=True, cwd=REPO,
                   env={**os.environ, "PYTHONPATH": str(REPO)})
    t_cli = time.perf_counter() - t
    res = json.loads((tmp / "big.json").read_text())
    return {"rows": rows, "qis": len(QIS) + 1, "population_rows": len(pop), "generate": t_gen, "population_build": t_pop,
            "assess_with_population_in_process": t_assess, "assess_levels_suppression_population_in_process": t_assess_tr,
            "peak_rss_mib_in_process": rss_in_process, "peak_rss_mib_before_assess": rss_before,
            "cli_parquet_wall": t_cli, "cli_peak_rss_mib": peak_rss_mib(resource.RUSAGE_CHILDREN),
            "cli_equivalence_classes": res["equivalence_classes"], "cli_k_min": res["k_min"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--skip-large", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as d:
        tmp = Path(d)
        out = {"adult": bench_adult(tmp)}
        print(json.dumps(out, indent=2), flush=True)
        if not args.skip_large:
            out["large"] = bench_large(tmp, args.rows)
        out["cpu"] = os.cpu_count()
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
