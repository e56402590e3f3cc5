"""The optimal release: the full-domain node of least information loss whose release meets a criterion,
found by OLA (El Emam et al. 2009; docs/deid_search.md), with its re-appliable policy.

``deid search --method ola`` and ``party link-release --method threshold`` both call
:func:`optimal_release`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import DeidInputError, ParameterError
from ..longitudinal.persons import person_index
from ..risk.encoding import encode_table
from ..risk.known_subsets import KnownQIs
from ..spec import Spec
from ..transform.policy import Policy
from .criterion import Criterion, reassess
from .full_domain import FullDomainProblem, full_domain_release_policy
from .known_subsets_search import KnownFullDomainProblem, reassess_known
from .ola import search_ola
from .result import SearchResult, progress_bar

MEASURES = ("attack", "max", "average")


class SearchedRelease:
    """What every search's release result shares: the best node and its policy applied."""

    search: SearchResult
    policy: Policy | None

    @property
    def best(self) -> dict | None:
        """The best node: ``levels``, ``risk``, ``information_loss``, ``suppressed_records``, ``suppression_k``."""
        return self.search.policies[0] if self.search.policies else None

    def generalized(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` under the best policy's steps (before any suppression of this data set's records)."""
        if self.policy is None:
            raise DeidInputError("no policy meets the threshold: nothing to apply")
        return self.policy.apply(frame)[0]


@dataclass
class OptimalRelease(SearchedRelease):
    """The search result (policies best first), the criterion, the QIs and the best node's policy (None
    when no node meets the criterion)."""

    search: SearchResult
    criterion: Criterion
    qis: list[str]
    policy: Policy | None
    #: row -> person index of the searched frame when ``[longitudinal]`` is set (classes in persons)
    persons: np.ndarray | None = None
    #: the adversary knows m of the QIs: the criterion holds on every block (:mod:`deid_core.algorithm.known_subsets_search`)
    known: KnownQIs | None = None

    def apply(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` released under the best policy (generalize, suppress records — with ``[longitudinal]``
        whole persons — and drop direct identifiers)."""
        return self.generalized(frame)

    def reassess(self, output: pd.DataFrame) -> dict:
        """The release's risk from scratch against the criterion (:func:`~deid_core.algorithm.criterion.reassess`;
        on every block with :attr:`known`)."""
        if self.known is not None:
            return reassess_known(output, self.known, self.criterion, self.persons)
        return reassess(output, self.qis, self.criterion, self.persons)


def search_with_progress(problem: FullDomainProblem, top: int, progress: bool) -> SearchResult:
    """:func:`search_ola` on ``problem``, with a node-count bar on stderr when ``progress`` (shown after 2 s)."""
    if not progress:
        return search_ola(problem, top=top)
    with progress_bar(int(np.prod([h + 1 for h in problem.heights])), "deid search (nodes)",
                      "node") as bar:  # on stderr only if the search runs > 2 s
        problem.on_evaluate = bar.update
        return search_ola(problem, top=top)


def optimal_release(frame: pd.DataFrame, spec: Spec, *, threshold: float | None = None, k: int | None = None,
                    measure: str = "attack", max_suppression: float = 0.0, loss: str = "nue", top: int = 1,
                    progress: bool = False, known: KnownQIs | None = None) -> OptimalRelease:
    """The least-loss full-domain release of ``frame`` that meets the criterion (OLA + exact choice).

    Criterion: ``k`` (k-anonymity) when given, else ``threshold`` (default: the spec's ``[release]``
    threshold) on ``measure``: ``"attack"`` — the release meets the threshold under the attack model
    (:meth:`Criterion.for_release`); ``"max"`` / ``"average"`` — the prosecutor max / record-average
    risk. At most ``max_suppression`` of the records may be suppressed; ``loss`` is ``"nue"`` or
    ``"geometric"``; ``top`` policies are reported; ``progress`` shows a bar on stderr after 2 s.
    ``known``: the adversary knows m of the QIs, the criterion must hold on every block of its covering
    design, without suppression (:class:`~deid_core.algorithm.known_subsets_search.KnownFullDomainProblem`).
    """
    if top < 1:
        raise DeidInputError(f"top must be a positive integer, got {top}")
    if measure not in MEASURES:
        raise DeidInputError(f"measure must be one of {', '.join(MEASURES)}, got {measure!r}")
    lg = spec.longitudinal  # classes and suppression in distinct persons (El Emam & Arbuckle, ch. 4)
    persons = person_index(frame, lg.person, lg.level1) if lg is not None else None
    n = len(frame) if persons is None else int(persons.max()) + 1
    if k is not None:
        criterion = Criterion.build(n, k=k, max_suppression=max_suppression)
    else:
        thr = threshold if threshold is not None else spec.release.threshold
        criterion = (Criterion.for_release(n, spec.release, thr, max_suppression) if measure == "attack"
                     else Criterion.build(n, threshold=thr, measure=measure, max_suppression=max_suppression))
    if known is not None and max_suppression:
        raise ParameterError("{known} searches without suppression ({max_suppression} 0): a block's suppression "
                             "shrinks the other blocks' classes and is not one re-appliable step", "known",
                             "max_suppression")
    problem = (FullDomainProblem(encode_table(frame, spec), criterion, loss, persons=persons) if known is None
               else KnownFullDomainProblem(encode_table(frame, spec), criterion, known, loss, persons=persons))
    result = search_with_progress(problem, top, progress)
    if known is not None:
        result.extra["known"] = known.summary()
    if persons is not None:
        result.extra.update(units="persons", persons=n)
        for p in result.policies:
            p["suppressed_persons"] = p["suppressed_records"]
            p["suppressed_records"] = int(problem.suppressed_rows(tuple(p["levels"][q] for q in problem.qis),
                                                                 p["suppression_k"]).sum()) if p["suppressed_persons"] else 0
    policy = None
    if result.policies:
        best = result.policies[0]
        policy = full_domain_release_policy(spec, problem.qis, best["levels"], best["suppression_k"],
                                            person=lg.person if persons is not None else None)
    return OptimalRelease(result, criterion, problem.qis, policy, persons, known)
