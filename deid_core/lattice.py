"""Full-domain generalization lattice and El Emam's OLA with predictive tagging.

A node is a tuple of hierarchy levels, one per QI (``0 <= l_q <= height_q``);
node ``a`` is a generalization of ``b`` when ``a >= b`` componentwise.
Acceptability (k-anonymity or a risk threshold with a suppression limit) is
monotone: every generalization of an acceptable node is acceptable. OLA
(El Emam et al. 2009, the method behind the release of seed
``003_793c765737a2bc9a.txt``; DEID.md §3) bisects the sub-lattice between a
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
