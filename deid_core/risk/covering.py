"""Covering designs C(v, k, t): blocks of k of the v quasi-identifiers such that every t of them lie
together in at least one block (El Emam & Arbuckle, *Anonymizing Health Data*, ch. 7, "Covering
Designs"; docs/subsampling.md, "Adversaries who know m of n quasi-identifiers").

An adversary who knows any t = m of the v = n QIs is covered by measuring the risk on each block: a
class on a block's k QIs is a union of classes on any t of them, so the block's risk is at least the
risk of every t-subset it contains, and the maximum over the blocks bounds the maximum over all
C(v, t) subsets from above (it equals it when k = t).

No table of published designs is reachable here, so designs are built by a documented heuristic:

1. **greedy** (Chvátal's set-cover greedy): enumerate the C(v, k) candidate blocks, repeatedly take the
   one covering the most t-subsets not yet covered (ties: the first in lexicographic order) until every
   t-subset is covered — at most ``1 + ln C(k, t)`` times the optimum;
2. **prune**: drop blocks, last chosen first, whose t-subsets are all covered by other blocks;
3. **local search** (optional, a time budget): simulated annealing after Nurmela & Östergård ("Upper
   bounds for covering designs by simulated annealing", Congressus Numerantium 96, 1993) — remove the
   block that alone covers the fewest t-subsets, then move blocks to cover the t-subsets left uncovered
   (pick an uncovered t-subset T and a block sharing the most points with T, swap points so the block
   holds T; accept a move that uncovers d more t-subsets with probability ``exp(−d/τ)``); each time
   nothing is left uncovered the smaller design is kept and another block removed.

When enumerating the candidates would exceed :data:`MAX_INCIDENCES` t-subset/block pairs, blocks are
built instead one at a time from the first uncovered t-subset, adding the QI that covers the most
uncovered t-subsets (a constructive greedy), then pruned. Every design is checked to cover
(:func:`is_covering`) before it is returned. The Schönheim bound (:func:`schonheim_bound`) is a lower
bound of the smallest design.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from ..errors import DeidInputError, ParameterError

#: Candidate-block enumeration is used while C(v, k) × C(k, t) stays below this (memory ~16 bytes each).
MAX_INCIDENCES = 8_000_000
#: The most t-subsets (C(v, t)) a design is built for; beyond it the risk of every block is too many passes.
MAX_TSETS = 2_000_000


def schonheim_bound(v: int, k: int, t: int) -> int:
    """The Schönheim lower bound ``L(v, k, t) = ⌈v/k · L(v−1, k−1, t−1)⌉``, ``L(·, ·, 0) = 1`` (Schönheim,
    "On coverings", Pacific J. Math. 14, 1964), in exact integer arithmetic."""
    _check(v, k, t)
    bound = 1
    for i in range(t - 1, -1, -1):  # innermost first: L(v−t+1, k−t+1, 1), ..., L(v, k, t)
        vi, ki = v - i, k - i
        bound = -(-vi * bound // ki)
    return bound


def _check(v: int, k: int, t: int) -> None:
    if not 1 <= t <= k <= v:
        raise DeidInputError(f"a covering design C(v, k, t) needs 1 <= t <= k <= v, got C({v}, {k}, {t})")
    if v > 62:
        raise DeidInputError(f"covering designs are built for at most 62 quasi-identifiers, got {v}")


def _combos(v: int, r: int) -> np.ndarray:
    """All r-subsets of range(v) in lexicographic order, one per row (int8)."""
    n = math.comb(v, r)
    out = np.fromiter((x for c in combinations(range(v), r) for x in c), dtype=np.int8, count=n * r)
    return out.reshape(n, r)


def _masks(rows: np.ndarray) -> np.ndarray:
    """Bit mask (int64) of each row of point indices."""
    return np.bitwise_or.reduce(np.left_shift(np.int64(1), rows.astype(np.int64)), axis=-1) if rows.shape[-1] \
        else np.zeros(rows.shape[:-1], dtype=np.int64)


@dataclass
class CoveringDesign:
    """Blocks (each a sorted tuple of point indices 0..v−1) covering every t-subset of v points."""

    v: int
    k: int
    t: int
    blocks: list[tuple[int, ...]]
    method: str
    lower_bound: int = field(init=False)

    def __post_init__(self) -> None:
        self.lower_bound = schonheim_bound(self.v, self.k, self.t)

    def __len__(self) -> int:
        return len(self.blocks)

    def summary(self) -> dict:
        """JSON-ready: v, k, t, the number of blocks, the Schönheim bound, C(v, t) and the method."""
        return {"v": self.v, "k": self.k, "t": self.t, "blocks": len(self.blocks), "schonheim_bound": self.lower_bound,
                "all_t_subsets": math.comb(self.v, self.t), "method": self.method}


def is_covering(blocks: list[tuple[int, ...]], v: int, t: int) -> bool:
    """True when every t-subset of range(v) lies inside at least one block."""
    if not blocks:
        return False
    tmask = _masks(_combos(v, t))
    covered = np.zeros(len(tmask), dtype=bool)
    for b in blocks:
        bm = int(_masks(np.asarray(b, dtype=np.int64)))
        covered |= (tmask & ~bm) == 0
    return bool(covered.all())


def _prune(inc: list[np.ndarray], n_tsets: int) -> list[int]:
    """Indices of the blocks kept after dropping, last first, every block whose t-subsets are covered twice."""
    count = np.zeros(n_tsets, dtype=np.int64)
    for ts in inc:
        np.add.at(count, ts, 1)
    keep = []
    for i in range(len(inc) - 1, -1, -1):
        if (count[inc[i]] >= 2).all():
            count[inc[i]] -= 1
        else:
            keep.append(i)
    return sorted(keep)


def _greedy_enumerated(v: int, k: int, t: int) -> list[tuple[int, ...]]:
    """Chvátal's greedy over all C(v, k) candidate blocks, then :func:`_prune`."""
    blocks = _combos(v, k)
    tsets = _combos(v, t)
    tmask = _masks(tsets)
    order = np.argsort(tmask)
    sub = _combos(k, t)                                    # positions of the t-subsets inside a block
    inc = _masks(blocks[:, sub].astype(np.int64))          # (B, C(k, t)) t-subset masks of each block
    inc = order[np.searchsorted(tmask[order], inc)]        # -> t-subset index
    flat_b = np.repeat(np.arange(len(blocks)), inc.shape[1])
    # every t-subset lies in exactly C(v − t, k − t) blocks: row j of blocks_of_t lists them
    blocks_of_t = flat_b[np.argsort(inc.ravel(), kind="stable")].reshape(len(tsets), math.comb(v - t, k - t))
    gain = np.full(len(blocks), inc.shape[1], dtype=np.int64)
    covered = np.zeros(len(tsets), dtype=bool)
    chosen: list[int] = []
    left = len(tsets)
    while left:
        b = int(np.argmax(gain))
        new = inc[b][~covered[inc[b]]]
        covered[new] = True
        left -= len(new)
        chosen.append(b)
        gain -= np.bincount(blocks_of_t[new].ravel(), minlength=len(blocks))
    keep = _prune([inc[b] for b in chosen], len(tsets))
    return [tuple(int(x) for x in blocks[chosen[i]]) for i in keep]


def _greedy_constructive(v: int, k: int, t: int) -> list[tuple[int, ...]]:
    """One block at a time: start from the first uncovered t-subset and add, k − t times, the point whose
    addition covers the most uncovered t-subsets (ties: the smallest index); then :func:`_prune`."""
    tsets = _combos(v, t)
    tmask = _masks(tsets)
    covered = np.zeros(len(tsets), dtype=bool)
    chosen_masks: list[int] = []
    while not covered.all():
        j = int(np.argmax(~covered))
        bm = int(tmask[j])
        for _ in range(k - t):
            unc = tmask[~covered]
            best, best_gain = -1, -1
            for p in range(v):
                if bm >> p & 1:
                    continue
                g = int(((unc & ~np.int64(bm | (1 << p))) == 0).sum())
                if g > best_gain:
                    best, best_gain = p, g
            bm |= 1 << best
        covered |= (tmask & ~np.int64(bm)) == 0
        chosen_masks.append(bm)
    order = np.argsort(tmask)
    inc = []
    for bm in chosen_masks:
        pts = np.array([p for p in range(v) if bm >> p & 1], dtype=np.int64)
        m = _masks(pts[_combos(k, t)])
        inc.append(order[np.searchsorted(tmask[order], m)])
    keep = _prune(inc, len(tsets))
    return [tuple(p for p in range(v) if chosen_masks[i] >> p & 1) for i in keep]


def improve(blocks: list[tuple[int, ...]], v: int, k: int, t: int, seconds: float, seed: int = 0,
            temperature: float = 0.3, cooling: float = 0.99999) -> list[tuple[int, ...]]:
    """The smallest covering found within ``seconds`` by the local search of the module docstring (step 3),
    starting from the covering ``blocks`` (it stops early at the Schönheim bound); the temperature τ starts at ``temperature`` after each removal
    and is multiplied by ``cooling`` per move (floor 0.02)."""
    rng = np.random.default_rng(seed)
    binom = np.array([[math.comb(n, i) for i in range(t + 1)] for n in range(v)], dtype=np.int64)
    sub = _combos(k, t).astype(np.int64)
    col = np.arange(1, t + 1)
    tsets = _combos(v, t).astype(np.int64)
    by_rank = np.empty_like(tsets)
    by_rank[binom[tsets, col].sum(axis=1)] = tsets           # colex rank -> t-subset

    def ranks(points: np.ndarray) -> np.ndarray:
        """Colex ranks of the t-subsets of a block."""
        return binom[np.sort(points)[sub], col].sum(axis=1)

    cur = np.array(blocks, dtype=np.int64)
    count = np.zeros(len(tsets), dtype=np.int64)
    for b in cur:
        count[ranks(b)] += 1
    best = cur.copy()
    deadline = time.perf_counter() + seconds
    floor = schonheim_bound(v, k, t)
    while time.perf_counter() < deadline and len(cur) > floor:  # at the bound the design is optimal
        alone = [int((count[ranks(b)] == 1).sum()) for b in cur]
        i = int(np.argmin(alone))
        count[ranks(cur[i])] -= 1
        cur = np.delete(cur, i, axis=0)
        masks = _masks(cur)
        cost, tau = int((count == 0).sum()), temperature
        while cost and time.perf_counter() < deadline:
            for _ in range(200):
                unc = np.flatnonzero(count == 0)
                target = by_rank[unc[rng.integers(len(unc))]]
                shared = np.bitwise_count(masks & _masks(target))
                cand = np.flatnonzero(shared == shared.max())
                j = int(cand[rng.integers(len(cand))])
                old = cur[j]
                inside = np.isin(old, target)
                rest = rng.permutation(old[~inside])
                new = np.concatenate([target, rest[:len(rest) - (t - int(inside.sum()))]])
                r_old, r_new = ranks(old), ranks(new)
                count[r_old] -= 1
                d = int((count[r_old] == 0).sum())
                count[r_new] += 1
                d -= int((count[r_new] == 1).sum())
                if d <= 0 or rng.random() < math.exp(-d / tau):
                    cur[j], masks[j], cost = new, _masks(new), cost + d
                else:
                    count[r_new] -= 1
                    count[r_old] += 1
                tau = max(tau * cooling, 0.02)
                if not cost:
                    break
        if cost:
            break
        best = cur.copy()
    return [tuple(sorted(int(x) for x in b)) for b in best]


def covering_design(v: int, k: int, t: int, improve_seconds: float = 0.0, seed: int = 0) -> CoveringDesign:
    """A C(v, k, t) covering design (module docstring): exact in the trivial cases (k = v: one block;
    k = t: every t-subset; t = 1: ⌈v/k⌉ blocks), else greedy + prune, then up to ``improve_seconds`` of
    local search (:func:`improve`, seeded by ``seed``)."""
    _check(v, k, t)
    if math.comb(v, t) > MAX_TSETS:
        raise ParameterError(f"C({v}, {t}) = {math.comb(v, t):,} subsets of known quasi-identifiers is too many "
                             f"(at most {MAX_TSETS:,}); use fewer quasi-identifiers or a smaller {{known}}", "known")
    if k == v:
        return CoveringDesign(v, k, t, [tuple(range(v))], "single block")
    if k == t:
        return CoveringDesign(v, k, t, [tuple(int(x) for x in c) for c in _combos(v, t)], "all t-subsets")
    if t == 1:
        starts = [min(i * k, v - k) for i in range(-(-v // k))]  # the last block is shifted to end at v
        blocks = [tuple(range(s, s + k)) for s in starts]
        return CoveringDesign(v, k, t, blocks, "partition")
    if math.comb(v, k) * math.comb(k, t) <= MAX_INCIDENCES:
        best = _greedy_enumerated(v, k, t)
        method = f"greedy over all C({v}, {k}) blocks + pruning"
    else:
        best = _greedy_constructive(v, k, t)
        method = "constructive greedy (block by block) + pruning"
    if improve_seconds > 0:
        best = improve(best, v, k, t, improve_seconds, seed)
        method += f" + {improve_seconds:g} s of local search"
    if not is_covering(best, v, t):  # pragma: no cover - a construction bug, never bad input
        raise RuntimeError(f"internal error: the C({v}, {k}, {t}) design does not cover")
    return CoveringDesign(v, k, t, best, method)
