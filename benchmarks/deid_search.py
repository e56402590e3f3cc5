"""Benchmark (not a test): ``deid search`` — OLA on Adult vs ARX, BPS vs Directed, partitioning, boxes.

Run once:  PYTHONPATH=. python benchmarks/deid_search.py [--iterations 100] [--skip-slow]
Prints a JSON summary (times in seconds). ARX reference numbers: 5-anonymity, 0% suppression,
non-uniform entropy -> node 1,2,1,1,3,2,2,1 (loss 382871.41), 142 nodes checked, anonymize() ~0.07 s warm /
~0.43 s fresh JVM, whole process ~3.4 s; 5% suppression, default loss -> 0,3,0,0,1,1,1,2 (1,458 suppressed);
average risk <= 0.05, 5% -> 0,3,0,0,2,1,0,1 (1,122 suppressed). Benitez, Loukides & Malin 2010: 100 policies on Adult,
BPS 670 vs Directed 5,140 nodes, 95 vs 83 non-dominated (Van), 16.36 s per BPS policy (2010).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "deid_core"))

import deid_core as dc  # noqa: E402
from deid_core.io import read_table  # noqa: E402
from deid_core.spec import parse_spec  # noqa: E402
from deid_testdata import ADULT, ADULT_QIS, adult_spec_toml  # noqa: E402

from benchmarks.deid_assess import timed  # noqa: E402  (median of repeated runs)

ARX = {"nodes": 142, "process_s": 3.4, "fresh_jvm_s": 0.43, "warm_s": 0.07}


def ola_adult(df, spec) -> dict:
    from deid_core.algorithm import Criterion, FullDomainProblem, search_ola

    def one(crit, loss):
        return search_ola(FullDomainProblem(dc.encode_table(df, spec), crit, loss)).to_dict()

    n = len(df)
    out = {}
    t, r = timed(lambda: one(Criterion.build(n, k=5), "nue"))
    best = r["policies"][0]
    out["k5_0pct_nue"] = {"levels": [best["levels"][q] for q in ADULT_QIS], "loss": round(best["information_loss"], 2),
                          "nodes_evaluated": r["nodes_evaluated"], "nodes_by_ola": r["nodes_evaluated_by_ola"],
                          "seconds_in_process_incl_encoding": round(t, 4),
                          "ratio_nodes_vs_arx": round(r["nodes_evaluated"] / ARX["nodes"], 3),
                          "ratio_time_vs_arx_fresh_jvm": round(t / ARX["fresh_jvm_s"], 3),
                          "ratio_time_vs_arx_warm_jvm": round(t / ARX["warm_s"], 3)}
    for name, crit, loss in [
        ("k5_5pct_geometric", Criterion.build(n, k=5, max_suppression=0.05), "geometric"),
        ("k5_5pct_nue", Criterion.build(n, k=5, max_suppression=0.05), "nue"),
        ("avg005_5pct_geometric", Criterion.build(n, threshold=0.05, measure="average", max_suppression=0.05), "geometric"),
    ]:
        t, r = timed(lambda: one(crit, loss), repeat=1)
        best = r["policies"][0]
        out[name] = {"levels": [best["levels"][q] for q in ADULT_QIS], "loss": best["information_loss"],
                     "suppressed": best["suppressed_records"], "risk": best["risk"],
                     "nodes_evaluated": r["nodes_evaluated"], "seconds": round(t, 3)}
    return out


def cli_process(spec_path: Path, repeat: int = 3) -> dict:
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeat):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "deid_core.cli", "search", "--input", str(ADULT / "adult.csv"),
                            "--spec", str(spec_path), "--method", "ola", "--k", "5", "--report", f"{tmp}/r.json"],
                           check=True, cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
            times.append(time.perf_counter() - t)
    med = statistics.median(times)
    return {"whole_process_s": round(med, 3), "ratio_vs_arx_process": round(med / ARX["process_s"], 3)}


def bps_adult(df, iterations: int, skip_slow: bool) -> dict:
    from deid_core.algorithm import SubtreeProblem, safe_harbor_risk, search_subtree
    from test_search_bps import synthetic_census

    races = ["White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"]
    _, pop = synthetic_census(n=10, seed=0, races=races)  # a Tennessee-sized population table
    data = df[["sex", "race", "age"]].astype(str).replace({"Male": "M", "Female": "F"})
    spec = parse_spec({"columns": {"sex": "quasi", "race": "quasi", "age": "quasi"}, "types": {"age": "age"}})
    t0 = time.perf_counter()
    thr = safe_harbor_risk(data, pop, spec)
    table = dc.encode_table(data, spec, pop)
    setup = time.perf_counter() - t0
    out = {"records": len(data), "population_cells": len(pop), "safe_harbor_threshold": thr, "setup_s": round(setup, 3)}
    for method in ("bps",) + (() if skip_slow else ("directed",)):
        prob = SubtreeProblem(table, thr)
        r = search_subtree(prob, method, iterations, seed=0).to_dict()
        out[method] = {"iterations": iterations, "bits": r["bits"], "nodes_evaluated": r["nodes_evaluated"],
                       "non_dominated": r["non_dominated"], "distinct": r["distinct_policies"],
                       "seconds": round(r["seconds"], 2), "seconds_per_policy": round(r["seconds"] / iterations, 4)}
    return out


def partition_bench() -> dict:
    from deid_core.algorithm.partition import Partitioner, summary
    from deid_core.algorithm import safe_harbor_release
    from deid_core.risk import release_class_sizes
    from test_search_partition import SPEC, same_disease

    df, pop = same_disease(n=180, n_zip=84, people=401_517, seed=0)
    spec = parse_spec(SPEC)
    t0 = time.perf_counter()
    table = dc.encode_table(df, spec, pop)
    enc = time.perf_counter() - t0
    sh_out, sh_pop, kept = safe_harbor_release(df, pop, spec)
    f, g, n_ec = release_class_sizes(sh_out, sh_pop, kept)
    out = {"encode_s": round(enc, 3), "safe_harbor": {"ecs": n_ec, "max_r": float((f / g).max()), "R": float((f / g).mean())}}
    for m, mp in [(3, 0), (2, 100)]:
        t0 = time.perf_counter()
        s = summary(Partitioner(table, m, mp).run())
        out[f"min_size_{m}_min_population_{mp}"] = {**s, "seconds": round(time.perf_counter() - t0, 2)}
    return out


def boxes_bench() -> dict:
    from deid_core.algorithm.boxes import anonymize, interval_statistics

    rng = np.random.default_rng(5)
    x = rng.normal(139.3, 15, size=(60, 1))
    out = {"true_mean": float(x.mean())}
    for k in (3, 4, 9):
        b = anonymize(x, k)
        st = interval_statistics(b.lo[b.box, 0], b.hi[b.box, 0], x[:, 0])
        out[f"k{k}"] = {"mean": [round(v, 2) for v in st["mean"]], "variance": [round(v, 1) for v in st["variance"]],
                        "variance_max_exact": st["variance_max_exact"]}
    big = rng.normal(size=(20_000, 3))
    t0 = time.perf_counter()
    anonymize(big, 5)
    out["20000x3_k5_seconds"] = round(time.perf_counter() - t0, 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--skip-slow", action="store_true", help="skip Directed on Adult")
    args = ap.parse_args()
    df = read_table(ADULT / "adult.csv")
    with tempfile.TemporaryDirectory() as tmp:
        sp = Path(tmp) / "adult.toml"
        sp.write_text(adult_spec_toml())
        spec = dc.load_spec(sp)
        res = {"ola_adult": ola_adult(df, spec), "ola_cli": cli_process(sp)}
    res["bps_adult"] = bps_adult(df, args.iterations, args.skip_slow)
    res["partition_liu2016_shaped"] = partition_bench()
    res["boxes"] = boxes_bench()
    print(json.dumps(res, indent=2, default=float))


if __name__ == "__main__":
    main()
