"""Full-subtree policies on data (Benitez, Loukides & Malin 2010 §2.2–2.4): the bit-string problem over
an encoded table with the normalized population risk of eq. (1), the BPS / Directed search, and the
verification of a policy from scratch. With ``[longitudinal]`` the risk is over persons, not records
(docs/longitudinal.md, "Patient-level searches")."""
from __future__ import annotations

import time
from typing import Sequence

import numpy as np
import pandas as pd

from ..hierarchy import Hierarchy
from ..risk.encoding import EncodedTable
from ..longitudinal.person_classes import person_classes
from ..risk.equivalence_classes import Classes
from ..risk.population import release_classes
from ..spec import Spec
from ..transform.policy import Policy
from .bitstring import bps, directed, non_dominated
from .result import SearchResult, progress_printer


def ordered_leaves(h: Hierarchy) -> np.ndarray:
    """Leaf indices of a hierarchy in value order: numeric order when every value is a number, else hierarchy order."""
    nums = pd.to_numeric(pd.Series(h.leaves, dtype=object), errors="coerce")
    if nums.notna().all():
        return np.argsort(nums.to_numpy(dtype=float), kind="stable")
    return np.arange(len(h.leaves))


class SubtreeProblem:
    """Full-subtree policies as bit strings (Benitez, Loukides & Malin 2010 §2.2) and the population risk of eq. (1), normalized.

    Per QI the hierarchy's leaves (data ∪ population values) are put in value
    order; bit j sits between the j-th and (j+1)-th value: 1 keeps them
    apart, 0 merges them. A run of merged values is released as one value
    (``lo-hi`` for numbers, else the hierarchy node covering exactly the run,
    else ``a|b|…``). Risk ``Σ_d (1/g(d))^γ / |D|`` with ``g`` from the
    population re-aggregated along the same runs (:meth:`EncodedTable.classes`);
    without a population table ``g`` is the class size in the data.
    """

    def __init__(self, table: EncodedTable, threshold: float, persons: np.ndarray | None = None) -> None:
        self.t, self.threshold = table, threshold
        #: row -> person index (``[longitudinal]``): the risk is over persons (:func:`population_risk`)
        self.persons = persons
        self.qis = list(table.qis)
        self.order = [ordered_leaves(table.hierarchies[q]) for q in self.qis]
        self.nbits = [max(len(o) - 1, 0) for o in self.order]
        self.offsets = np.concatenate([[0], np.cumsum(self.nbits)]).astype(int)
        #: w_sizeOfField(b_i) = |r(A_i)| − 1 for every bit of attribute i
        self.size_weight = np.concatenate([np.full(nb, nb, dtype=float) for nb in self.nbits]) if sum(self.nbits) else np.zeros(0)
        self.cache: dict[bytes, float] = {}

    @property
    def n_bits(self) -> int:
        return int(self.offsets[-1])

    def maps(self, bits: np.ndarray) -> dict[str, np.ndarray]:
        """Leaf index -> run code per QI."""
        out = {}
        for i, q in enumerate(self.qis):
            b = bits[self.offsets[i]:self.offsets[i + 1]]
            run = np.concatenate([[0], np.cumsum(b)]).astype(np.int32)  # run of the j-th value in order
            m = np.empty(len(self.order[i]), dtype=np.int32)
            m[self.order[i]] = run
            out[q] = m
        return out

    def risk(self, bits: np.ndarray) -> float:
        """Normalized population risk of a policy (cached by bit string)."""
        key = np.packbits(bits).tobytes()
        if key not in self.cache:
            self.cache[key] = self.risk_of(self.maps(bits))
        return self.cache[key]

    def risk_of(self, maps: dict[str, np.ndarray]) -> float:
        """Normalized population risk of the table under per-QI leaf -> run maps."""
        return population_risk(self.t.classes(maps), self.t.gamma, self.persons)

    def release_risk(self, out: pd.DataFrame, pop_out: pd.DataFrame | None, gamma: float) -> float:
        """:func:`release_risk` of a released table on this problem's QIs (and persons)."""
        return release_risk(out, pop_out, self.qis, gamma, self.persons)

    def acceptable(self, bits: np.ndarray) -> bool:
        return self.risk(bits) <= self.threshold + 1e-12

    def mapping(self, bits: np.ndarray) -> dict[str, dict[str, str]]:
        """{QI: {original: released}} for the values that are merged with others."""
        out: dict[str, dict[str, str]] = {}
        for q, m in self.maps(bits).items():
            h = self.t.hierarchies[q]
            runs = pd.Series(np.arange(len(m))).groupby(m).agg(list)
            qmap = {}
            for leaves in runs:
                if len(leaves) > 1:
                    label = run_label(h, leaves)
                    qmap.update({str(h.leaves[j]): label for j in leaves})
            out[q] = qmap
        return out

    def policy(self, spec: Spec, bits: np.ndarray) -> Policy:
        """Re-appliable policy: drop direct identifiers, then one ``map`` step per QI."""
        steps: list[dict] = [{"op": "drop", "columns": spec.direct}] if spec.direct else []
        steps += [{"op": "map", "column": q, "mapping": m} for q, m in self.mapping(bits).items() if m]
        return Policy(steps, description="full-subtree policy (Benitez, Loukides & Malin 2010 §2.2)")


def population_risk(cl: Classes, gamma: float, persons: np.ndarray | None = None) -> float:
    """Normalized population risk ``Σ_d (1/g(d))^γ / |D|`` (Benitez, Loukides & Malin 2010 eq. 1) of classes
    ``cl``; g is the population class size F, or the class size f in the data without a population.

    With ``persons`` (row -> person index, ``[longitudinal]``) D is the set of persons: each person takes the
    class of their record with the fewest distinct persons, f counted in persons
    (:func:`deid_core.longitudinal.person_classes.person_classes`, as ``deid assess`` counts them; El Emam &
    Arbuckle, ch. 4).
    """
    if persons is not None:
        cl = person_classes(cl, persons, int(persons.max()) + 1)
    g = cl.F if cl.F is not None else cl.f.astype(float)
    return float(np.sum((1.0 / g) ** gamma) / len(g)) if len(g) else 0.0


def release_risk(out: pd.DataFrame, pop_out: pd.DataFrame | None, qis: Sequence[str], gamma: float,
                 persons: np.ndarray | None = None) -> float:
    """:func:`population_risk` of a released table from scratch (its own values; ``pop_out`` released alike)."""
    return population_risk(release_classes(out, pop_out, qis), gamma, persons)


def run_label(h: Hierarchy, leaves: Sequence[int]) -> str:
    """Released value of a run of leaves: ``lo-hi`` for numbers, the hierarchy node covering exactly them, or ``a|b``."""
    vals = [str(h.leaves[j]) for j in leaves]
    nums = pd.to_numeric(pd.Series(vals, dtype=object), errors="coerce")
    if nums.notna().all():
        return f"{vals[int(np.argmin(nums))]}-{vals[int(np.argmax(nums))]}"
    for lvl in range(1, h.height + 1):
        codes = h.level_map(lvl)[:-1]
        c = codes[leaves]
        if (c == c[0]).all() and int((codes == c[0]).sum()) == len(leaves):
            return str(h.labels(lvl)[c[0]])
    return "|".join(vals)


def search_subtree(problem: SubtreeProblem, method: str, iterations: int, seed: int = 0,
                   progress: bool = False) -> SearchResult:
    """BPS or Directed (Benitez, Loukides & Malin 2010 §2.4) for ``iterations`` boundary policies; reports the non-dominated ones.

    Policies are listed best first by information loss, here the share of
    the bits that are generalized (0 = the data as is, 1 = everything ``*``).
    """
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    report = progress_printer(iterations) if progress else None
    if method == "bps":
        sols = bps(problem.n_bits, problem.acceptable, iterations, problem.size_weight, rng, report)
    else:
        sols = directed(problem.n_bits, problem.acceptable, iterations, rng, report)
    nd = non_dominated(sols)
    nbits = max(problem.n_bits, 1)
    none = {"suppressed_records": 0, **({"suppressed_persons": 0} if problem.persons is not None else {})}
    policies = [{"risk": problem.risk(b), "information_loss": float((~b).sum() / nbits), **none,
                 "bits": "".join("1" if x else "0" for x in b), "mapping": problem.mapping(b)} for b in nd]
    policies.sort(key=lambda p: (p["information_loss"], p["risk"]))
    extra = {"threshold": problem.threshold, "iterations": iterations, "boundary_policies_found": len(sols),
             "distinct_policies": len({b.tobytes() for b in sols}), "non_dominated": len(nd), "bits": problem.n_bits,
             "loss": "share of generalized bits"}
    if problem.persons is not None:
        extra.update(units="persons", persons=int(problem.persons.max()) + 1)
    return SearchResult(method, policies, len(problem.cache), time.perf_counter() - t0, extra)


def verify_subtree(problem: SubtreeProblem, spec: Spec, df: pd.DataFrame, pop: pd.DataFrame | None,
                   bits: np.ndarray) -> tuple[float, pd.DataFrame]:
    """Apply a full-subtree policy to the data and the population and re-measure the risk from scratch (per
    person with :attr:`SubtreeProblem.persons`)."""
    policy = problem.policy(spec, bits)
    out, _ = policy.apply(df)
    pop_out = policy.apply(pop)[0] if pop is not None else None
    return problem.release_risk(out, pop_out, spec.gamma), out
