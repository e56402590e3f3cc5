"""Clustering adjacent areas to a population threshold, and releasing area codes (El Emam & Arbuckle, ch. 9,
"Clustering Neighbors"; docs/geography.md)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from deid_core.errors import DeidInputError
from deid_core.geo.areas import areas_from_frame
from deid_core.geo.cluster import cluster_areas
from deid_core.geo.ragged import ranges, starts
from deid_core.geo.release import release_areas
from deid_core.geo.synthetic import synthetic_areas
from deid_core.risk import k_for_threshold
from deid_core.risk.attack import meets
from deid_core.spec import SUPPRESSED


def ring(prefix: str, n: int, lon0: float, pop: int = 1) -> pd.DataFrame:
    """``n`` areas on a small circle, each adjacent to the next."""
    t = np.arange(n) * 2 * np.pi / n
    ids = [f"{prefix}{i:02d}" for i in range(n)]
    return pd.DataFrame({"id": ids, "lat": (45 + 0.05 * np.sin(t)).astype(str),
                         "lon": (lon0 + 0.05 * np.cos(t)).astype(str), "population": str(pop),
                         "neighbors": [f"{ids[(i + 1) % n]};{ids[i - 1]}" for i in range(n)]})


def test_cluster_of_eleven_areas_has_risk_one_eleventh():
    areas = areas_from_frame(ring("A", 11, -75.0))
    k = k_for_threshold(0.091)
    assert k == 11
    c = cluster_areas(areas, k)
    assert len(c) == 1 and c.size[0] == 11
    assert c.max_risk == 1 / 11 and meets(c.max_risk, 0.091) and not meets(c.max_risk, 0.09)
    # the book's release: each of the 11 areas replaces the original with probability 1/11
    values = pd.Series(["A00"] * 22_000, dtype="category")
    r = release_areas(values, areas, c, "random", seed=5)
    freq = pd.Series(np.asarray(r.values)).value_counts(normalize=True)
    assert set(freq.index) == set(areas.ids)
    assert np.abs(freq.to_numpy() - 1 / 11).max() < 0.01  # 4.5 standard errors
    assert r.summary["area_guess_probability"] == {"max": 1 / 11, "mean": pytest.approx(1 / 11)}


def test_separate_groups_stay_separate():
    areas = areas_from_frame(pd.concat([ring("A", 11, -75.0), ring("B", 11, -74.0)], ignore_index=True))
    c = cluster_areas(areas, 11)
    assert len(c) == 2
    assert (c.labels[:11] == 0).all() and (c.labels[11:] == 1).all()
    assert list(c.names) == ["C1", "C2"]


def test_similar_sizes_merge_first():
    # S is nearer to the big area L than to T by centre distance, but the Hausdorff distance between their
    # equal-area caps is smaller for T (same size): S joins T
    df = pd.DataFrame({"id": ["S", "T", "L"], "lat": "0", "lon": ["0", "0.02", "-0.015"],
                       "population": ["5", "5", "100"], "area_km2": ["1", "1", "100"],
                       "neighbors": ["T;L", "S", "S"]})
    c = cluster_areas(areas_from_frame(df), 10)
    assert c.labels[0] == c.labels[1] != c.labels[2]


@pytest.mark.parametrize("seed,k", [(1, 500), (2, 5_000), (3, 60_000)])
def test_every_cluster_meets_k_and_is_connected(seed, k):
    df = synthetic_areas(30, 30, seed)
    areas = areas_from_frame(df, within_prefix=3)
    c = cluster_areas(areas, k)
    pop = np.bincount(c.labels, weights=areas.population)
    assert np.array_equal(pop, c.population) and (pop >= k).all()
    assert c.size.sum() == len(areas) and np.array_equal(np.bincount(c.labels), c.size)
    # clusters never cross a boundary (3-digit prefix)
    assert (pd.Series(areas.boundary).groupby(c.labels).nunique() == 1).all()
    # each cluster is connected through the adjacency of the table (no bridge was needed)
    assert c.bridges == 0
    e = areas.edges[c.labels[areas.edges[:, 0]] == c.labels[areas.edges[:, 1]]]
    graph = coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(len(areas),) * 2)
    ncomp, comp = connected_components(graph, directed=False)
    assert ncomp == len(c)
    assert (pd.Series(comp).groupby(c.labels).nunique() == 1).all()
    # deterministic
    assert np.array_equal(cluster_areas(areas, k).labels, c.labels)


def test_no_adjacency_column_uses_nearest_points():
    df = synthetic_areas(20, 20, 4).drop(columns=["neighbors"])
    c = cluster_areas(areas_from_frame(df), 2_000, knn=4)
    assert (c.population >= 2_000).all() and c.adjacency == "4 nearest representative points"


def test_an_island_is_bridged_to_its_nearest_cluster():
    island = pd.DataFrame({"id": ["I"], "lat": ["45.3"], "lon": ["-74.5"], "population": ["3"], "neighbors": [""]})
    df = pd.concat([ring("A", 11, -75.0), ring("B", 11, -74.0), island], ignore_index=True)
    areas = areas_from_frame(df)
    c = cluster_areas(areas, 11)
    assert c.bridges == 1 and len(c) == 2 and (c.population >= 11).all()


def test_a_boundary_with_too_few_people_is_refused():
    df = pd.concat([ring("A", 11, -75.0), ring("B", 5, -74.0)], ignore_index=True)
    with pytest.raises(DeidInputError, match="boundary 'B' holds 5 people in all, fewer than k = 11"):
        cluster_areas(areas_from_frame(df, within_prefix=1), 11)
    with pytest.raises(DeidInputError, match="the area table holds 16 people"):
        cluster_areas(areas_from_frame(df), 17)


def test_release_cluster_ids_and_pass_through():
    areas = areas_from_frame(pd.concat([ring("A", 11, -75.0), ring("B", 11, -74.0)], ignore_index=True))
    c = cluster_areas(areas, 11)
    values = pd.Series(["A03", "", SUPPRESSED, "B10", "A03"], dtype="category")
    r = release_areas(values, areas, c, "cluster")
    assert list(r.values) == ["C1", "", SUPPRESSED, "C2", "C1"]
    assert r.summary["records_passed_through"] == 2
    rnd = release_areas(values, areas, c, "random", seed=1)
    got = list(rnd.values)
    assert got[1:3] == ["", SUPPRESSED] and got[0].startswith("A") and got[3].startswith("B")
    with pytest.raises(DeidInputError, match=r"column 'zip': 1 record\(s\) hold a value that is not an id .* 'Z9'"):
        release_areas(pd.Series(["A01", "Z9"]), areas, c, column="zip")


def test_one_draw_per_person_and_cluster():
    areas = areas_from_frame(pd.concat([ring("A", 11, -75.0), ring("B", 11, -74.0)], ignore_index=True))
    c = cluster_areas(areas, 11)
    n = 3_000
    person = pd.Series(np.repeat([f"p{i}" for i in range(n // 3)], 3))
    values = pd.Series(np.tile(["A01", "A07", "B02"], n // 3))
    out = pd.Series(np.asarray(release_areas(values, areas, c, "random", 2, persons=person).values))
    cluster = values.str[0]
    per = out.groupby([person, cluster]).nunique()
    assert (per == 1).all()  # the person's two A records show the same area
    # persons still draw independently: every area of the cluster is used
    assert set(out[cluster == "A"]) == set(areas.ids[:11])


def test_ragged_ranges():
    assert starts(np.array([2, 0, 3])).tolist() == [0, 2, 2]
    assert ranges(np.array([2, 0, 3])).tolist() == [0, 1, 0, 1, 2]
