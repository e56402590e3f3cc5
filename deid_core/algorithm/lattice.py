"""The full-domain generalization lattice with predictive tags (El Emam et al. 2009; docs/deid_search.md).

A node is a tuple of hierarchy levels, one per QI (``0 <= l_q <= height_q``);
node ``a`` is a generalization of ``b`` when ``a >= b`` componentwise.
Acceptability (k-anonymity or a risk threshold with a suppression limit) is
monotone: every generalization of an acceptable node is acceptable, so each
evaluated node tags its whole up-set (acceptable) or down-set (not
acceptable). The tags live in one numpy array shaped like the lattice, so
tagging a cone is one slice assignment.

This module knows nothing about data.
"""
from __future__ import annotations

import itertools
from typing import Iterator, Sequence

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
