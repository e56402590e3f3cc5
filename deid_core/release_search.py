"""Searching for a release policy, as a library call: :func:`search_release` takes a table, its spec and
:class:`SearchOptions` and returns a :class:`SearchResult` (docs/deid_search.md).

The methods (optimal lattice anonymization, the risk-threshold subtree searches, local recoding and the
longitudinal lattice search) are those of :mod:`deid_core.algorithm`; every policy reported is verified
by re-assessing its release from scratch, and the best one is judged by the release verdict every other
part of the product states (:func:`deid_core.risk.release_verdict`).  Nothing is read or written here:
``deid search`` and the workbench (``deid ui``) each build the options and call this one function.
Errors name the options as this module spells them (``max_suppression``); the command line maps them
to its flags.
"""
from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

import numpy as np
import pandas as pd

from .errors import DeidInputError, ParameterError
from .spec import Spec
from .releasing import deidentify_text_columns, text_columns
from .transform.policy import Policy

if TYPE_CHECKING:
    from .risk.known_subsets import KnownQIs

METHODS = ("bps", "directed", "ola", "partition", "boxes", "lola")
#: The searches whose risk can be the maximum over the blocks of a covering design (``known``).
KNOWN_METHODS = ("ola", "bps", "directed")
#: option -> (the methods it applies to, its default): given to another method it is refused, not ignored.
METHOD_OPTIONS: dict[str, tuple[tuple[str, ...], object]] = {
    "population": (("bps", "directed", "partition"), None),
    "threshold": (("ola", "bps", "directed", "lola"), None),
    "iterations": (("bps", "directed", "lola"), None),
    "sampling_fraction": (("lola",), 1.0),
    "loss": (("ola", "lola"), "nue"),
    "top": (("ola", "lola"), 10),
    "min_population": (("partition",), 0.0),
    "seed": (("bps", "directed", "lola"), 0),
}


@dataclass(frozen=True)
class SearchOptions:
    """What to search for.  ``method``: ``ola`` (k or a risk threshold over the generalization lattice),
    ``bps``/``directed`` (risk-threshold subtree searches), ``partition``/``boxes`` (local recoding),
    ``lola`` (longitudinal); an option the method does not use is refused (``METHOD_OPTIONS``), and
    None takes its default.  ``population``: a population table (bps, directed, partition);
    ``known``: the m-of-n adversary's covering design; ``apply_best``: build, verify and check for
    identifiers the release under the best policy; ``reapplicable``: the best policy is to be saved and
    re-applied, so it must exist and record every column's fate; ``accepted``: columns released although
    they look like identifiers, with the reason; ``force``: give a lola release whose re-assessment
    misses its criterion; ``key``: the data owner's, for notes replaced by surrogates (``[text] mode``)."""

    method: str = "ola"
    k: int | None = None
    threshold: float | None = None
    max_suppression: float | None = None
    population: pd.DataFrame | None = None
    iterations: int | None = None
    sampling_fraction: float | None = None
    loss: str | None = None
    top: int | None = None
    min_population: float | None = None
    seed: int | None = None
    known: "KnownQIs | None" = None
    apply_best: bool = False
    reapplicable: bool = False
    accepted: Mapping[str, str] = field(default_factory=dict)
    force: bool = False
    key: bytes | None = field(default=None, repr=False)          # never shown

    def resolved(self) -> "SearchOptions":
        """The options checked against the method, with each unset option's default filled in."""
        if self.method not in METHODS:
            raise ParameterError("{method} must be one of " + ", ".join(METHODS), "method")
        if self.force and self.method != "lola":
            raise ParameterError("{force} applies to {method} lola (with {apply_best}), not " + self.method,
                                 "force", "method", "apply_best")
        _check_ranges(self)
        filled = {}
        for name, (methods, default) in METHOD_OPTIONS.items():
            value = getattr(self, name)
            if value is not None and self.method not in methods:
                raise ParameterError("{" + name + "} applies to {method} " + ", ".join(methods) + ", not "
                                     + self.method, name, "method")
            if value is None and self.method in methods:       # resolving twice changes nothing
                filled[name] = default
        if self.known is not None:
            known_applies(self.method)
        return dataclasses.replace(self, **filled)


#: option -> (lowest, highest, whether the lowest is excluded, whether it must be a whole number)
RANGES: dict[str, tuple[float, float, bool, bool]] = {
    "k": (1, float("inf"), False, True), "threshold": (0, 1, True, False), "max_suppression": (0, 1, False, False),
    "iterations": (1, float("inf"), False, True), "sampling_fraction": (0, 1, True, False),
    "top": (1, float("inf"), False, True), "min_population": (0, float("inf"), False, False),
    "seed": (0, 2**32 - 1, False, True),
}
LOSSES = ("nue", "geometric")


def _check_ranges(options: SearchOptions) -> None:
    """Each number set within its range (the checks ``deid search``'s flags make, for every caller)."""
    for name, (low, high, open_low, whole) in RANGES.items():
        value = getattr(options, name)
        if value is None:
            continue
        if whole and (isinstance(value, bool) or not float(value).is_integer()):
            raise ParameterError("{" + name + "} must be a whole number, got " + str(value), name)
        if not (low < value if open_low else low <= value) or value > high:
            shown = "(" if open_low else "["
            raise ParameterError("{" + name + "} must lie in " + f"{shown}{low:g}, {high:g}], got {value}", name)
    if options.loss is not None and options.loss not in LOSSES:
        raise ParameterError("{loss} must be one of " + ", ".join(LOSSES), "loss")


def known_applies(method: str) -> None:
    """Refuse the m-of-n adversary (``known``) for a method whose risk cannot be its maximum over blocks."""
    if method not in KNOWN_METHODS:
        raise ParameterError("{known} applies to {method} " + ", ".join(KNOWN_METHODS) + " (not " + method + ")",
                             "known", "method")


@dataclass
class SearchResult:
    """A search's findings: ``summary`` (the document ``deid search --out`` writes: the policies found,
    ``best_policy`` recording every column's fate, ``release_verdict``, ``identifier_check``) and, with
    ``apply_best``, the verified ``release`` (direct identifiers dropped)."""

    summary: dict
    release: pd.DataFrame | None = None

    @property
    def best_policy(self) -> Policy | None:
        best = self.summary.get("best_policy")
        return Policy.from_dict(best) if best else None


def search_release(frame: pd.DataFrame, spec: Spec, options: SearchOptions) -> SearchResult:
    """Search ``frame`` (read under ``spec``) for policies meeting the options' criterion; with
    ``apply_best`` the best one's release, verified and checked for identifiers.  Refused (a
    :class:`~deid_core.errors.DeidInputError`, nothing computed twice) on options the method does not
    use, on a spec without quasi-identifiers, and when nothing meets the criterion but a release was asked."""
    options = options.resolved()
    spec.check_columns(frame.columns)
    fates = spec.fates(frame.columns) if options.apply_best or options.reapplicable or spec.rest is not None else None
    spec = spec.resolve(frame.columns) if fates is not None else spec
    if not spec.quasi:
        raise DeidInputError("spec declares no quasi-identifier to search over")
    notes = {}
    if fates is not None and options.apply_best:   # notes de-identified first, with every hint column still there
        frame, notes = deidentify_text_columns(frame, fates, spec.text.to_dict(), options.key)
    run = {"ola": _ola, "lola": _lola, "partition": _partition, "boxes": _boxes}.get(options.method, _subtree)
    summary, release = run(options, spec, frame)
    release = release if options.apply_best else None
    if options.apply_best and release is None:
        raise ParameterError("no policy meets the threshold: nothing to apply (relax {k}/{threshold} or "
                             "{max_suppression})", "k", "threshold", "max_suppression")
    if options.reapplicable and not summary.get("best_policy"):
        raise ParameterError("{method} " + options.method + " found no re-appliable policy", "method")
    if release is not None:  # every column has a fate; identifiers are refused before anything is written
        from .detect import check_release
        release = release.drop(columns=[c for c in spec.direct if c in release.columns])
        summary["identifier_check"] = check_release(release, fates, safe_harbor=False, accepted=options.accepted,
                                                    notes=notes)
        summary["accepted_columns"] = summary["identifier_check"]["accepted_columns"]
    if fates is not None and "best_policy" in summary:
        summary["best_policy"] = Policy.from_dict(summary["best_policy"]).with_fates(
            fates, spec.rest, False, text=spec.text.to_dict(), key=options.key).to_dict()
    if summary.get("best_policy") and options.method != "lola":  # lola suppresses this data set's persons on top
        summary["release_verdict"] = best_release_verdict(spec, frame, Policy.from_dict(summary["best_policy"]))
    return SearchResult(summary, release)


def best_release_verdict(spec: Spec, frame: pd.DataFrame, policy: Policy) -> dict:
    """The verdict ``deid apply --policy P --spec SPEC --html`` gives the best policy's release: the release
    measured from scratch (:func:`deid_core.assess.release_assessment`), judged by
    :func:`deid_core.risk.release_verdict` against ``[release] threshold`` whatever the search's criterion."""
    from .assess import release_assessment
    from .risk import release_measure

    frame = frame.drop(columns=text_columns(policy.columns, frame.columns))   # notes weigh in no risk
    a = release_assessment(frame, policy.apply(frame)[0], spec)
    return {"meets": a.attack["meets_threshold"], "overall_risk": a.attack["overall_risk"],
            "threshold": spec.release.threshold, "measure": release_measure(spec.release),
            "k_min": a.summary["k_min"], "suppressed_records": int(a.summary.get("suppressed_records", 0)),
            "records": len(frame)}


def _ola(options: SearchOptions, spec: Spec, frame: pd.DataFrame) -> tuple[dict, pd.DataFrame | None]:
    """OLA: ``k``, or ``threshold`` (default [release] threshold) on the release verdict of ``deid assess``
    and ``deid apply`` (the max risk of a public release, the strict average × Pr(T) otherwise)."""
    from .algorithm.optimal import optimal_release

    if options.top < 1:
        raise ParameterError("{top} must be a positive integer, got " + str(options.top), "top")
    found = optimal_release(frame, spec, threshold=options.threshold, k=options.k, measure="attack",
                            max_suppression=options.max_suppression or 0.0, loss=options.loss, top=options.top,
                            progress=True, known=options.known)
    summary, release = found.search.to_dict(), None
    if found.policy is not None:
        summary["best_policy"] = found.policy.to_dict()
        if options.apply_best:
            release = found.apply(frame)
            check = found.reassess(release)
            if not check["meets"]:  # pragma: no cover - guarded by tests
                raise RuntimeError(f"internal error: best policy fails re-assessment {check}")
            summary["best_reassessed"] = check
    return summary, release


def _lola(options: SearchOptions, spec: Spec, frame: pd.DataFrame) -> tuple[dict, pd.DataFrame | None]:
    """LOLA (El Emam et al. 2012): OLA over the level-1 and level-2 hierarchies; a node is acceptable when
    the simulated attack's high-risk persons are at most ``max_suppression`` (docs/longitudinal.md)."""
    from .algorithm.lola import HHP_MAX_SUPPRESSION, lola_release

    found = lola_release(frame, spec, threshold=options.threshold, k=options.k,
                         sampling_fraction=options.sampling_fraction,
                         max_suppression=HHP_MAX_SUPPRESSION if options.max_suppression is None
                         else options.max_suppression,
                         iterations=10_000 if options.iterations is None else options.iterations, seed=options.seed,
                         loss=options.loss, top=options.top, progress=True)
    summary, release = found.search.to_dict(), None
    if found.policy is not None:
        summary["best_policy"] = found.policy.to_dict()
        summary["best_policy_note"] = ("the policy generalizes; the high-risk persons of this data set are "
                                       "suppressed on top of it (not re-appliable to other data)")
        if options.apply_best:
            release = found.apply(frame)
            if found.criterion.persons >= 20_000:
                print("deid search: re-assessing the release by a fresh attack", file=sys.stderr, flush=True)
            check = found.reassess(release, frame)
            summary["best_reassessed"] = check
            if not check["meets"]:  # a release above its criterion is not given unless asked for
                said = ("after suppressing the high-risk persons, the re-assessed high-risk proportion is "
                        f"{check['high_risk_proportion']:.4f}, above MaxSup {found.criterion.max_suppression:g}")
                if not options.force:
                    raise ParameterError(said + ": nothing written (more {iterations}, another {seed}, or {force})",
                                         "iterations", "seed", "force")
                print(f"deid: warning: {said}", file=sys.stderr)
    return summary, release


def _subtree(options: SearchOptions, spec: Spec, frame: pd.DataFrame) -> tuple[dict, pd.DataFrame | None]:
    """bps, directed: every reported policy is re-assessed from scratch; with ``[longitudinal]`` the risk
    (and the Safe Harbor threshold) is over persons (docs/longitudinal.md)."""
    from .algorithm.baseline import safe_harbor_risk
    from .algorithm.known_subsets_search import KnownSubtreeProblem
    from .algorithm.subtree import SubtreeProblem, search_subtree, verify_subtree
    from .longitudinal.persons import person_index
    from .risk import encode_table, validate_population

    if options.k is not None:
        raise ParameterError("{k} applies to {method} ola only (bps/directed take {threshold}, a normalized "
                             "population risk)", "k", "method", "threshold")
    if options.max_suppression:
        raise ParameterError("{max_suppression} applies to {method} ola and lola only", "max_suppression", "method")
    iterations = 100 if options.iterations is None else options.iterations
    if iterations < 1:
        raise ParameterError("{iterations} must be a positive integer, got " + str(iterations), "iterations")
    lg = spec.longitudinal
    persons = person_index(frame, lg.person, lg.level1) if lg is not None else None
    table = encode_table(frame, spec, options.population)
    pop = validate_population(options.population, table.qis) if options.population is not None else None
    known = options.known
    if options.threshold is not None:
        if not 0 < options.threshold <= 1:
            raise ParameterError("{threshold} " + f"{options.threshold} is outside (0, 1]", "threshold")
        threshold, source = options.threshold, "threshold"
    else:
        threshold = safe_harbor_risk(frame, pop, spec, persons, known.blocks if known is not None else None)
        source = "safe harbor"
    problem = SubtreeProblem(table, threshold, persons) if known is None else \
        KnownSubtreeProblem(table, threshold, known, persons)
    summary = search_subtree(problem, options.method, iterations, options.seed, progress=True).to_dict()
    summary["threshold_source"] = source
    if known is not None:
        summary["known"] = known.summary()
    best = None
    for i, policy in enumerate(summary["policies"]):
        bits = np.array([c == "1" for c in policy["bits"]], dtype=bool)
        risk, release = verify_subtree(problem, spec, frame, pop, bits)
        if risk > threshold + 1e-12:  # pragma: no cover - guarded by tests
            raise RuntimeError(f"internal error: policy {i} has risk {risk} > {threshold} when applied")
        policy["reassessed_risk"] = risk
        if i == 0:
            best = release
            summary["best_policy"] = problem.policy(spec, bits).to_dict()
    return summary, best


def _partition(options: SearchOptions, spec: Spec, frame: pd.DataFrame) -> tuple[dict, pd.DataFrame]:
    """Partition (Liu et al. 2016, section 3.3): minimum subset size ``k``; Safe Harbor alongside."""
    from .algorithm.partition import search_partition

    if options.k is None:
        raise ParameterError("{method} partition needs {k}, the minimum subset size", "method", "k")
    if options.population is None:
        raise ParameterError("{method} partition needs {population} (instance-disclosure risk uses N_i)",
                             "method", "population")
    result, release = search_partition(frame, spec, options.population, options.k, options.min_population)
    return result.to_dict(), release


def _boxes(options: SearchOptions, spec: Spec, frame: pd.DataFrame) -> tuple[dict, pd.DataFrame]:
    """Boxes (Xiang et al. 2014): k-anonymous interval boxes over the numeric quasi-identifiers."""
    from .algorithm.boxes import search_boxes

    if options.k is None:
        raise ParameterError("{method} boxes needs {k}", "method", "k")
    result, release = search_boxes(frame, spec.quasi, options.k)
    return result.to_dict(), release
