"""Who is near whom: adjacency from the nearest representative points when the area table lists no
neighbors, and the exact n nearest areas by cap Hausdorff distance (El Emam & Arbuckle, *Anonymizing Health
Data*, ch. 9, "Flat Earth" and "Fast Nearest Neighbor"; docs/geography.md, "Neighbors").

Both use a k-d tree on the areas' unit vectors: the straight-line (chord) distance between unit vectors is an
increasing function of the great-circle distance, so the tree's neighbor ranks are the great-circle ranks
exactly — where the book approximates with a flat-Earth Euclidean distance or a Hilbert curve.
scipy's k-d tree is imported on use (scipy.spatial takes ~0.2 s to import, and every ``deid`` command
builds the parser that names this package's defaults).
"""
from __future__ import annotations

import numpy as np

from .distance import EARTH_RADIUS_KM, cap_hausdorff, great_circle

#: Hausdorff distances equal to the millimetre (1e-6 km) are ties.
TIE_DECIMALS = 6


def _arc(chord: np.ndarray, radius: float = EARTH_RADIUS_KM) -> np.ndarray:
    """Great-circle distance of a chord between unit vectors."""
    return radius * 2.0 * np.arcsin(np.clip(chord / 2.0, 0.0, 1.0))


def _separated(vectors: np.ndarray, boundary: np.ndarray) -> np.ndarray:
    """Unit vectors with the boundary code as a 4th coordinate 4 apart: two areas in different boundaries
    are farther apart (≥ 4) than any two areas in the same one (chord ≤ 2)."""
    return np.column_stack([vectors, 4.0 * boundary.astype(float)])


def knn_edges(vectors: np.ndarray, boundary: np.ndarray, k: int) -> np.ndarray:
    """Pairs ``i < j`` (unique) where ``j`` is one of the ``k`` nearest representative points of ``i`` in
    the same boundary, or the other way round."""
    n = len(vectors)
    if n < 2 or k < 1:
        return np.empty((0, 2), dtype=np.int64)
    from scipy.spatial import cKDTree
    _, nbr = cKDTree(_separated(vectors, boundary)).query(_separated(vectors, boundary), k=min(k + 1, n))
    nbr = nbr.reshape(n, -1)
    src = np.repeat(np.arange(n), nbr.shape[1])
    dst = nbr.ravel()
    keep = (dst != src) & (dst < n)
    src, dst = src[keep], dst[keep]
    keep = boundary[src] == boundary[dst]
    lo, hi = np.minimum(src[keep], dst[keep]), np.maximum(src[keep], dst[keep])
    key = np.unique(lo.astype(np.int64) * n + hi)
    return np.column_stack([key // n, key % n])


def _first_rank(sorted_rows: np.ndarray) -> np.ndarray:
    """Competition rank of each entry of row-sorted values: how many entries of the row are strictly smaller."""
    t, m = sorted_rows.shape
    start = np.zeros((t, m), dtype=np.int64)
    if m > 1:
        new = sorted_rows[:, 1:] != sorted_rows[:, :-1]
        start[:, 1:] = np.where(new, np.arange(1, m), 0)
    return np.maximum.accumulate(start, axis=1)


def nearest_by_hausdorff(vectors: np.ndarray, radii: np.ndarray, sources: np.ndarray, n: int
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The areas within the ``n`` nearest of each source area, by cap Hausdorff distance, with their rank.

    Rank = how many areas are strictly nearer (ties share a rank; a source is its own rank 0), and an area
    is returned when its rank is below ``n``. Exact: candidates come from the k-d tree by centre distance
    ``c``; since Hausdorff ≥ c, the candidates of a source suffice once the ``n``-th smallest Hausdorff
    distance among them is below the centre distance of the farthest candidate, else the candidate list
    doubles for that source. Returns ``(source position, area, rank)`` arrays.
    """
    total = len(vectors)
    n = min(n, total)
    from scipy.spatial import cKDTree
    tree = cKDTree(vectors)
    out_s, out_a, out_r = [], [], []
    todo = np.arange(len(sources))
    m = min(total, 2 * n)
    while todo.size:
        src = sources[todo]
        chord, cand = tree.query(vectors[src], k=m)
        chord, cand = chord.reshape(len(src), m), cand.reshape(len(src), m)
        c = great_circle(vectors[src][:, None, :], vectors[cand])
        h = np.round(cap_hausdorff(c, radii[src][:, None], radii[cand]), TIE_DECIMALS)
        order = np.argsort(h, axis=1, kind="stable")
        hs = np.take_along_axis(h, order, axis=1)
        nth = hs[:, n - 1]
        done = np.full(len(src), m == total) | (nth < np.round(_arc(chord[:, -1]), TIE_DECIMALS))
        rows = np.flatnonzero(done)
        rank = _first_rank(hs[rows])
        keep = hs[rows] <= nth[rows, None]
        r_idx, col = np.nonzero(keep)
        out_s.append(todo[rows][r_idx])
        out_a.append(np.take_along_axis(cand[rows], order[rows], axis=1)[r_idx, col])
        out_r.append(rank[r_idx, col])
        todo = todo[~done]
        m = min(total, 2 * m)
    return np.concatenate(out_s), np.concatenate(out_a), np.concatenate(out_r)
