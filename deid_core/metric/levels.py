"""Information loss of full-domain lattice nodes, from per-(QI, level) tables (docs/deid_search.md).

Each QI's per-record loss term is computed once per level, so a node's loss is a few sums; a
suppressed record counts as fully generalized. Both losses are ≥ their suppression-free value,
which the searches use as a lower bound (El Emam et al. 2009, with suppression):

* ``nue``: non-uniform entropy (:mod:`deid_core.metric.entropy`, the same formula as the reports'),
  bits summed over QIs;
* ``geometric``: ARX's default "Loss" (:mod:`deid_core.metric.geometric`).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import ParameterError, literal
from ..hierarchy import Hierarchy
from .entropy import entropy_terms, frequencies
from .geometric import geometric_loss, leaf_shares

LOSSES = ("nue", "geometric")


class NodeLoss:
    """Loss of full-domain nodes of a table given as level codes per QI (``codes[q][level]``, -1 = missing)."""

    def __init__(self, name: str, hierarchies: Sequence[Hierarchy], codes: Sequence[Sequence[np.ndarray]],
                 n: int) -> None:
        if name not in LOSSES:
            raise ParameterError(f"{{loss}} must be one of {', '.join(LOSSES)}, got {literal(repr(name))}", "loss")
        self.name, self.n = name, n
        #: per QI and level: the per-record loss term; per QI: the term of a suppressed cell
        self.terms: list[list[np.ndarray]] = []
        self.top_terms: list[np.ndarray] = []
        for h, levels in zip(hierarchies, codes):
            if name == "nue":
                orig = frequencies(levels[0] + 1).astype(float)  # missing (-1) is one more value
                self.terms.append([entropy_terms(frequencies(c + 1), orig) for c in levels])
                self.top_terms.append(entropy_terms(n, orig))
            else:
                self.terms.append([leaf_shares(h.level_map(l), h.cardinality(l), c) for l, c in enumerate(levels)])
                self.top_terms.append(np.ones(n))
        self.sums = [np.array([p.sum() for p in per]) for per in self.terms]
        self.domains = np.array([len(h.leaves) for h in hierarchies], dtype=float)

    def aggregate(self, per_qi: np.ndarray) -> np.ndarray:
        """Per-QI totals (last axis) -> the loss value."""
        if self.name == "nue":
            return per_qi.sum(axis=-1)
        return geometric_loss(per_qi, self.n, self.domains)

    def lower_bounds(self, nodes: np.ndarray) -> np.ndarray:
        """Loss of each node (rows of levels) without suppression: a lower bound of its loss."""
        per = np.column_stack([self.sums[i][nodes[:, i]] for i in range(len(self.sums))])
        return self.aggregate(per)

    def loss(self, node: Sequence[int], suppressed: np.ndarray | None = None) -> float:
        """Exact loss of a node; records where ``suppressed`` is true count as fully generalized."""
        per = np.array([self.sums[i][l] for i, l in enumerate(node)], dtype=float)
        if suppressed is not None:
            per += np.array([(self.top_terms[i][suppressed] - self.terms[i][l][suppressed]).sum()
                             for i, l in enumerate(node)])
        return float(self.aggregate(per))
