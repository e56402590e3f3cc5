"""Full-subtree policies as bit strings and the searches over them: Bisecting Policy Search and Directed
Policy Search (Benitez, Loukides & Malin 2010 §2.4, Algorithm 1). Knows nothing about data."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

BitAcceptable = Callable[[np.ndarray], bool]
"""Acceptability of a bit-string policy (bool array; 1 = keep the split after that value, 0 = merge)."""


def halfway(lo: np.ndarray, hi: np.ndarray, weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Benitez, Loukides & Malin 2010 §2.4.2 ``halfwayPoint(min, max)``: generalize half of the bits where they differ.

    ``lo`` is the specific end (min, unacceptable) and ``hi`` the general end
    (max, acceptable). ⌊d/2⌋ of the d differing bits are set to 0 in a copy of
    ``lo``, drawn without replacement with probability ∝ ``weights``
    (``w_sizeOfField + w_previousSolutions``: bits of large fields, and bits
    kept specific in many earlier solutions, are generalized more often).
    """
    diff = np.flatnonzero(lo != hi)
    w = weights[diff].astype(float)
    pick = rng.choice(diff, size=len(diff) // 2, replace=False, p=w / w.sum())
    cur = lo.copy()
    cur[pick] = False
    return cur


def bps(n_bits: int, acceptable: BitAcceptable, iterations: int, size_weight: np.ndarray,
        rng: np.random.Generator, progress: Callable[[int], None] | None = None) -> list[np.ndarray]:
    """Benitez, Loukides & Malin 2010 Algorithm 1, Bisecting Policy Search: one boundary policy per iteration.

    Each iteration starts from max = all 0 (most general) and min = all 1
    (most specific) and halves the Hamming distance until it is 1; max is then
    acceptable with an unacceptable child (a boundary policy). If the most
    general policy is unacceptable there is none; if the most specific one
    is acceptable it is the only answer.
    """
    top, bottom = np.zeros(n_bits, dtype=bool), np.ones(n_bits, dtype=bool)
    if not acceptable(top):
        return []
    if acceptable(bottom):
        return [bottom]
    solutions: list[np.ndarray] = []
    kept = np.zeros(n_bits)  # Σ_{s ∈ solutions} s[b_i]
    for it in range(iterations):
        hi, lo = top.copy(), bottom.copy()
        while np.count_nonzero(lo != hi) >= 2:  # levelsBetween(min, max) = |min ⊕ max|
            cur = halfway(lo, hi, size_weight + kept + 1, rng)
            if acceptable(cur):
                hi = cur
            else:
                lo = cur
        solutions.append(hi)
        kept += hi
        if progress:
            progress(it + 1)
    return solutions


def directed(n_bits: int, acceptable: BitAcceptable, iterations: int, rng: np.random.Generator,
             progress: Callable[[int], None] | None = None) -> list[np.ndarray]:
    """Benitez, Loukides & Malin 2010 §2.4.1, Directed Policy Search: a random walk from a random policy to the boundary.

    Acceptable start: walk down (set a random 0 bit) until unacceptable and
    report the parent; unacceptable start: walk up (clear a random 1 bit)
    until acceptable and report it.
    """
    top, bottom = np.zeros(n_bits, dtype=bool), np.ones(n_bits, dtype=bool)
    if not acceptable(top):
        return []
    if acceptable(bottom):
        return [bottom]
    solutions = []
    for it in range(iterations):
        cur = rng.random(n_bits) < 0.5
        if acceptable(cur):
            while True:
                child = cur.copy()
                child[rng.choice(np.flatnonzero(~cur))] = True
                if not acceptable(child):
                    break
                cur = child
        else:
            while not acceptable(cur):
                cur = cur.copy()
                cur[rng.choice(np.flatnonzero(cur))] = False
        solutions.append(cur)
        if progress:
            progress(it + 1)
    return solutions


def non_dominated(solutions: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Distinct solutions not dominated by another (Benitez, Loukides & Malin 2010 Def. 2.1: a more specific acceptable policy)."""
    uniq = np.unique(np.array(solutions, dtype=bool), axis=0) if len(solutions) else np.zeros((0, 0), dtype=bool)
    if not len(uniq):
        return []
    # s is dominated by o when o ⊇ s (o keeps every split s keeps) and o != s
    sup = (uniq[:, None, :] | ~uniq[None, :, :]).all(axis=2)  # sup[o, s]: o ⊇ s
    np.fill_diagonal(sup, False)
    return [uniq[j] for j in range(len(uniq)) if not sup[:, j].any()]
