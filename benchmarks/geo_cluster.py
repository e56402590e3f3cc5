"""Benchmark (not a test): clustering small areas instead of cropping their codes, and geoproxy risk, on the
synthetic area tables of :mod:`deid_core.geo.synthetic` (docs/geography.md, "Measured").

  python -m benchmarks.geo_cluster [--rows 200 --cols 200] [--persons 5000] [--json OUT]

1. ``cluster_areas`` on ``rows × cols`` areas (40,000 by default) for several k, with the table's adjacency,
   with adjacency from the 6 nearest points, and inside 3-character prefixes ("3-digit ZIPs").
2. The cropping baseline: the longest prefix of the ids whose every region holds k people, and the size of
   the region a person's code is released as (population-weighted median km²), cropped vs clustered.
3. The whole ``deid geo`` process on the area table and synthetic claims, and ``geoproxy_risk``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from deid_core.geo.areas import areas_from_frame
from deid_core.geo.cluster import cluster_areas
from deid_core.geo.proxy import geoproxy_risk
from deid_core.geo.synthetic import synthetic_areas, synthetic_claims
from deid_core.io import write_table

KS = (20, 1_000, 20_000)


def weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    order = np.argsort(values)
    cum = np.cumsum(weights[order])
    return float(values[order][np.searchsorted(cum, cum[-1] / 2)])


def crop_baseline(ids: pd.Index, pop: np.ndarray, area: np.ndarray, k: int) -> dict:
    """The longest prefix length whose every region holds ``k`` people; the region a person is released as."""
    for length in range(len(ids[0]), -1, -1):
        region = pd.Series(ids.str[:length] if length else [""] * len(ids))
        rpop = pd.Series(pop).groupby(region.to_numpy()).transform("sum").to_numpy()
        if (rpop >= k).all():
            rarea = pd.Series(area).groupby(region.to_numpy()).transform("sum").to_numpy()
            return {"prefix_length": length, "regions": int(region.nunique()),
                    "person_region_km2_median": weighted_median(rarea, pop)}
    raise AssertionError("unreachable: the whole table holds fewer than k people")


def cluster_row(areas, k: int, **kw) -> dict:
    t = time.perf_counter()
    c = cluster_areas(areas, k, **kw)
    seconds = time.perf_counter() - t
    return {"k": k, "seconds": round(seconds, 2), "clusters": len(c), "rounds": c.rounds, "bridges": c.bridges,
            "areas_per_cluster_median": float(np.median(c.size)), "single_area_clusters": int((c.size == 1).sum()),
            "person_region_km2_median": weighted_median(c.area_km2[c.labels], areas.population.astype(float))}


def run(rows: int, cols: int, persons: int) -> dict:
    t = time.perf_counter()
    df = synthetic_areas(rows, cols, seed=1)
    out: dict = {"areas": len(df), "population": int(df["population"].astype(int).sum()),
                 "generate_seconds": round(time.perf_counter() - t, 2)}
    print(f"{len(df):,} areas, {out['population']:,} people", file=sys.stderr)
    areas = areas_from_frame(df)
    knn = areas_from_frame(df.drop(columns=["neighbors"]))
    within = areas_from_frame(df, within_prefix=3)
    out["neighbors"] = [cluster_row(areas, k) for k in KS]
    out["knn6"] = [cluster_row(knn, k) for k in KS]
    small_enough = int(np.bincount(within.boundary, weights=within.population).min())
    out["within_prefix3"] = [cluster_row(within, k) for k in KS if k <= small_enough]
    out["crop"] = [{"k": k, **crop_baseline(areas.ids, areas.population.astype(float), areas.area_km2, k)}
                   for k in KS]
    for row in out["neighbors"]:
        print(f"k={row['k']:>6,}: {row['clusters']:,} clusters in {row['seconds']} s", file=sys.stderr)
    claims = synthetic_claims(df, persons=persons, providers=max(50, persons // 5), seed=1)
    out["claims"] = len(claims)
    with tempfile.TemporaryDirectory() as tmp:
        a_path, c_path = Path(tmp) / "areas.csv", Path(tmp) / "claims.csv"
        write_table(df, a_path)
        write_table(claims, c_path)
        cmd = [sys.executable, "-m", "deid_core.cli", "geo", "--areas", str(a_path), "--input", str(c_path),
               "--column", "zip", "--k", "20000", "--person", "person", "--out", str(Path(tmp) / "out.csv"),
               "--report", str(Path(tmp) / "r.json")]
        t = time.perf_counter()
        subprocess.run(cmd, check=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
        out["cli_seconds"] = round(time.perf_counter() - t, 2)
        out["cli_report_seconds"] = json.loads((Path(tmp) / "r.json").read_text())["seconds"]
    text = claims.astype("category")
    proxy = []
    for prefix in (None, 3, 4):
        t = time.perf_counter()
        r = geoproxy_risk(text, areas_from_frame(df, within_prefix=prefix), home="zip", provider_area="provider_zip",
                          person="person", provider="provider")
        s = r.summary()
        proxy.append({"within_prefix": prefix or 0, "seconds": round(time.perf_counter() - t, 2),
                      "average_risk": round(s["average_risk"], 4), "top_ranked": round(s["true_area_top_ranked"], 4),
                      "mean_rank": round(s["mean_rank"], 1)})
    out["geoproxy"] = proxy
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=200)
    p.add_argument("--cols", type=int, default=200)
    p.add_argument("--persons", type=int, default=5000)
    p.add_argument("--json")
    a = p.parse_args(argv)
    out = run(a.rows, a.cols, a.persons)
    print(json.dumps(out, indent=2))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
