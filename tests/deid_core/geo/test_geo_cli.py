"""``deid geo`` and ``deid geoproxy`` as real subprocesses on the synthetic sample in tests/data/geo
(docs/geography.md, "From the command line")."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deid_core.geo.areas import read_areas
from deid_core.geo.proxy import geoproxy_risk
from deid_core.io import read_table, read_text_table
from deid_testdata import TEST_DATA, run, sha

DATA = TEST_DATA / "geo"
AREAS, CLAIMS = DATA / "areas.csv", DATA / "claims.csv"


def text(path: Path) -> pd.DataFrame:
    return read_text_table(path, [], categorical=False)


def clusters_of(hierarchy: Path) -> pd.Series:
    rows = [line.split(";") for line in hierarchy.read_text().splitlines()]
    return pd.Series({r[0]: r[1] for r in rows})


def test_geo_random_release(tmp_path):
    before = (sha(AREAS), sha(CLAIMS))
    out, rep, hier = tmp_path / "out.csv", tmp_path / "r.json", tmp_path / "h.csv"
    p = run("geo", "--areas", str(AREAS), "--input", str(CLAIMS), "--column", "zip", "--k", "20000",
            "--within-prefix", "3", "--person", "person", "--seed", "3", "--out", str(out), "--report", str(rep),
            "--hierarchy-out", str(hier))
    assert p.returncode == 0, p.stderr
    assert (sha(AREAS), sha(CLAIMS)) == before
    src, got = text(CLAIMS), text(out)
    assert list(got.columns) == list(src.columns)
    assert got.drop(columns="zip").equals(src.drop(columns="zip"))  # every other column exactly as it was
    areas = text(AREAS).set_index("id")
    assert got["zip"].isin(areas.index).all() and got["zip"].str.startswith("0").any()  # ZIPs keep their form
    cluster = clusters_of(hier)
    assert (cluster[got["zip"]].to_numpy() == cluster[src["zip"]].to_numpy()).all()  # moved within the cluster
    assert (got["zip"] != src["zip"]).any()
    # the threshold, checked from the hierarchy and the area table alone
    pop = areas["population"].astype(int).groupby(cluster[areas.index].to_numpy()).sum()
    r = json.loads(rep.read_text())
    assert pop.min() >= 20_000 and r["clustering"]["population"]["min"] == pop.min()
    assert r["meets_threshold"] and r["k"] == 20_000 and r["clustering"]["clusters"] == len(pop)
    assert r["columns"]["zip"] == "replaced by a random area of its cluster" and r["columns"]["person"] == "unchanged"
    # clusters stay inside their 3-digit ZIP
    assert (pd.Series(cluster.index.str[:3], index=cluster.index).groupby(cluster).nunique() == 1).all()
    # one draw per person and cluster
    assert (got.groupby([src["person"], cluster[src["zip"]].to_numpy()])["zip"].nunique() == 1).all()


def test_geo_cluster_release_to_parquet(tmp_path):
    out, hier = tmp_path / "out.parquet", tmp_path / "h.csv"
    p = run("geo", "--areas", str(AREAS), "--input", str(CLAIMS), "--column", "zip", "--threshold", "0.0001",
            "--release", "cluster", "--out", str(out), "--hierarchy-out", str(hier))
    assert p.returncode == 0, p.stderr
    got, src = read_table(out, categorical=False), text(CLAIMS)
    assert (got["zip"].to_numpy() == clusters_of(hier)[src["zip"]].to_numpy()).all()
    assert got["zip"].str.fullmatch(r"C\d+").all()


@pytest.mark.parametrize("case,args,message", [
    ("unknown zip", ["--column", "provider"], "not an id of the area table, e.g. 'D"),
    ("no column", ["--column", "postcode"], "column 'postcode' is not in the input"),
    ("threshold", ["--column", "zip", "--threshold", "0"], "--threshold: 0 is outside (0, 1]"),
    ("boundary short", ["--column", "zip", "--k", "60000", "--within-prefix", "3"], "fewer than k = 60,000"),
    ("bad areas", ["--column", "zip", "--areas-bad"], "missing column(s) population"),
])
def test_geo_bad_input_exits_2_with_one_line(tmp_path, case, args, message):
    areas = AREAS
    if "--areas-bad" in args:
        areas = tmp_path / "areas.csv"
        text(AREAS).drop(columns="population").to_csv(areas, index=False)
        args = [a for a in args if a != "--areas-bad"]
    if "--threshold" not in args and "--k" not in args:
        args = [*args, "--threshold", "0.0001"]
    out, rep = tmp_path / "out.csv", tmp_path / "r.json"
    p = run("geo", "--areas", str(areas), "--input", str(CLAIMS), *args, "--out", str(out), "--report", str(rep))
    assert p.returncode == 2, (case, p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1 and message in p.stderr, p.stderr
    assert not out.exists() and not rep.exists()


def test_geo_refuses_a_missing_output_folder_before_writing(tmp_path):
    out = tmp_path / "out.csv"
    p = run("geo", "--areas", str(AREAS), "--input", str(CLAIMS), "--column", "zip", "--threshold", "0.0001",
            "--out", str(out), "--report", str(tmp_path / "missing" / "r.json"))
    assert p.returncode == 2 and "folder does not exist" in p.stderr and not out.exists()


def test_geoproxy_cli_matches_the_library(tmp_path):
    out = tmp_path / "g.json"
    p = run("geoproxy", "--areas", str(AREAS), "--input", str(CLAIMS), "--home", "zip", "--provider-area",
            "provider_zip", "--person", "person", "--provider", "provider", "--within-prefix", "0",
            "--within-prefix", "3", "--report", str(out))
    assert p.returncode == 0, p.stderr
    results = json.loads(out.read_text())["results"]
    df = read_text_table(CLAIMS, [""], categorical=True)
    for res, prefix in zip(results, (None, 3)):
        lib = geoproxy_risk(df, read_areas(AREAS, prefix), home="zip", provider_area="provider_zip",
                            person="person", provider="provider")
        assert res == {"within_prefix": prefix or 0, **lib.summary()}
        assert res["units"] == df["person"].nunique()
        assert 0 < res["average_risk"] < 1 and np.isclose(sum(res["rank_share"]) + res["rank_share_beyond"], 1)
