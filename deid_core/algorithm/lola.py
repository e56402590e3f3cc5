"""LOLA, longitudinal OLA (El Emam et al. 2012, "De-identification methods for open health data: the case
of the Heritage Health Prize claims dataset", J Med Internet Res 14(1):e33, "Methods for the
De-identification of the HHP Dataset"; docs/longitudinal.md, "LOLA").

The OLA lattice search (:func:`~deid_core.algorithm.ola.search_ola`, unchanged) over the hierarchies of
the level-1 *and* level-2 quasi-identifiers, with the paper's longitudinal acceptance criterion in place
of k-anonymity:

* a person is *high risk* at a node when the simulated attack (Attack 1,
  :func:`deid_core.longitudinal.attack.simulate_attack`) on the data generalized to that node gives
  them a risk ``α / m > τ`` (m = persons matching the adversary's knowledge, α = sampling fraction,
  τ = risk threshold). With the paper's large-sample assumption ``f_j = α·F_j`` this is
  ``1/F_j > τ``, i.e. ``m < k`` with ``k = α·F``, ``F = 1/τ`` (equation 3: F = 20, α = 20% → k = 4);
* the node is acceptable when the proportion of high-risk persons is at most MaxSup (equations 4–5:
  ``(1/N) Σ_j f_j·I(1/F_j > τ) ≤ MaxSup``); those persons are suppressed. Suppression is counted in
  persons.

The adversary knows each target's level-1 values and ``p_h`` of their distinct *original* level-2
values (:func:`deid_core.longitudinal.power.adversary_power` on the original data, ``p_max`` =
``[longitudinal] adversary_power``), matched on their generalized form. Power and draws do not depend
on the node, so with a fixed seed every draw is the same at every node and generalizing can only enlarge
each matching set: the criterion is monotone, as OLA's predictive tagging requires (docs/longitudinal.md).
The reported nodes are still checked after the search (evaluated, dropped if not acceptable).

Node evaluation: ``iterations`` targets drawn with replacement (the paper samples 10,000 patients), or,
when ``iterations`` ≥ the number of persons, every person once (a census). The persons to suppress at
the chosen node always come from a census (every person the target once, one draw each); after a
Monte-Carlo search the best node must also meet MaxSup on that census, else it is rejected and the
search continues (``rejected_by_census``).

Information loss: the node's loss without suppression (:class:`deid_core.metric.NodeLoss`, per claim),
which ranks the nodes; the best node also reports the loss with its suppressed persons' claims counted as
fully generalized.
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ..errors import DeidInputError, ParameterError
from ..longitudinal.attack import AttackResult, simulate_attack
from ..longitudinal.persons import person_level1
from ..longitudinal.power import adversary_power
from ..risk.encoding import encode_table
from ..spec import Spec
from ..transform.ops import set_marker
from ..transform.policy import Policy
from .full_domain import FullDomainProblem, NodeResult, full_domain_release_policy
from .lattice import Node
from .optimal import SearchedRelease, search_with_progress
from .result import SearchResult

#: Persons from which the census attacks (seconds) are announced on stderr.
_LARGE = 20_000


def _say(when: bool, line: str) -> None:
    if when:
        print(line, file=sys.stderr, flush=True)


#: MaxSup of the HHP release: 0.8% of persons above the threshold (El Emam et al. 2012, "Acceptable
#: Re-identification Risk": 0.05 × 0.008 × N = 1 × 0.0004 × N, the Safe Harbor risk exposure).
HHP_MAX_SUPPRESSION = 0.008


@dataclass(frozen=True)
class LolaCriterion:
    """The longitudinal acceptance criterion: high-risk persons (attack risk > ``threshold``) ≤ MaxSup."""

    threshold: float
    sampling_fraction: float
    max_suppression: float
    persons: int
    iterations: int
    seed: int
    p_max: int
    kind: str = "lola"

    @property
    def k(self) -> float:
        """``k = α·F`` with ``F = 1/τ``: a person is high risk when fewer than k persons match."""
        return self.sampling_fraction / self.threshold

    @property
    def max_suppressed(self) -> int:
        """Most persons that may be high risk (and suppressed): ``floor(MaxSup × persons)``."""
        return int(math.floor(self.max_suppression * self.persons + 1e-9))

    @property
    def count_limit(self) -> int:
        """Matching sets are counted up to ``floor(k) + 1`` persons: enough to decide ``m < k`` exactly."""
        return int(math.floor(self.k)) + 1

    @property
    def census(self) -> bool:
        return self.iterations >= self.persons

    def meets(self, proportion: float) -> bool:
        return proportion <= self.max_suppression + 1e-12

    def to_dict(self) -> dict:
        return {"kind": "lola", "threshold": self.threshold, "sampling_fraction": self.sampling_fraction,
                "k": self.k, "max_suppression": self.max_suppression, "max_suppressed_persons": self.max_suppressed,
                "adversary_power": self.p_max, "iterations": self.iterations, "seed": self.seed,
                "evaluation": "census" if self.census else "monte-carlo", "count_limit": self.count_limit,
                "risk": "average attack risk, matching sets counted up to count_limit persons (an upper bound)",
                "knowledge": "original level-2 values, matched on their generalized form"}


class LongitudinalProblem(FullDomainProblem):
    """The full-domain problem whose nodes are judged by the simulated attack (see module docstring)."""

    def __init__(self, table, criterion: LolaCriterion, loss: str, person: np.ndarray, level1: list[str],
                 level2: list[str], power: pd.DataFrame) -> None:
        super().__init__(table, criterion, loss)  # type: ignore[arg-type]  # duck-typed criterion
        self.person, self.level1, self.level2, self.power = person, level1, level2, power
        self.attacks: dict[Node, AttackResult] = {}
        self.census_high: dict[Node, np.ndarray] = {}
        self.person_ids: pd.Index = pd.RangeIndex(criterion.persons)  # person id of each index 0..P-1
        self.power_by_id: pd.DataFrame = power

    def frame(self, node: Node) -> pd.DataFrame:
        """The table generalized to ``node`` as level codes, plus the original level-2 codes."""
        cols = {"__person": self.person}
        for i, (q, level) in enumerate(zip(self.qis, node)):
            cols[q] = self.codes[i][level]
            if q in self.level2:
                cols[f"__original {q}"] = self.codes[i][0]
        return pd.DataFrame(cols)

    def attack(self, node: Node, census: bool, count_limit: int | None = -1) -> AttackResult:
        """The simulated attack at ``node`` (``count_limit`` -1: the criterion's)."""
        c: LolaCriterion = self.criterion  # type: ignore[assignment]
        count_limit = c.count_limit if count_limit == -1 else count_limit
        return simulate_attack(self.frame(node), person="__person", level1=self.level1, level2=self.level2,
                               power=self.power, background_values={h: f"__original {h}" for h in self.level2},
                               iterations=c.iterations, seed=c.seed, threshold=c.threshold,
                               sampling_fraction=c.sampling_fraction, census=census, count_limit=count_limit)

    def evaluate(self, node: Node) -> NodeResult:
        """Attack risk at ``node``: acceptable when the high-risk proportion ≤ MaxSup (cached)."""
        if node not in self.cache:
            c: LolaCriterion = self.criterion  # type: ignore[assignment]
            res = self.attack(node, c.census)
            self.attacks[node] = res
            suppressed = int(round(res.high_risk_proportion * c.persons))
            self.cache[node] = NodeResult(node, c.meets(res.high_risk_proportion), 0, suppressed, res.average_risk)
            if self.on_evaluate:
                self.on_evaluate()
        return self.cache[node]

    def loss(self, node: Node) -> float:
        """The node's loss without suppression (ranks the nodes; see the module docstring)."""
        return float(self.lower_bounds(np.asarray([node]))[0])

    def high_risk_persons(self, node: Node) -> np.ndarray:
        """Census at ``node``: per person (0..P-1), whether their attack risk is above the threshold (cached)."""
        c: LolaCriterion = self.criterion  # type: ignore[assignment]
        if node not in self.census_high:
            res = self.attacks.get(node) if c.census else None
            res = res if res is not None else self.attack(node, census=True)
            self.census_high[node] = res.per_target["risk"].to_numpy() > c.threshold
        return self.census_high[node]


@dataclass
class LolaRelease(SearchedRelease):
    """The LOLA search result, the criterion, the best node's policy and its suppressed persons."""

    search: SearchResult
    criterion: LolaCriterion
    qis: list[str]
    person: str
    policy: Policy | None
    suppressed_persons: list  # person ids
    level1: list[str]
    level2: list[str]
    power: pd.DataFrame  # per person id and level-2 QI, from the original data

    def apply(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` under the best policy; every QI of the suppressed persons' claims is the suppression marker."""
        out = self.generalized(frame)
        mask = frame[self.person].isin(self.suppressed_persons).to_numpy()
        for q in self.qis:
            out[q] = set_marker(out[q], mask)
        return out

    def reassess(self, output: pd.DataFrame, frame: pd.DataFrame) -> dict:
        """The release's attack risk from scratch: its own released strings, the persons of ``frame`` (same
        rows), knowledge drawn from ``frame``'s original values; suppressed claims are left out."""
        c = self.criterion
        supp = frame[self.person].isin(self.suppressed_persons).to_numpy()
        kept = output.loc[~supp, self.qis].astype(object).reset_index(drop=True)
        kept["__person"] = frame[self.person].to_numpy()[~supp]
        orig = {h: f"__original {h}" for h in self.level2}
        for h, col in orig.items():
            kept[col] = frame[h].to_numpy()[~supp]
        if not len(kept):
            return {"average_risk": 0.0, "high_risk_proportion": 0.0, "suppressed_persons": len(self.suppressed_persons),
                    "meets": True}
        persons = int(kept["__person"].nunique())
        res = simulate_attack(kept, person="__person", level1=self.level1, level2=self.level2, power=self.power,
                              background_values=orig, iterations=c.iterations, seed=c.seed,
                              threshold=c.threshold, sampling_fraction=c.sampling_fraction,
                              census=c.iterations >= persons, count_limit=c.count_limit)
        return {"average_risk": res.average_risk, "high_risk_proportion": res.high_risk_proportion,
                "suppressed_persons": int(len(self.suppressed_persons)), "meets": c.meets(res.high_risk_proportion)}


def lola_problem(frame: pd.DataFrame, spec: Spec, *, threshold: float | None = None, k: float | None = None,
                 sampling_fraction: float = 1.0, max_suppression: float = HHP_MAX_SUPPRESSION,
                 iterations: int = 10_000, seed: int = 0, p_max: int | None = None,
                 loss: str = "nue") -> LongitudinalProblem:
    """The validated LOLA problem of a claims table with ``[longitudinal]`` in ``spec`` (see
    :func:`lola_release` for the parameters)."""
    lg = spec.longitudinal
    if lg is None:
        raise ParameterError("{method} lola needs a [longitudinal] section in the spec (person, level1, level2)",
                             "method")
    level1, level2 = list(lg.level1), list(lg.level2)
    if not level2:
        raise ParameterError("{method} lola needs at least one level-2 quasi-identifier in [longitudinal]", "method")
    other = [q for q in spec.quasi if q not in level1 and q not in level2]
    if other:
        raise DeidInputError(f"quasi-identifier {other[0]!r} is neither level1 nor level2 in [longitudinal]")
    if iterations < 1:
        raise ParameterError(f"{{iterations}} must be a positive integer, got {iterations}", "iterations")
    if not 0 < sampling_fraction <= 1:
        raise DeidInputError(f"sampling fraction {sampling_fraction} is outside (0, 1]")
    if not 0 <= max_suppression <= 1:
        raise ParameterError(f"{{max_suppression}} {max_suppression} is outside [0, 1]", "max_suppression")
    if k is not None:
        if not k > 0:
            raise ParameterError(f"{{k}} must be positive, got {k}", "k")
        threshold = min(sampling_fraction / k, 1.0)
    thr = threshold if threshold is not None else spec.release.threshold
    if not 0 < thr <= 1:
        raise DeidInputError(f"threshold {thr} is outside (0, 1]")
    p_max = lg.adversary_power if p_max is None else p_max
    table1, pcode = person_level1(frame, lg.person, level1)  # refuses persons whose level-1 values differ
    persons = len(table1)
    power = adversary_power(frame, person=lg.person, level2=level2, p_max=p_max)  # persons by first appearance
    criterion = LolaCriterion(thr, sampling_fraction, max_suppression, persons, iterations, seed, p_max)
    problem = LongitudinalProblem(encode_table(frame, spec), criterion, loss, pcode, level1, level2,
                                  power.set_axis(pd.RangeIndex(persons)))
    problem.person_ids, problem.power_by_id = table1.index, power
    return problem


def lola_release(frame: pd.DataFrame, spec: Spec, *, threshold: float | None = None, k: float | None = None,
                 sampling_fraction: float = 1.0, max_suppression: float = HHP_MAX_SUPPRESSION,
                 iterations: int = 10_000, seed: int = 0, p_max: int | None = None, loss: str = "nue",
                 top: int = 1, progress: bool = False) -> LolaRelease:
    """LOLA on a claims table with ``[longitudinal]`` in ``spec`` (see module docstring).

    ``threshold`` τ (default the spec's ``[release]`` threshold) or ``k`` (τ = α/k); ``sampling_fraction``
    α; ``max_suppression`` MaxSup (default 0.008, the HHP release's); ``iterations`` attack targets per
    node (≥ persons: a census); ``p_max`` defaults to ``[longitudinal] adversary_power``.
    """
    if top < 1:
        raise ParameterError(f"{{top}} must be a positive integer, got {top}", "top")
    problem = lola_problem(frame, spec, threshold=threshold, k=k, sampling_fraction=sampling_fraction,
                           max_suppression=max_suppression, iterations=iterations, seed=seed, p_max=p_max, loss=loss)
    criterion: LolaCriterion = problem.criterion  # type: ignore[assignment]
    persons, pcode = criterion.persons, problem.person
    rejected: set[Node] = set()
    t0 = time.perf_counter()

    def node_of(p: dict) -> Node:
        return tuple(p["levels"][q] for q in problem.qis)

    while True:
        result = search_with_progress(problem, top, progress)
        # monotone by construction (module docstring); a reported node that fails its own evaluation is dropped
        kept = [p for p in result.policies if problem.evaluate(node_of(p)).acceptable]
        failing = sum(node_of(p) not in rejected for p in result.policies) - len(kept)
        if not kept or criterion.census:
            break
        # a Monte-Carlo acceptance is verified by the census that picks the persons to suppress; a node
        # failing it is rejected and the search goes on from the evaluations made so far
        node = node_of(kept[0])
        _say(progress and persons >= _LARGE and node not in problem.census_high,
             f"deid search: census attack on the best node {node} (each of {persons:,} persons once)")
        if criterion.meets(float(problem.high_risk_persons(node).mean())):
            break
        problem.cache[node] = replace(problem.cache[node], acceptable=False)
        rejected.add(node)
    result.extra["rejected_by_census"] = len(rejected)
    result.seconds = time.perf_counter() - t0  # every round of the search and the census checks
    result.method = "lola"
    result.extra["reported_nodes_failing_recheck"] = failing
    result.policies = kept
    result.extra["criterion"] = criterion.to_dict()
    result.extra["persons"] = persons
    result.extra["claims"] = len(frame)
    for p in result.policies:
        node = tuple(p["levels"][q] for q in problem.qis)
        att = problem.attacks[node]
        p.pop("suppression_k", None)
        p["high_risk_proportion"] = att.high_risk_proportion
        p["risk_ci95"] = list(att.ci95)
        p["suppressed_persons"] = p.pop("suppressed_records")
        p["suppressed_records"] = None  # known for the best node only (below)
    policy, suppressed = None, []
    if result.policies:
        best = result.policies[0]
        node = tuple(best["levels"][q] for q in problem.qis)
        _say(progress and persons >= _LARGE and node not in problem.census_high,
             f"deid search: census attack on the best node {node} (each of {persons:,} persons once)")
        high = problem.high_risk_persons(node)
        suppressed = problem.person_ids[high].tolist()
        rows = high[pcode]
        best["suppressed_persons"] = int(high.sum())
        best["suppressed_records"] = int(rows.sum())
        best["suppressed_share"] = float(high.mean())  # the census proportion of high-risk persons
        best["information_loss_with_suppression"] = problem.losses.loss(node, rows if rows.any() else None)
        # the average attack risk without the count limit (the number to compare with the paper's Table 7)
        _say(progress and persons >= _LARGE, f"deid search: attack on the best node {node} without the count limit")
        full = problem.attack(node, census=criterion.census, count_limit=None)
        best["attack_average_risk"], best["attack_ci95"] = full.average_risk, list(full.ci95)
        policy = full_domain_release_policy(spec, problem.qis, best["levels"], 0)
    return LolaRelease(result, criterion, problem.qis, spec.longitudinal.person, policy, suppressed,  # type: ignore[union-attr]
                       problem.level1, problem.level2, problem.power_by_id)
