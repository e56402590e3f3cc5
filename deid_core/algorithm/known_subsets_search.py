"""Searches against an adversary who knows m of the n quasi-identifiers: the risk of a node or policy is
the largest over the blocks of a covering design (El Emam & Arbuckle, *Anonymizing Health Data*, ch. 7,
"Covering Designs"; :mod:`deid_core.risk.known_subsets`; docs/subsampling.md).

* :class:`KnownFullDomainProblem` — OLA (``deid search --method ola --known M``): a node is acceptable
  when every block meets the criterion without suppression. Suppression is not offered: the records a
  block would suppress shrink the classes of the other blocks, and that block-by-block suppression is
  not one re-appliable ``suppress_records`` step.
* :class:`KnownSubtreeProblem` — BPS / Directed (``--method bps|directed --known M``): the normalized
  population risk of eq. (1) of Benitez, Loukides & Malin (2010), the largest over the blocks. Each
  block's risk is monotone in the policy, so the maximum is too, as the searches require.
* :func:`reassess_known` — a release re-assessed from scratch on every block.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..longitudinal.persons import person_class_size
from ..risk.equivalence_classes import pack_keys, sizes_from_keys
from ..risk.encoding import EncodedTable
from ..risk.known_subsets import KnownQIs, restrict
from .criterion import Criterion, reassess
from .full_domain import FullDomainProblem, NodeResult
from .lattice import Node
from .subtree import SubtreeProblem, population_risk, release_risk


class KnownFullDomainProblem(FullDomainProblem):
    """:class:`FullDomainProblem` whose criterion must hold on every block of ``known``'s design, with no
    suppression (the node's risk is the largest block risk: max 1/f, or the record average of 1/f)."""

    def __init__(self, table: EncodedTable, criterion: Criterion, known: KnownQIs, loss: str = "nue",
                 persons: np.ndarray | None = None) -> None:
        super().__init__(table, criterion, loss, persons)
        self.known = known
        self.blocks = [[self.qis.index(q) for q in b] for b in known.blocks]
        self._first = 0  # the block that failed last is tried first (it usually fails again nearby)
        #: (block, its QIs' levels) -> (acceptable, risk): a block's classes depend on its own QIs' levels only
        self.block_cache: dict[tuple[int, tuple[int, ...]], tuple[bool, float]] = {}

    def block_sizes(self, node: Node, block: Sequence[int]) -> np.ndarray:
        """Class size per unit (record, or person: their smallest class) on the block's QIs; 0 = all missing."""
        keep = None
        if self.fast:
            cls = pack_keys([self.codes[i][node[i]] for i in block], [self.cards[i][node[i]] for i in block])
        else:
            cl = restrict(self.t, [self.qis[i] for i in block]).classes({self.qis[i]: node[i] for i in block})
            if self.persons is None:
                f = np.zeros(self.n, dtype=np.int64)
                f[cl.keep] = cl.f
                return f
            cls, keep = np.full(self.n, -1, dtype=np.int64), cl.keep
            cls[keep] = cl.ec
        if self.persons is None:
            inv, sizes = sizes_from_keys(cls)
            return sizes[inv]
        return person_class_size(cls, self.persons, self.n_persons, keep=keep)

    def block_result(self, node: Node, j: int) -> tuple[bool, float]:
        """(meets the criterion without suppression, risk) of block ``j`` at ``node`` (cached on the block's
        levels; a block with nothing released meets it with risk 0)."""
        key = (j, tuple(node[i] for i in self.blocks[j]))
        if key not in self.block_cache:
            f = self.block_sizes(node, self.blocks[j])
            f = f[f > 0]
            risk, ok = self.criterion.judge(f)
            self.block_cache[key] = (ok, risk)
        return self.block_cache[key]

    def evaluate(self, node: Node) -> NodeResult:
        """Acceptable when no block needs suppression; the risk is the largest block risk (evaluation stops
        at the first failing block, whose risk is then reported)."""
        if node not in self.cache:
            ok, risk = True, 0.0
            order = list(range(self._first, len(self.blocks))) + list(range(self._first))
            for j in order:
                block_ok, block_risk = self.block_result(node, j)
                risk = max(risk, block_risk)
                if not block_ok:
                    ok, self._first = False, j
                    break
            self.cache[node] = NodeResult(node, ok, 1, 0, risk)
            if self.on_evaluate:
                self.on_evaluate()
        return self.cache[node]


class KnownSubtreeProblem(SubtreeProblem):
    """:class:`SubtreeProblem` whose risk is the largest normalized population risk over ``known``'s blocks."""

    def __init__(self, table: EncodedTable, threshold: float, known: KnownQIs,
                 persons: np.ndarray | None = None) -> None:
        super().__init__(table, threshold, persons)
        self.known = known
        self.views = [restrict(table, b) for b in known.blocks]
        #: (block, its QIs' maps) -> risk: a block's classes depend on its own QIs' maps only
        self.block_cache: dict[tuple, float] = {}

    def risk_of(self, maps: dict[str, np.ndarray]) -> float:
        risks = []
        for j, v in enumerate(self.views):
            key = (j, *(maps[q].tobytes() for q in v.qis))
            if key not in self.block_cache:
                self.block_cache[key] = population_risk(v.classes({q: maps[q] for q in v.qis}), self.t.gamma,
                                                        self.persons)
            risks.append(self.block_cache[key])
        return max(risks)

    def release_risk(self, out: pd.DataFrame, pop_out: pd.DataFrame | None, gamma: float) -> float:
        return max(release_risk(out, pop_out, b, gamma, self.persons) for b in self.known.blocks)


def reassess_known(out: pd.DataFrame, known: KnownQIs, criterion: Criterion,
                   persons: np.ndarray | None = None) -> dict:
    """:func:`~deid_core.algorithm.criterion.reassess` on every block: the largest risk, the smallest k,
    the block that sets the risk, and whether every block meets the criterion."""
    checks = [reassess(out, b, criterion, persons) for b in known.blocks]
    i = int(np.argmax([c["risk"] for c in checks]))
    return {**checks[i], "k_min": min(c["k_min"] for c in checks), "meets": all(c["meets"] for c in checks),
            "worst_block": known.blocks[i], "blocks": len(checks)}
