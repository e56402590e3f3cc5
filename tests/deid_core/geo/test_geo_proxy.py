"""Geoproxy risk by triangulation over the nearest areas (El Emam & Arbuckle, ch. 9, "Measuring Geoproxy Risk";
docs/geography.md, "Geoproxy risk"). Expected values are worked out by hand in the comments."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from deid_core.errors import DeidInputError
from deid_core.geo.areas import areas_from_frame
from deid_core.geo.distance import cap_hausdorff, cap_radius, great_circle, unit_vectors
from deid_core.geo.neighbors import TIE_DECIMALS, nearest_by_hausdorff
from deid_core.geo.proxy import _weights, geoproxy_risk, neighbor_points

# Six areas on the equator (no area given: caps are points), gaps of 1, 2, 3, 4, 5 hundredths of a degree:
#   A0 0.00, A1 0.01, A2 0.03, A3 0.06, A4 0.10, A5 0.15; ids 10 11 12 | 23 24 25 (prefix 1 = "1" or "2").
# With 3 neighbours, points are 3 (the provider area), 2, 1:
#   around A0: A0 3, A1 2, A2 1    around A1: A1 3, A0 2, A2 1    around A3: A3 3, A2 2, A4 1
LINE = pd.DataFrame({"id": ["10", "11", "12", "23", "24", "25"], "lat": "0",
                     "lon": ["0", "0.01", "0.03", "0.06", "0.10", "0.15"], "population": "100"})


def claims(rows: list[tuple[str, str, str, str, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["pid", "home", "pz", "prov", "visit"])


def risk(df, prefix=None, **kw) -> pd.DataFrame:
    kw.setdefault("person", "pid")
    kw.setdefault("provider", "prov")
    kw.setdefault("visit", "visit")
    r = geoproxy_risk(df, areas_from_frame(LINE, within_prefix=prefix), home="home", provider_area="pz",
                      neighbors=3, **kw)
    return r.units


def test_points_are_fifty_minus_rank():
    # 60 areas at growing distances from area 0: area i is the i-th nearest
    df = pd.DataFrame({"id": [f"Z{i:02d}" for i in range(60)], "lat": "10",
                       "lon": [f"{0.001 * i * i:.3f}" for i in range(60)], "population": "1"})
    src, area, pts = neighbor_points(areas_from_frame(df), np.array([0]))
    assert (src == 0).all()
    assert dict(zip(area.tolist(), pts.tolist())) == {i: 50 - i for i in range(50)}


def test_two_providers_triangulate():
    # p lives in A2 and sees d1 in A1 and d2 in A3: A1 3, A0 2, A2 1+2 = 3, A3 3, A4 1
    # -> top score 3 shared by A1, A2, A3: rank 0, risk 1/3
    u = risk(claims([("p", "12", "11", "d1", "1"), ("p", "12", "23", "d2", "1")]))
    assert u.loc[0, ["score", "top", "ties", "rank"]].tolist() == [3, 3, 3, 0]
    assert u.loc[0, "risk"] == pytest.approx(1 / 3)
    # within the first digit the adversary knows "1": A3 gives no points -> A1 3, A2 3, A0 2: risk 1/2
    u = risk(claims([("p", "12", "11", "d1", "1"), ("p", "12", "23", "d2", "1")]), prefix=1)
    assert u.loc[0, ["score", "top", "ties", "rank"]].tolist() == [3, 3, 2, 0]
    assert u.loc[0, "risk"] == 0.5


# q lives in A0; d1 (in A1) is seen on 2 visits with 3 claims in all, d4 (in A0) on 1 visit with 1 claim
Q = claims([("q", "10", "11", "d1", "1"), ("q", "10", "11", "d1", "1"), ("q", "10", "11", "d1", "2"),
            ("q", "10", "10", "d4", "1")])


@pytest.mark.parametrize("variant,score,top,rank,expected", [
    # claims: A1 ×3 -> A1 9, A0 6, A2 3; A0 ×1 -> A0 3, A1 2, A2 1: A1 11 > A0 9
    ("claims", 9, 11, 1, 0.0),
    # visits: A1 ×2 -> A1 6, A0 4, A2 2; + A0 3, A1 2, A2 1: A1 8 > A0 7
    ("visits", 7, 8, 1, 0.0),
    # providers (and provider areas): A1 3 + 2 = 5, A0 2 + 3 = 5: a tie of two at the top
    ("providers", 5, 5, 0, 0.5),
    ("zips", 5, 5, 0, 0.5),
])
def test_variants_weight_the_provider_areas(variant, score, top, rank, expected):
    u = risk(Q, variant=variant)
    assert u.loc[0, ["score", "top", "rank"]].tolist() == [score, top, rank]
    assert u.loc[0, "risk"] == expected


def test_variant_weights():
    df = pd.DataFrame({"prov": ["a", "a", "b", "b", "c"], "visit": ["1", "1", "1", "2", "1"]})
    unit, g = np.zeros(5, dtype=int), np.array([7, 7, 7, 7, 8])
    w = {v: _weights(df, unit, g, v, "prov", "visit").set_index("g")["w"].to_dict()
         for v in ("claims", "visits", "providers", "zips")}
    assert w == {"claims": {7: 4, 8: 1}, "visits": {7: 3, 8: 1}, "providers": {7: 2, 8: 1}, "zips": {7: 1, 8: 1}}


def test_no_points_in_the_boundary_means_a_uniform_guess():
    # s lives in A5 ("25") and sees a provider in A0: points go to A0, A1, A2 only
    df = claims([("s", "25", "10", "d9", "1")])
    u = risk(df)
    assert u.loc[0, ["score", "top", "rank"]].tolist() == [0, 3, 3] and u.loc[0, "risk"] == 0.0
    # knowing the first digit "2", none of the points count: three areas tie at 0
    u = risk(df, prefix=1)
    assert u.loc[0, ["score", "top", "ties", "rank"]].tolist() == [0, 0, 3, 0]
    assert u.loc[0, "risk"] == pytest.approx(1 / 3)


def test_record_level_and_average():
    df = claims([("p", "12", "11", "d1", "1"), ("p", "12", "23", "d2", "1"), ("q", "10", "10", "d4", "1")])
    r = geoproxy_risk(df, areas_from_frame(LINE), home="home", provider_area="pz", level="record", neighbors=3)
    # record 1: A2 has 1 point, A1 3 -> rank 2; record 2: A2 2 vs A3 3 -> rank 1; record 3: A0 alone on top
    assert r.units["rank"].tolist() == [2, 1, 0]
    assert r.units["risk"].tolist() == [0.0, 0.0, 1.0]
    assert r.summary()["average_risk"] == pytest.approx(1 / 3)


def test_bad_geoproxy_input():
    with pytest.raises(DeidInputError, match="more than one home area"):
        risk(claims([("p", "12", "11", "d1", "1"), ("p", "10", "23", "d2", "1")]))
    with pytest.raises(DeidInputError, match="provider column is needed"):
        risk(Q, provider=None)


def test_nearest_by_hausdorff_is_exact():
    # areas of very different sizes: the Hausdorff order is not the centre-distance order, so candidates
    # from the k-d tree must grow until they provably hold the n nearest
    rng = np.random.default_rng(7)
    n_areas = 400
    vec = unit_vectors(rng.uniform(44, 46, n_areas), rng.uniform(-76, -74, n_areas))
    radii = cap_radius(rng.lognormal(3.0, 1.5, n_areas))
    sources = np.array([0, 5, 17, 123, 399])
    src, area, rank = nearest_by_hausdorff(vec, radii, sources, 10)
    for i, s in enumerate(sources):
        h = np.round(cap_hausdorff(great_circle(vec[s], vec), radii[s], radii), TIE_DECIMALS)
        nth = np.sort(h)[9]
        want = {int(a): int((h < h[a]).sum()) for a in np.flatnonzero(h <= nth)}
        got = dict(zip(area[src == i].tolist(), rank[src == i].tolist()))
        assert got == want
