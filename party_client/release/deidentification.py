"""The de-identification phase of a linked release: the joined table (in memory) through a method of
``deid_core`` (Safe Harbor, a saved policy, or the least-loss node meeting a risk threshold), the direct
identifiers dropped, the release scanned for identifiers, and re-assessed from scratch, per person when
the join has several rows per person (El Emam & Arbuckle, ch. 4)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import pandas as pd

import deid_core
from deid_core.detect import check_release
from deid_core.releasing import deidentify_text_columns
from deid_core.transform.keys import check_text_key
from deid_core.longitudinal.persons import level1_table
from deid_core.spec import LongitudinalSpec
from deid_core.errors import ParameterError
from party_client.errors import ParameterError as PartyParameterError, PartyError

METHODS = ("safe-harbor", "policy", "threshold")


@dataclass(frozen=True)
class DeidentifiedRelease:
    """What the de-identification phase hands to the write phase."""

    output: pd.DataFrame           # the release (rows of the joined table, direct identifiers dropped)
    spec: deid_core.Spec           # the spec resolved on the joined columns (``[longitudinal]`` when per person)
    method_info: dict              # the method, its policy (every column's fate recorded) and its figures
    fates: dict[str, str]          # column -> fate
    identifier_check: dict         # deid_core.detect.check_release on the release
    assessment: deid_core.ReleaseAssessment  # the release re-assessed from scratch, beside the joined table


def _person_column(spec: deid_core.Spec, joined: pd.DataFrame, id_column: str | None) -> str | None:
    """The column whose rows belong to one person: the spec's ``[longitudinal] person``, else the querier's
    key when the join has multiplicity (a key matched by several holder rows repeats in the joined table)."""
    if spec.longitudinal is not None:
        return spec.longitudinal.person
    if id_column and id_column in joined.columns and joined[id_column].dropna().duplicated().any():
        return id_column
    return None


def _per_person(spec: deid_core.Spec, output: pd.DataFrame, joined: pd.DataFrame, person: str,
                querier_columns: list[str]) -> LongitudinalSpec:
    """The ``[longitudinal]`` section that assesses the release per person (El Emam & Arbuckle, ch. 4): the
    spec's own, else one whose level 1 holds the querier's quasi-identifiers (one querier record per person,
    so fixed per person) when they are the same on all of a person's rows, and level 2 the holder's; each
    level restricted to the released columns."""
    if len(output) != len(joined):
        raise deid_core.DeidInputError("the release does not keep the joined rows: cannot count persons")
    quasi = tuple(c for c, r in spec.columns.items() if r == "quasi" and c in output.columns)
    lg = spec.longitudinal
    if lg is None:
        frame = output.copy()
        frame.insert(0, person, joined[person].to_numpy())
        level1 = tuple(c for c in quasi if c in querier_columns)
        try:
            level1_table(frame, person=person, level1=list(level1))
        except deid_core.DeidInputError:  # the querier's own table has several rows per person
            level1 = ()
        lg = LongitudinalSpec(person=person, level1=level1, level2=tuple(c for c in quasi if c not in level1))
    return replace(lg, level1=tuple(c for c in lg.level1 if c in output.columns),
                   level2=tuple(c for c in lg.level2 if c in output.columns))


def _deidentify(joined: pd.DataFrame, spec: deid_core.Spec, method: str, policy_path: str | None,
                threshold: float | None, max_suppression: float,
                accepted: dict | None = None, notes: dict | None = None,
                key: bytes | None = None) -> tuple[pd.DataFrame, dict]:
    if method == "safe-harbor":
        output, policy, info = deid_core.safe_harbor(joined, spec, accepted=accepted, notes=notes, key=key)
        return output, {"method": method, "policy": policy.to_dict(), "recognized": info}
    if method == "policy":
        if not policy_path:
            raise PartyParameterError("method", "{name} policy needs {policy} POLICY.json (a saved deid policy)",
                                      "policy")
        policy = deid_core.Policy.load(policy_path)
        check_text_key(policy.text, key)             # a policy of surrogates refuses another key
        output, context = policy.apply(joined, key=key)
        return output, {"method": method, "policy": policy.to_dict(), "policy_file": str(policy_path),
                        "warnings": context.get("warnings", [])}
    if method == "threshold":
        return _optimal_release(joined, spec, threshold, max_suppression)
    raise PartyParameterError("method", "{name} must be one of " + ", ".join(METHODS))


def _optimal_release(joined: pd.DataFrame, spec: deid_core.Spec, threshold: float | None,
                     max_suppression: float) -> tuple[pd.DataFrame, dict]:
    """The full-domain node of least loss whose release meets the threshold under the attack model
    (:func:`deid_core.optimal_release`, OLA; El Emam & Arbuckle, ch. 2, "Probability Metrics")."""
    threshold = threshold if threshold is not None else spec.release.threshold
    if not 0 < threshold <= 1:
        raise PartyParameterError("threshold", "{name} must lie in (0, 1]")
    found = deid_core.optimal_release(joined, spec, threshold=threshold, max_suppression=max_suppression)
    if found.policy is None:
        raise PartyError(f"no generalization meets the threshold {threshold} with at most "
                         f"{max_suppression:.0%} of the records suppressed")
    best = found.best
    return found.apply(joined), {"method": "threshold", "threshold": threshold, "policy": found.policy.to_dict(),
                                 "levels": best["levels"], "suppressed_records": best["suppressed_records"],
                                 "nodes_evaluated": found.search.nodes_evaluated,
                                 "search_seconds": round(found.search.seconds, 3)}


def applied_policy(spec: deid_core.Spec, method_info: dict) -> deid_core.Policy:
    """The method's policy plus the drop of every direct identifier it did not drop itself."""
    policy = deid_core.Policy.from_dict(method_info["policy"])
    dropped = {c for st in policy.steps if st["op"] == "drop" for c in st.get("columns", [])}
    rest = [c for c in spec.direct if c not in dropped]
    return replace(policy, steps=policy.steps + ([{"op": "drop", "columns": rest}] if rest else []))


def deidentify(joined: pd.DataFrame, spec: deid_core.Spec, *, method: str, policy: str | None = None,
               threshold: float | None = None, max_suppression: float = 0.0, accepted: dict | None = None,
               id_column: str | None = None, querier_columns: Sequence[str] = (),
               key: bytes | None = None) -> DeidentifiedRelease:
    """De-identify the joined table with ``method``; every column needs a fate in ``spec``."""
    source = joined
    try:
        spec.check_columns(joined.columns)
        fates = spec.fates(joined.columns)
        spec = spec.resolve(joined.columns)
        joined, notes = deidentify_text_columns(joined, fates, spec.text.to_dict(), key)  # first: hints still there
        output, method_info = _deidentify(joined, spec, method, policy, threshold, max_suppression, accepted, notes,
                                          key)
        output = output.drop(columns=[c for c in spec.direct if c in output.columns])
        applied = deid_core.Policy.from_dict(method_info["policy"])
        fates = {**fates, **{c: f for c, f in applied.step_columns().items() if f == "masked"}}
        check = check_release(output, fates, accepted=accepted, masked=[c for c, f in fates.items() if f == "masked"],
                              notes=notes,
                              safe_harbor=method == "safe-harbor" or (method == "policy" and applied.is_safe_harbor()))
        method_info["policy"] = applied.with_fates({c: f for c, f in fates.items() if f != "masked"}, spec.rest,
                                                   method == "safe-harbor", text=spec.text.to_dict(),
                                                   key=key).to_dict()
        person = _person_column(spec, joined, id_column)
        if person is not None:  # several rows per person: class sizes count persons, not rows
            spec = replace(spec, longitudinal=_per_person(spec, output, joined, person, list(querier_columns)))
        # the release measured from scratch (per person with [longitudinal]) beside the joined table as it came
        assessment = deid_core.assess_release(source, spec, output, policy=applied_policy(spec, method_info),
                                              notes=notes, original_as_released=True)
    except ParameterError as error:   # still about parameters: the command line names their flags
        raise PartyParameterError(error.parameter, "de-identification: " + error.template, *error.names[1:]) from None
    except deid_core.DeidInputError as error:
        raise PartyError(f"de-identification: {error}") from None
    return DeidentifiedRelease(output, spec, method_info, fates, check, assessment)
