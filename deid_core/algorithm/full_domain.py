"""The full-domain problem: an encoded table pre-generalized to every level of every QI, with a
criterion and a loss (docs/deid_search.md; El Emam et al. 2009).

Binds the data-free lattice to a table encoded once with
:func:`deid_core.risk.encode_table`: one lattice node is one packed-key
groupby (:func:`deid_core.risk.pack_keys`), and its loss a few sums over the
per-level tables of :class:`deid_core.metric.NodeLoss`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from ..longitudinal.persons import person_class_size, persons_to_suppress
from ..metric.levels import NodeLoss
from ..risk.equivalence_classes import pack_keys, sizes_from_keys
from ..risk.encoding import EncodedTable
from ..spec import Spec
from ..transform.policy import Policy, full_domain_policy
from .criterion import Criterion
from .lattice import Node


@dataclass
class NodeResult:
    """One evaluated lattice node: acceptable?, suppression cut-off k', suppressed records, risk of the rest."""

    node: Node
    acceptable: bool
    suppress_k: int
    suppressed: int
    risk: float


class FullDomainProblem:
    """An encoded table pre-generalized to every level of every QI, with a criterion and a loss."""

    def __init__(self, table: EncodedTable, criterion: Criterion, loss: str = "nue",
                 persons: np.ndarray | None = None) -> None:
        self.t, self.criterion, self.loss_name = table, criterion, loss
        #: row -> person index (0..P-1): classes and suppression counted in distinct persons (El Emam &
        #: Arbuckle, ch. 4); None: every record is its own unit
        self.persons = persons
        self.n_persons = int(persons.max()) + 1 if persons is not None and len(persons) else 0
        self.qis = list(table.qis)
        self.heights = [table.hierarchies[q].height for q in self.qis]
        self.n = table.n
        self.codes = [[table.hierarchies[q].level_map(l)[table.codes[q]] for l in range(h + 1)]
                      for q, h in zip(self.qis, self.heights)]
        self.cards = [[table.hierarchies[q].cardinality(l) for l in range(h + 1)] for q, h in zip(self.qis, self.heights)]
        self.fast = table.missing == "own_class" and not any((c[0] < 0).any() for c in self.codes)
        self.cache: dict[Node, NodeResult] = {}
        self.on_evaluate: Callable[[], None] | None = None  # e.g. a progress bar's tick
        self.losses = NodeLoss(loss, [table.hierarchies[q] for q in self.qis], self.codes, self.n)

    # --------------------------------------------------------------- risk
    def class_sizes(self, node: Node) -> np.ndarray:
        """Class size per record (0 for records with every QI missing, which are never in a class)."""
        if self.fast:
            inv, sizes = sizes_from_keys(self._node_classes(node)[0])
            return sizes[inv]
        cl = self.t.classes(dict(zip(self.qis, node)))
        f = np.zeros(self.n, dtype=np.int64)
        f[cl.keep] = cl.f
        return f

    def _node_classes(self, node: Node) -> tuple[np.ndarray, np.ndarray | None]:
        """Class id per record at ``node`` and the records in a class (None: every record)."""
        if self.fast:
            return pack_keys([self.codes[i][l] for i, l in enumerate(node)],
                             [self.cards[i][l] for i, l in enumerate(node)]), None
        cl = self.t.classes(dict(zip(self.qis, node)))
        cls = np.full(self.n, -1, dtype=np.int64)
        cls[cl.keep] = cl.ec
        return cls, cl.keep

    def unit_sizes(self, node: Node) -> np.ndarray:
        """Class size per unit: per record, or with :attr:`persons` per person — the smallest class, in
        distinct persons, among their records (0: every QI missing)."""
        if self.persons is None:
            return self.class_sizes(node)
        cls, keep = self._node_classes(node)
        return person_class_size(cls, self.persons, self.n_persons, keep=keep)

    def _gone(self, node: Node, k: int) -> np.ndarray:
        """Persons suppressed at ``node`` with cut-off ``k`` (:func:`persons_to_suppress`: repeated until
        every class of the persons kept holds k of them)."""
        cls, keep = self._node_classes(node)
        return persons_to_suppress(cls, self.persons, self.n_persons, k, keep=keep)

    def suppressed_rows(self, node: Node, k: int) -> np.ndarray:
        """Records suppressed at ``node`` with cut-off ``k``: in classes < k, or every record of the
        suppressed persons (:meth:`_gone`)."""
        if self.persons is None:
            return self.class_sizes(node) < k
        return self._gone(node, k)[self.persons]

    def _person_cutoff(self, node: Node, k: int) -> tuple[int, int, float]:
        """:meth:`Criterion.cutoff` when suppressing a person also shrinks their other classes: suppress at
        ``k``, re-measure the persons kept, and raise k while the criterion asks for more."""
        cls, keep = self._node_classes(node)
        rows = np.ones(self.n, dtype=bool) if keep is None else keep
        while True:
            gone = persons_to_suppress(cls, self.persons, self.n_persons, k, keep=rows)
            f = person_class_size(cls, self.persons, self.n_persons, keep=rows & ~gone[self.persons])
            f = f[f > 0]
            if not len(f):
                return k, int(gone.sum()), 0.0
            k2, more, risk = self.criterion.cutoff(f)
            if not more:
                return k, int(gone.sum()), risk
            k = k2

    def evaluate(self, node: Node) -> NodeResult:
        """Risk and suppression of one node (cached; ``nodes_evaluated`` counts the cache)."""
        if node not in self.cache:
            f = self.unit_sizes(node)
            f = f[f > 0]
            k, supp, risk = self.criterion.cutoff(f)
            if self.persons is not None and supp:
                k, supp, risk = self._person_cutoff(node, k)
            ok = supp <= self.criterion.max_suppressed and supp < len(f)
            self.cache[node] = NodeResult(node, ok, k, supp, risk)
            if self.on_evaluate:
                self.on_evaluate()
        return self.cache[node]

    def acceptable(self, node: Node) -> bool:
        return self.evaluate(node).acceptable

    # --------------------------------------------------------------- loss
    def lower_bounds(self, nodes: np.ndarray) -> np.ndarray:
        """Loss of each node (rows of levels) without suppression: a lower bound of its loss."""
        return self.losses.lower_bounds(nodes)

    def loss(self, node: Node) -> float:
        """Exact loss of a node with its suppression (suppressed records count as fully generalized)."""
        res = self.evaluate(node)
        return self.losses.loss(node, self.suppressed_rows(node, res.suppress_k) if res.suppressed else None)


def full_domain_release_policy(spec: Spec, qis: Sequence[str], levels: Mapping[str, int], suppress_k: int,
                               person: str | None = None) -> Policy:
    """The re-appliable policy of a node: drop direct identifiers, generalize, suppress classes < k' (with
    ``person``: whole persons in classes of fewer than k' persons)."""
    return full_domain_policy(spec.hierarchies, levels, drop=spec.direct, suppress_k=suppress_k, qis=list(qis),
                              person=person)
