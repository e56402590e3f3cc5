"""A release assessed, as a library call: :func:`assess_release` measures everything the five-step report
states (El Emam & Arbuckle, ch. 2, "Steps in the De-Identification Methodology") and returns it as a
:class:`ReleaseAssessment`: the release and the original measured, the verdict, what happened to each column,
the information lost, and (when asked) the m-of-n adversary, the simulated attack and the classes under
complete knowledge of a person's events (``[longitudinal]``), and the identifier check.  The report package
only words it (:func:`deid_core.report.build_report`, :func:`deid_core.report.release_page`); ``deid assess``,
``deid apply --html``, the workbench and ``party link-release`` each call it once."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .assess import (Assessment, assess, assess_known, assess_with_original, information_loss, reassess_release,
                     release_assessment)
from .column_fates import column_fates, loss_per_column, suppressed_records
from .errors import DeidInputError
from .longitudinal.assessment import AttackOptions, release_attack, release_complete_knowledge
from .risk import attack_assessment
from .risk.known_subsets import KnownQIs
from .spec import Spec
from .transform import Policy


@dataclass(frozen=True)
class ReleaseAssessment:
    """What :func:`assess_release` measured; every number of the report comes from here."""

    release: Assessment                # the released table measured (its ``attack`` is the verdict)
    original: Assessment               # the table as it came in, measured without any transformation
    source: pd.DataFrame               # the table before de-identification (the release keeps its rows)
    spec: Spec                         # the spec the report states (identifiers, quasi-identifiers)
    policy: Policy                     # the policy that made the release
    risk_before: dict                  # the risk summary of the input
    attack_before: dict                # the attack model on ``risk_before``
    columns: list[dict]                # per input column, what happened to it (:func:`column_fates`)
    information_loss: dict             # every information-loss measure of the release against the input
    loss_per_column: list[dict]        # per quasi-identifier, what it lost
    suppressed_records: int            # records whose quasi-identifiers a ``suppress_records`` step suppressed
    notes: dict                        # per ``text`` column, what its de-identification found (counts)
    events_per_person: dict | None = None   # ``[longitudinal]``: min, median, mean, max events per person
    known: dict | None = None          # the m-of-n adversary (:func:`deid_core.assess.assess_known`)
    attack: dict | None = None         # ``[longitudinal]``: the simulated attack on the release
    complete_knowledge: dict | None = None  # ``[longitudinal]``: classes under complete knowledge of the events
    identifier_check: dict | None = None    # :func:`deid_core.detect.check_release` of the release

    @property
    def output(self) -> pd.DataFrame:
        """The released table as measured (direct identifiers dropped)."""
        return self.release.output

    @property
    def verdict(self) -> dict:
        """The attack model on the release: its overall risk, threshold and whether it meets it."""
        return self.release.attack

    @property
    def meets_threshold(self) -> bool:
        """Whether the release meets its threshold (the verdict every page states)."""
        return bool(self.release.attack["meets_threshold"])


def _events_per_person(person_index: np.ndarray) -> dict:
    n = np.bincount(person_index)
    return {"min": int(n.min()), "median": float(np.median(n)), "mean": float(n.mean()), "max": int(n.max())}


def _as_released(source: pd.DataFrame, spec: Spec) -> Assessment:
    """The original measured as a release is: on its own values, with no types or hierarchies."""
    bare = replace(spec, columns={c: r for c, r in spec.columns.items() if c in source.columns},
                   types={}, hierarchies={}, levels={}, record_suppression=False)
    return assess(source, bare)


def assess_release(source: pd.DataFrame, spec: Spec, release: pd.DataFrame | None = None, *,
                   policy: Policy | None = None, population: pd.DataFrame | None = None,
                   levels: Mapping[str, int] | None = None, record_suppression: bool | None = None,
                   numeric: Sequence[str] | None = None, notes: Mapping[str, Mapping[str, Any]] | None = None,
                   known: KnownQIs | None = None, progress: bool = False, attack: AttackOptions | None = None,
                   complete_knowledge: str | None = None, fates: Mapping[str, str] | None = None,
                   accepted: Mapping[str, str] | None = None, original_as_released: bool = False) -> ReleaseAssessment:
    """Measure a release of ``source`` under ``spec`` for its report.

    Without ``release`` the full-domain ``levels`` and ``record_suppression`` (default: the spec's) make it
    (:func:`deid_core.assess.assess`; ``numeric`` names the columns whose mean, SD and correlation are
    compared). With ``release`` (a table made by ``policy`` elsewhere, same rows) it is measured from scratch
    (:func:`deid_core.assess.release_assessment`) and the original under ``spec`` against ``population``, or
    with ``original_as_released`` as the release is (no types or hierarchies). ``notes``: per ``text`` column
    what its de-identification found. ``attack`` (``[longitudinal]``): also the simulated attack on the release;
    ``complete_knowledge`` (``approximate`` or ``exact``): also its classes when the adversary knows all of a
    person's events. ``known``: also the adversary who knows m of the n quasi-identifiers
    (``progress`` shows its blocks). ``fates``: also check the release for identifiers under them
    (:func:`deid_core.detect.check_release`, risk-based; ``accepted`` columns let through with a reason).
    """
    notes = dict(notes or {})
    if release is None:
        after, original = assess_with_original(source, spec, population, levels=levels,
                                               record_suppression=record_suppression, numeric=numeric)
        policy, stated = policy or after.policy, spec
        risk_before, attack_before = after.before, attack_assessment(after.before, spec.release)
    else:
        if policy is None:
            raise DeidInputError("a release measured from scratch needs the policy that made it")
        after, original = ((release_assessment(source, release, spec), _as_released(source, spec))
                           if original_as_released else reassess_release(source, release, spec, population))
        stated, risk_before, attack_before = original.spec, original.summary, original.attack
    columns = column_fates(source, after.output, stated, policy, notes)
    loss = after.loss
    if release is not None:  # the levels the policy reached, read from the columns it changed
        kept = [q for q in stated.quasi if q in after.output.columns]
        levels_to = {f["column"]: f.get("level_to", 0) for f in columns if f["column"] in kept}
        heights = {f["column"]: f.get("height", 0) for f in columns if f["column"] in kept}
        loss = information_loss(source, after.output, kept, levels_to, heights)
    attacked = release_attack(source, after.output, spec, attack) if attack is not None else None
    flattened = (release_complete_knowledge(source, after.output, spec, complete_knowledge)
                 if complete_knowledge is not None else None)
    m_of_n = assess_known(source, spec, population, after, known, progress=progress) if known is not None else None
    check = None
    if fates is not None:
        from .detect import check_release
        check = check_release(after.output, fates, safe_harbor=False, accepted=accepted, notes=notes)
    return ReleaseAssessment(
        release=after, original=original, source=source, spec=stated, policy=policy, risk_before=risk_before,
        attack_before=attack_before, columns=columns, information_loss=loss,
        loss_per_column=loss_per_column(source, after.output, stated.quasi, columns),
        suppressed_records=suppressed_records(after.output, policy), notes=notes,
        events_per_person=_events_per_person(after.person_index) if after.person_index is not None else None,
        known=m_of_n, attack=attacked, complete_knowledge=flattened, identifier_check=check)
