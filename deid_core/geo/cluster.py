"""Clustering adjacent small areas until every cluster holds enough people (El Emam & Arbuckle, *Anonymizing
Health Data*, ch. 9, "Clustering Neighbors"; docs/geography.md, "Clustering").

Each cluster is represented, as the book represents an area, by a spherical cap of the cluster's total area
centred at its area-weighted mean representative point; the distance between two clusters is the Hausdorff
distance between their caps, which favours merging neighbours of similar size. The risk of a cluster is
``1/population`` (everyone in it shares the released value); the threshold holds when every cluster's
population reaches ``k``.

Agglomeration in vectorized rounds: in each round every cluster below ``k`` picks its nearest adjacent cluster
(ties by ids). Two clusters below ``k`` that pick each other merge; a cluster at ``k`` or more merges with the
nearest of the clusters that picked it. Merges of one round are disjoint pairs, so each is a choice the
sequential greedy merge would also make; the overall nearest pair always merges, so every round makes
progress. A cluster below ``k`` with no adjacent cluster left (an island, or a component of the adjacency
graph with too few people) is linked to its Hausdorff-nearest cluster in its boundary (a "bridge").
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from ..errors import DeidInputError
from .areas import Areas
from .distance import cap_hausdorff, cap_radius, great_circle, normalize
from .neighbors import knn_edges
from .ragged import starts

#: Neighbours per area when the area table lists none: adjacency is approximated by the nearest points.
DEFAULT_KNN = 6


@dataclass(frozen=True, eq=False)
class Clustering:
    """Clusters of an area table: ``labels[i]`` is area ``i``'s cluster, clusters numbered in table order of
    their first area; per cluster its population, number of areas, total area, centre and released name."""

    labels: np.ndarray
    population: np.ndarray
    size: np.ndarray
    area_km2: np.ndarray
    centre: np.ndarray
    names: pd.Index
    k: int
    rounds: int
    bridges: int
    adjacency: str
    seconds: float

    def __len__(self) -> int:
        return len(self.population)

    @property
    def max_risk(self) -> float:
        """``1 / min population`` over the clusters (1 when a cluster holds nobody)."""
        low = int(self.population.min())
        return 1.0 if low == 0 else 1.0 / low

    def members(self) -> tuple[np.ndarray, np.ndarray]:
        """Areas sorted by cluster (stable: table order inside a cluster) and each cluster's start in it."""
        order = np.argsort(self.labels, kind="stable")
        return order, starts(self.size)

    def summary(self) -> dict:
        q = lambda a, p: float(np.percentile(a, p))  # noqa: E731
        radius = cap_radius(self.area_km2)
        return {"clusters": len(self), "k": self.k, "max_risk": self.max_risk,
                "population": {"min": int(self.population.min()), "median": q(self.population, 50),
                               "max": int(self.population.max())},
                "areas_per_cluster": {"min": int(self.size.min()), "median": q(self.size, 50),
                                      "max": int(self.size.max()),
                                      "single_area_clusters": int((self.size == 1).sum())},
                "cluster_area_km2": {"median": q(self.area_km2, 50), "max": float(self.area_km2.max())},
                "cap_radius_km": {"median": q(radius, 50), "max": float(radius.max())},
                "adjacency": self.adjacency, "rounds": self.rounds, "bridges": self.bridges,
                "seconds": round(self.seconds, 4)}


def _canonical(edges: np.ndarray, n: int) -> np.ndarray:
    """Edges as unique pairs ``i < j`` without loops."""
    lo, hi = edges.min(axis=1), edges.max(axis=1)
    keep = lo != hi
    key = np.unique(lo[keep].astype(np.int64) * n + hi[keep])
    return np.column_stack([key // n, key % n])


def check_boundaries(areas: Areas, k: int) -> None:
    """Refuse a boundary (or a table) whose whole population is below ``k``: no clustering inside meets it."""
    total = np.bincount(areas.boundary, weights=areas.population, minlength=len(areas.boundary_names))
    short = np.flatnonzero(total < k)
    if short.size:
        b = short[np.argmin(total[short])]
        where = (f"boundary {areas.boundary_names[b]!r}" if areas.boundary_source else "the area table")
        count = (f" ({short.size:,} boundar{'y' if short.size == 1 else 'ies'} short)"
                 if areas.boundary_source else "")
        raise DeidInputError(f"{where} holds {int(total[b]):,} people in all, fewer than k = {k:,}: no "
                             f"clustering within it meets the threshold{count}")


class _State:
    """Clusters during the rounds: population, area, weighted sum of unit vectors, boundary, edges."""

    def __init__(self, areas: Areas, edges: np.ndarray) -> None:
        n = len(areas)
        self.labels = np.arange(n)
        self.pop = areas.population.astype(np.int64)
        self.area = areas.area_km2.astype(float)
        weight = self.area if areas.has_area else np.ones(n)
        self.vec = areas.vectors * weight[:, None]
        self.bnd = areas.boundary.copy()
        self.edges = edges

    def caps(self) -> tuple[np.ndarray, np.ndarray]:
        return normalize(self.vec), cap_radius(self.area)

    def distance(self, centre: np.ndarray, radius: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return cap_hausdorff(great_circle(centre[a], centre[b]), radius[a], radius[b])

    def bridge(self, lonely: np.ndarray, centre: np.ndarray, radius: np.ndarray) -> int:
        """Link each cluster in ``lonely`` (below k, no edge) to its Hausdorff-nearest cluster in its boundary."""
        others = np.arange(len(self.pop))
        new = []
        for s in lonely:  # rare: islands and small components of the adjacency graph
            cand = others[(self.bnd == self.bnd[s]) & (others != s)]
            d = self.distance(centre, radius, np.full(cand.size, s), cand)
            new.append((s, cand[np.lexsort((cand, d))[0]]))
        self.edges = _canonical(np.vstack([self.edges, np.array(new, dtype=np.int64)]), len(self.pop))
        return len(new)

    def merge(self, a: np.ndarray, b: np.ndarray) -> None:
        """Merge the disjoint pairs ``(a[i], b[i])``; clusters keep their relative order."""
        parent = np.arange(len(self.pop))
        parent[a] = b
        keep, inv = np.unique(parent, return_inverse=True)
        c = len(keep)
        self.pop = np.bincount(inv, weights=self.pop, minlength=c).astype(np.int64)
        self.area = np.bincount(inv, weights=self.area, minlength=c)
        self.vec = np.column_stack([np.bincount(inv, weights=self.vec[:, j], minlength=c) for j in range(3)])
        self.bnd = self.bnd[keep]
        self.labels = inv[self.labels]
        self.edges = _canonical(inv[self.edges], c)


def _round_pairs(st: _State, small: np.ndarray, centre: np.ndarray, radius: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The merges of one round (see the module docstring) as disjoint pairs ``(a, b)``."""
    e = st.edges[small[st.edges[:, 0]] | small[st.edges[:, 1]]]
    d = st.distance(centre, radius, e[:, 0], e[:, 1])
    # directed picks: a cluster below k picks among its edges (distance, then the edge's ids)
    s0, s1 = small[e[:, 0]], small[e[:, 1]]
    src = np.concatenate([e[s0, 0], e[s1, 1]])
    dst = np.concatenate([e[s0, 1], e[s1, 0]])
    dd = np.concatenate([d[s0], d[s1]])
    order = np.lexsort((np.maximum(src, dst), np.minimum(src, dst), dd, src))
    first = order[np.concatenate([[True], src[order][1:] != src[order][:-1]])]
    s, t, dist = src[first], dst[first], dd[first]
    best = np.full(len(small), -1)
    best[s] = t
    mutual = small[t] & (best[t] == s) & (s < t)
    big = ~small[t]
    bs, bt, bd = s[big], t[big], dist[big]
    order = np.lexsort((bs, bd, bt))
    take = order[np.concatenate([[True], bt[order][1:] != bt[order][:-1]])] if order.size else order
    return np.concatenate([s[mutual], bs[take]]), np.concatenate([t[mutual], bt[take]])


def cluster_names(areas: Areas, first_area: np.ndarray) -> pd.Index:
    """Released cluster ids: ``<boundary>-<n>`` (numbered within the boundary) or ``C<n>``, zero-padded."""
    bnd = areas.boundary[first_area]
    number = pd.Series(bnd).groupby(bnd).cumcount().to_numpy() + 1
    width = len(str(int(number.max())))
    num = pd.Series(number).astype("str").str.zfill(width)
    if areas.boundary_source is None:
        return pd.Index(("C" + num).to_numpy(dtype=object))
    return pd.Index((pd.Series(areas.boundary_names[bnd]) + "-" + num).to_numpy(dtype=object))


def cluster_areas(areas: Areas, k: int, knn: int = DEFAULT_KNN,
                  progress: Callable[[int, int, int], None] | None = None) -> Clustering:
    """Cluster ``areas`` until every cluster holds at least ``k`` people (see the module docstring).

    ``knn``: neighbours per area when the table has no ``neighbors`` column. ``progress(round, clusters,
    clusters below k)`` is called after each round.
    """
    if k < 1:
        raise DeidInputError(f"k must be at least 1, got {k}")
    t0 = time.perf_counter()
    check_boundaries(areas, k)
    if areas.edges is not None:
        edges = areas.edges[areas.boundary[areas.edges[:, 0]] == areas.boundary[areas.edges[:, 1]]]
        adjacency = "neighbors column"
    else:
        edges = knn_edges(areas.vectors, areas.boundary, knn)
        adjacency = f"{knn} nearest representative points"
    st = _State(areas, edges)
    rounds = bridges = 0
    while True:
        small = st.pop < k
        if not small.any():
            break
        centre, radius = st.caps()
        degree = np.bincount(st.edges.ravel(), minlength=len(st.pop))
        lonely = np.flatnonzero(small & (degree == 0))
        if lonely.size:
            bridges += st.bridge(lonely, centre, radius)
        a, b = _round_pairs(st, small, centre, radius)
        st.merge(a, b)
        rounds += 1
        if progress is not None:
            progress(rounds, len(st.pop), int((st.pop < k).sum()))
    # clusters in table order of their first area
    _, first = np.unique(st.labels, return_index=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    labels = rank[st.labels]
    size = np.bincount(labels, minlength=len(order))
    return Clustering(labels=labels, population=st.pop[order], size=size, area_km2=st.area[order],
                      centre=normalize(st.vec[order]), names=cluster_names(areas, first[order]), k=k,
                      rounds=rounds, bridges=bridges, adjacency=adjacency, seconds=time.perf_counter() - t0)
