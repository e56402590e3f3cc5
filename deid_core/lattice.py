"""Full-domain generalization lattice and El Emam's OLA with predictive tagging.

A node is a tuple of hierarchy levels, one per QI (``0 <= l_q <= height_q``);
node ``a`` is a generalization of ``b`` when ``a >= b`` componentwise.
Acceptability (k-anonymity or a risk threshold with a suppression limit) is
monotone: every generalization of an acceptable node is acceptable. OLA
(El Emam et al. 2009, the method behind the release of seed
El Emam et al. 2012 (Heritage Health Prize); docs/deid_search.md) bisects the sub-lattice between a
bottom node B and a top node T on the middle height; each evaluated node tags
its whole up-set (acceptable) or down-set (not acceptable), so most nodes are
never evaluated. The tags live in one numpy array shaped like the lattice, so
tagging a cone is one slice assignment.

This module knows nothing about data: the caller passes ``is_acceptable``.
"""
from __future__ import annotations

import itertools
from typing import Callable, Iterator, Sequence

import numpy as np

Node = tuple[int, ...]

UNKNOWN, ACCEPTABLE, REJECTED = 0, 1, 2


class Lattice:
    """The full-domain lattice of per-QI levels ``0..heights[q]`` with predictive tags."""

    def __init__(self, heights: Sequence[int]) -> None:
        self.heights = tuple(int(h) for h in heights)
        self.tags = np.zeros(tuple(h + 1 for h in self.heights), dtype=np.int8)

    @property
    def size(self) -> int:
        return int(self.tags.size)

    @property
    def bottom(self) -> Node:
        return tuple(0 for _ in self.heights)

    @property
    def top(self) -> Node:
        return self.heights

    def tag(self, node: Node) -> int:
        return int(self.tags[node])

    def tag_up(self, node: Node) -> None:
        """Tag ``node`` and all its generalizations acceptable."""
        self.tags[tuple(slice(l, None) for l in node)] = ACCEPTABLE

    def tag_down(self, node: Node) -> None:
        """Tag ``node`` and all its specializations not acceptable."""
        self.tags[tuple(slice(0, l + 1) for l in node)] = REJECTED

    def all_nodes(self) -> Iterator[Node]:
        return itertools.product(*(range(h + 1) for h in self.heights))


def nodes_at(bottom: Node, top: Node, h: int) -> Iterator[Node]:
    """Nodes ``n`` with ``bottom <= n <= top`` and ``sum(n - bottom) == h`` (one height of a sub-lattice)."""
    spans = [t - b for b, t in zip(bottom, top)]
    rest = list(itertools.accumulate(reversed(spans)))[::-1] + [0]  # max remaining steps from position i on

    def rec(i: int, left: int, acc: list[int]) -> Iterator[Node]:
        if i == len(spans):
            if left == 0:
                yield tuple(b + a for b, a in zip(bottom, acc))
            return
        lo = max(0, left - rest[i + 1])
        for a in range(lo, min(spans[i], left) + 1):
            acc.append(a)
            yield from rec(i + 1, left - a, acc)
            acc.pop()

    yield from rec(0, h, [])


def ola(lattice: Lattice, is_acceptable: Callable[[Node], bool]) -> list[Node]:
    """El Emam's OLA ``Kmin(B, T)``: the minimal acceptable nodes (empty if the top is not acceptable).

    ``is_acceptable`` is called only on untagged nodes; each call tags a
    cone. Returns the acceptable nodes with no acceptable specialization
    ("k-minimal" nodes); with a monotone loss the optimum is among them, and
    every acceptable node of the lattice ends up tagged ``ACCEPTABLE``.
    """
    def check(node: Node) -> bool:
        t = lattice.tag(node)
        if t != UNKNOWN:
            return t == ACCEPTABLE
        ok = bool(is_acceptable(node))
        (lattice.tag_up if ok else lattice.tag_down)(node)
        return ok

    if not check(lattice.top):
        return []
    done: set[tuple[Node, Node]] = set()

    def kmin(b: Node, t: Node) -> None:
        if (b, t) in done:  # tags only grow, so a repeated sub-lattice adds nothing new
            return
        done.add((b, t))
        if (lattice.tags[tuple(slice(lo, hi + 1) for lo, hi in zip(b, t))] != UNKNOWN).all():
            return  # nothing left to evaluate here; the minimal nodes are read off the tags below
        height = sum(t) - sum(b)
        if height > 1:
            for n in nodes_at(b, t, height // 2):
                if check(n):
                    kmin(b, n)
                else:
                    kmin(n, t)
        else:
            check(b)

    kmin(lattice.bottom, lattice.top)
    return minimal_nodes(lattice)


def minimal_nodes(lattice: Lattice) -> list[Node]:
    """Acceptable-tagged nodes none of whose direct specializations is acceptable-tagged.

    After :func:`ola` every acceptable node is tagged (each lies above a
    minimal node, whose up-set was tagged when it was found), so these are
    exactly the k-minimal nodes.
    """
    acc = lattice.tags == ACCEPTABLE
    has_acc_child = np.zeros_like(acc)
    for axis in range(acc.ndim):
        src = [slice(None)] * acc.ndim
        dst = [slice(None)] * acc.ndim
        src[axis], dst[axis] = slice(0, -1), slice(1, None)
        has_acc_child[tuple(dst)] |= acc[tuple(src)]
    return [tuple(int(x) for x in n) for n in np.argwhere(acc & ~has_acc_child)]


# ------------------------------------------------------------------ full-subtree bit strings

BitAcceptable = Callable[[np.ndarray], bool]
"""Acceptability of a bit-string policy (bool array; 1 = keep the split after that value, 0 = merge)."""


def halfway(lo: np.ndarray, hi: np.ndarray, weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Seed 000 §2.4.2 ``halfwayPoint(min, max)``: generalize half of the bits where they differ.

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
    """Seed 000 Algorithm 1, Bisecting Policy Search: one boundary policy per iteration.

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
    """Seed 000 §2.4.1, Directed Policy Search: a random walk from a random policy to the boundary.

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
