"""Interval (box) k-anonymity for numeric QIs, and the statistics left computable (Xiang et al. 2014, §4–5).

* Distance from the box centre p to a point q: weighted Chebyshev
  ``d(p, q) = max_i a_i |x_i(p) − x_i(q)|`` with ``a_i = |∂C/∂x_i|``.
* Each point p gets the box spanned by itself and its k−1 nearest points
  under d; a box is made only when neither p nor any of those points is in a
  box yet; leftover points join the box whose centre is nearest and widen it.
* A researcher sees per record and attribute an interval; the range of the
  mean is exact (``[mean(lo), mean(hi)]``); the range of the (population)
  variance is exact at the low end for any intervals and at the high end when
  no interval is a proper subset of another (no-nesting, Xiang et al. 2007);
  otherwise the high end is a guaranteed upper bound.

Ambiguities resolved: weights are global, ``a_i = 1 / range_i`` (C = the sum
of the unit-scaled means), not re-estimated at each box centre; centres are
processed densest first (increasing distance to their (k−1)-th neighbour,
ties by row order), so small boxes are made before large ones; leftovers are
merged in row order, distance measured to the box's centre point.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import ParameterError, literal
from ..risk.equivalence_classes import ec_sizes_of
from .result import SearchResult


def numeric_matrix(df: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """The QI columns as floats; a non-numeric or missing value is bad input."""
    cols = []
    for c in columns:
        x = pd.to_numeric(df[c].astype(object), errors="coerce").to_numpy(dtype=float)
        bad = np.flatnonzero(~np.isfinite(x))
        if len(bad):
            value = literal(repr(df[c].iloc[bad[0]]))
            raise ParameterError(f"{{method}} boxes: column {literal(repr(c))} value {value} on data row {bad[0] + 1} "
                                 "is not a number", "method")
        cols.append(x)
    return np.column_stack(cols)


def default_weights(x: np.ndarray) -> np.ndarray:
    """``a_i = 1 / range_i`` (1 for a constant column)."""
    span = x.max(axis=0) - x.min(axis=0)
    return 1.0 / np.where(span > 0, span, 1.0)


def knn(x: np.ndarray, a: np.ndarray, k: int, chunk: int = 256, tree: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Per point: its k nearest points (itself first) under the weighted Chebyshev distance, and the k-th distance.

    The weighted distance is the plain Chebyshev distance of the scaled points
    ``a_i x_i``: a k-d tree (scipy, when installed) answers it in
    O(N log N); otherwise chunked O(N²) numpy. Ties between equidistant
    neighbours may be broken differently by the two paths.
    """
    try:
        from scipy.spatial import cKDTree
    except ImportError:  # pragma: no cover - scipy is optional
        cKDTree = None
    cKDTree = cKDTree if tree else None
    if cKDTree is not None:
        d, idx = cKDTree(x * a).query(x * a, k=k, p=np.inf)
        d, idx = d.reshape(len(x), k), idx.reshape(len(x), k)
        own = idx == np.arange(len(x))[:, None]
        has = own.any(axis=1)  # duplicates may push the point itself out of its k: put it first
        idx[~has, -1] = np.flatnonzero(~has)
        order = np.argsort(~(idx == np.arange(len(x))[:, None]), axis=1, kind="stable")
        return np.take_along_axis(idx, order, axis=1), d[:, -1]
    n = len(x)
    idx = np.empty((n, k), dtype=np.int64)
    radius = np.empty(n)
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        d = np.zeros((e - s, n))
        for i in range(x.shape[1]):
            np.maximum(d, a[i] * np.abs(x[s:e, i, None] - x[None, :, i]), out=d)
        d[np.arange(e - s), np.arange(s, e)] = -1.0  # the point itself first
        part = np.argpartition(d, k - 1, axis=1)[:, :k]
        dd = np.take_along_axis(d, part, axis=1)
        order = np.argsort(dd, axis=1, kind="stable")
        idx[s:e] = np.take_along_axis(part, order, axis=1)
        radius[s:e] = np.take_along_axis(dd, order, axis=1)[:, -1]
    return idx, radius


@dataclass
class Boxes:
    """Box id per record and per-box bounds (boxes × attributes)."""

    box: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    centres: np.ndarray

    @property
    def sizes(self) -> np.ndarray:
        return np.bincount(self.box, minlength=len(self.lo))


def anonymize(x: np.ndarray, k: int, a: np.ndarray | None = None) -> Boxes:
    """Xiang et al. 2014 §5: boxes of each point's k−1 nearest neighbours, leftovers merged into the nearest box."""
    n = len(x)
    if k < 1:
        raise ParameterError(f"{{k}} must be a positive integer, got {k}", "k")
    if n < k:
        raise ParameterError(f"{{method}} boxes: {n} records cannot form a box of k = {k}", "method")
    a = default_weights(x) if a is None else np.asarray(a, dtype=float)
    nn, radius = knn(x, a, k)
    box = np.full(n, -1, dtype=np.int64)
    centres = []
    for p in np.argsort(radius, kind="stable"):
        if (box[nn[p]] < 0).all():
            box[nn[p]] = len(centres)
            centres.append(p)
    c = np.array(centres, dtype=np.int64)
    left = np.flatnonzero(box < 0)
    for s in range(0, len(left), 1024):  # nearest centre under d(centre, point)
        part = left[s:s + 1024]
        d = np.zeros((len(part), len(c)))
        for i in range(x.shape[1]):
            np.maximum(d, a[i] * np.abs(x[c, i][None, :] - x[part, i][:, None]), out=d)
        box[part] = np.argmin(d, axis=1)
    frame = pd.DataFrame(x).assign(box=box).groupby("box")
    return Boxes(box, frame.min().to_numpy(), frame.max().to_numpy(), c)


def released(df: pd.DataFrame, columns: list[str], b: Boxes) -> pd.DataFrame:
    """Each record's QIs as its box's interval ``[lo, hi]`` (a single value when lo = hi)."""
    out = df.copy()
    fmt = lambda v: f"{v:g}"
    for i, c in enumerate(columns):
        labels = np.array([fmt(lo) if lo == hi else f"[{fmt(lo)}, {fmt(hi)}]" for lo, hi in zip(b.lo[:, i], b.hi[:, i])],
                          dtype=object)
        out[c] = pd.Categorical(labels[b.box])
    return out


# ----------------------------------------------------------------- statistics on intervals

def mean_range(lo: np.ndarray, hi: np.ndarray) -> tuple[float, float]:
    """Exact range of the mean."""
    return float(lo.mean()), float(hi.mean())


def variance_min(lo: np.ndarray, hi: np.ndarray) -> float:
    """Exact minimum of the population variance over x_j ∈ [lo_j, hi_j] (any intervals).

    At the optimum ``x_j = clamp(E, lo_j, hi_j)``; for each zone between
    consecutive endpoints E is solved in closed form (prefix sums).
    """
    n = len(lo)
    z = np.unique(np.concatenate([lo, hi]))
    hs, ls = np.sort(hi), np.sort(lo)
    hcs, hcs2 = np.concatenate([[0], np.cumsum(hs)]), np.concatenate([[0], np.cumsum(hs ** 2)])
    lcs, lcs2 = np.concatenate([[0], np.cumsum(ls)]), np.concatenate([[0], np.cumsum(ls ** 2)])
    za, zb = np.concatenate([[z[0]], z]), np.concatenate([z, [z[-1]]])  # zones [za, zb], incl. degenerate ends
    nh = np.searchsorted(hs, za, side="right")  # hi_j <= za: x_j = hi_j
    nl0 = np.searchsorted(ls, zb, side="left")  # lo_j >= zb: x_j = lo_j (those from nl0 on)
    sh, sh2 = hcs[nh], hcs2[nh]
    sl, sl2 = lcs[-1] - lcs[nl0], lcs2[-1] - lcs2[nl0]
    fixed = nh + (n - nl0)
    free = n - fixed
    with np.errstate(invalid="ignore", divide="ignore"):
        e = np.where(fixed > 0, (sh + sl) / np.maximum(fixed, 1), za)
    e = np.where(free == n, za, e)
    ok = (e >= za - 1e-12) & (e <= zb + 1e-12)
    v = (sh2 + sl2 + free * e ** 2) / n - ((sh + sl + free * e) / n) ** 2
    return float(max(v[ok].min(), 0.0)) if ok.any() else 0.0


def nested(lo: np.ndarray, hi: np.ndarray) -> bool:
    """Whether some interval is a proper subset of another (equal intervals are not)."""
    u = np.unique(np.column_stack([lo, hi]), axis=0)
    o = np.lexsort((-u[:, 1], u[:, 0]))  # by lo, then wider first
    h = u[o, 1]
    prev_max = np.concatenate([[-np.inf], np.maximum.accumulate(h)[:-1]])
    return bool((prev_max >= h).any())


def variance_max(lo: np.ndarray, hi: np.ndarray) -> tuple[float, bool]:
    """(maximum population variance, exact?) — exact under no-nesting, else an upper bound.

    No-nesting: with intervals sorted by midpoint the maximum puts the first t
    at their lower and the rest at their upper endpoints for some t (Xiang et
    al. 2007); all n+1 splits are checked with prefix sums. With nesting:
    ``(1/n) Σ max((hi_j − E_lo)², (E_hi − lo_j)²)``, which bounds every
    configuration.
    """
    n = len(lo)
    if nested(lo, hi):
        e_lo, e_hi = mean_range(lo, hi)
        return float(np.maximum((hi - e_lo) ** 2, (e_hi - lo) ** 2).mean()), False
    o = np.argsort((lo + hi) / 2, kind="stable")
    l, h = lo[o], hi[o]
    pl, pl2 = np.concatenate([[0], np.cumsum(l)]), np.concatenate([[0], np.cumsum(l ** 2)])
    sh, sh2 = np.concatenate([np.cumsum(h[::-1])[::-1], [0]]), np.concatenate([np.cumsum((h ** 2)[::-1])[::-1], [0]])
    s, s2 = pl + sh, pl2 + sh2
    return float((s2 / n - (s / n) ** 2).max()), True


def interval_statistics(lo: np.ndarray, hi: np.ndarray, truth: np.ndarray | None = None) -> dict:
    """Mean range (exact) and variance range (exact low end; high end exact iff no nesting) of one attribute."""
    vmax, exact = variance_max(lo, hi)
    out = {"mean": list(mean_range(lo, hi)), "variance": [variance_min(lo, hi), vmax], "variance_max_exact": exact,
           "nested": not exact}
    if truth is not None:
        out["true_mean"], out["true_variance"] = float(truth.mean()), float(truth.var())
    return out


def search_boxes(df: pd.DataFrame, qis: list[str], k: int) -> tuple[SearchResult, pd.DataFrame]:
    """k-anonymous interval boxes over the numeric ``qis``: the release, its risk, the mean box width
    per attribute on the unit scale (the loss), and the statistics left computable."""
    t0 = time.perf_counter()
    x = numeric_matrix(df, qis)
    b = anonymize(x, k)
    out = released(df, qis, b)
    width = (b.hi - b.lo)[b.box] / np.where(np.ptp(x, axis=0) > 0, np.ptp(x, axis=0), 1.0)
    f = ec_sizes_of(out, qis)
    policy = {"risk": float(1.0 / f.min()), "information_loss": float(width.mean()), "suppressed_records": 0,
              "boxes": int(len(b.lo)), "min_box_size": int(b.sizes.min()),
              "statistics": {q: interval_statistics(b.lo[b.box, i], b.hi[b.box, i], x[:, i]) for i, q in enumerate(qis)}}
    return SearchResult("boxes", [policy], int(len(x)), time.perf_counter() - t0, {
        "k": k, "loss": "mean box width per attribute on the unit scale", "weights": "1/range (global)",
    }), out
