"""The report an ethics board reads, as a JSON-ready dict: the five steps of El Emam & Arbuckle's method.

Sections follow *Anonymizing Health Data* (El Emam & Arbuckle, O'Reilly
2013), ch. 2, "Steps in the De-Identification Methodology": 1 direct
identifiers and quasi-identifiers; 2 the threshold; 3 the risk measured under
the plausible attacks; 4 what was done, column by column (with the policy in
re-appliable form); 5 the re-assessment of the release (risk before and
after against the threshold, information loss, plots) and a date 18–24
months ahead to look at it again (ch. 3, "Final Thoughts"). Every number comes from a
:class:`~deid_core.assessing.ReleaseAssessment` (:func:`deid_core.assess_release`); nothing is measured
here. A caller may add keys of its own to the dict (the JSON keeps them); the page is drawn by
:mod:`deid_core.report.assessment_page`.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any, Mapping, Sequence

from ..assessing import ReleaseAssessment
from ..column_fates import describe_step
from ..errors import DeidInputError
from ..risk import THRESHOLD_TABLE, release_measure
from .operations import operation_column, operation_text, recipe

#: How a saved policy is re-applied when the caller does not say.
REAPPLY = "deid apply --input NEXT.csv --policy POLICY.json --out RELEASE.csv"

BOOK = "El Emam & Arbuckle, Anonymizing Health Data (O'Reilly, 2013)"
#: Where each part of the method is described (author and section; never a page or line).
SOURCES = {
    "method": f"{BOOK}, ch. 2, “Steps in the De-Identification Methodology”",
    "identifiers": f"{BOOK}, ch. 2, “Step 1: Selecting Direct and Indirect Identifiers”",
    "attacks": f"{BOOK}, ch. 2, “Measuring Risk Under Plausible Attacks” (T1–T4)",
    "metrics": f"{BOOK}, ch. 2, “Probability Metrics” (maximum, average and strict average risk)",
    "thresholds": f"{BOOK}, ch. 2, “Risk Thresholds”, Table 2-1",
    "loss": f"{BOOK}, ch. 2, “Information Loss Metrics”",
    "dates": f"{BOOK}, ch. 3, “BORN Data Set”, Table 3-2 (date generalization hierarchy)",
    "reuse": f"{BOOK}, ch. 3, “Year on Year: Reusing Risk Analyses”",
    "reassess": f"{BOOK}, ch. 3, “Final Thoughts” (revisit every 18 to 24 months)",
    "linking": f"{BOOK}, ch. 12, “Secure Linking” (link before anonymizing)",
    "entropy": "El Emam et al., “A Globally Optimal k-Anonymity Method for the De-Identification of Health "
               "Data”, JAMIA 2009 (non-uniform entropy)",
}
#: Cited only when the data are longitudinal.
LONGITUDINAL_SOURCES = {
    "longitudinal": f"{BOOK}, ch. 4, “Don't Treat It Like Cross-Sectional Data”; ch. 5, “Long Tails”; ch. 6, "
                    "“Adversary Power”; ch. 10, “Medical Codes” (suppression and shuffling)",
    "hhp": "El Emam et al., “De-identification methods for open health data: the case of the Heritage Health "
           "Prize claims dataset”, J Med Internet Res 14(1):e33, 2012 (adversary power, simulated attack, "
           "truncation of claims)",
}

WHY_DIRECT = ("Direct identifiers (names, health card numbers, ...) can identify a person on their own; "
              "they are removed or masked, never released.")
WHY_QUASI = ("Quasi-identifiers (dates of birth, postal codes, ...) can be known to an adversary (an "
             "acquaintance, public registries such as voter lists) and combined to single people out; "
             "they are generalized or suppressed until the measured risk meets the threshold.")


def _add_months(d: _dt.date, months: int) -> _dt.date:
    y, m = divmod(d.month - 1 + months, 12)
    day = min(d.day, 28)
    return _dt.date(d.year + y, m + 1, day)


def longitudinal_section(ra: ReleaseAssessment, operations: Sequence[Mapping[str, Any]] = ()) -> dict:
    """The report's longitudinal part: persons and events, per-person vs per-row risk, the adversary power
    and the simulated attack (``deid assess --attack``), and earlier truncation/code operations (their
    ``deid truncate``/``deid codes`` report JSON)."""
    a = ra.release
    lg = a.spec.longitudinal
    if lg is None or ra.events_per_person is None:
        raise DeidInputError("the longitudinal section needs an assessment made with [longitudinal]")
    rows = a.row_summary or {}
    return {"person": lg.person, "level1": list(lg.level1), "level2": list(lg.level2),
            "adversary_power": lg.adversary_power, "persons": a.summary["persons"], "events": a.summary["events"],
            "events_per_person": dict(ra.events_per_person),
            "risk_persons": {"k_min": a.summary["k_min"], **a.summary["prosecutor"]},
            "risk_rows": {"k_min": rows.get("k_min"), **(rows.get("prosecutor") or {})},
            "attack": dict(ra.attack) if ra.attack else None, "operations": [dict(o) for o in operations]}


def build_report(ra: ReleaseAssessment, input_name: str = "", today: _dt.date | None = None, *,
                 reapply: Mapping[str, str] | None = None, operations: Sequence[Mapping[str, Any]] = (),
                 title: str | None = None) -> dict:
    """The five-step report of ``ra`` (:func:`deid_core.assess_release`) as a JSON-ready dict (the ``report``
    key of the assess JSON): its numbers in the report's words, nothing measured here.

    ``reapply`` says how to re-apply the policy (``command`` and ``policy_file``). With ``[longitudinal]``
    the report gains a ``longitudinal`` part (:func:`longitudinal_section`, with the simulated attack and
    ``operations``, the JSON of earlier ``deid truncate``/``deid codes`` runs). ``title`` heads the page.
    """
    today = today or _dt.date.today()
    a, spec, policy = ra.release, ra.spec, ra.policy
    rel = a.spec.release
    fates = [dict(f) for f in ra.columns]
    for op in operations:  # a column changed before this assessment says so first
        for f in fates:
            if f["column"] == operation_column(op):
                what, result = operation_text(op)
                f["earlier"] = f"{what}: {result}"
                f["text"] = f"Before this release, {result}. Then: {f['text'][:1].lower()}{f['text'][1:]}"
    lg = a.spec.longitudinal
    earlier, commands = recipe(operations, (reapply or {}).get("command", REAPPLY), lg.level1 if lg else ())
    suppressed = ra.suppressed_records
    risk_after = dict(a.summary)
    risk_after["suppressed_records"] = suppressed
    k = a.attack["k_equivalent"]  # the smallest class the verdict's criterion allows (risk.release_k)
    attack_before = ra.attack_before
    steps = {
        "1_identifiers": {
            "direct": spec.direct, "quasi": spec.quasi, "sensitive": spec.role("sensitive"), "other": spec.role("other"),
            "why": {"direct": WHY_DIRECT, "quasi": WHY_QUASI}, "source": SOURCES["identifiers"],
        },
        "2_threshold": {
            "release_type": rel.type, "threshold": rel.threshold, "k_equivalent": k,
            "k_unit": "persons" if a.spec.longitudinal is not None else "records",
            "metric": release_measure(rel), "average_at_most": a.attack.get("average_at_most"),
            "strict_cut": rel.strict_cut,
            "threshold_table": {t: {"metric": v["metric"], "range": list(v["range"])} for t, v in THRESHOLD_TABLE.items()},
            "why": ("A public release faces a demonstration attack, so its maximum risk is held to 0.09–0.05."
                    if rel.type == "public" else
                    "A release to known recipients faces a deliberate attempt (T1), the recognition of an "
                    "acquaintance (T2) and a breach (T3); their risk is an average, held to 0.1–0.05."),
            "source": SOURCES["thresholds"],
        },
        "3_attacks": a.attack["attacks"],
        "4_transformation": {
            "levels": {f["column"]: f["level_to"] for f in fates if "level_to" in f} or a.levels,
            "record_suppression": suppressed, "records_suppressed": suppressed, "suppression_k": next(
                (int(s["k"]) for s in policy.steps if s["op"] == "suppress_records"), None),
            "persons_suppressed": a.summary.get("suppressed_persons"),
            "columns": fates, "steps": [describe_step(s, s.get("column", ""), set()) if s["op"] != "generalize"
                                        else {"op": "generalize", "column": s["column"], "level": s["level"]}
                                        for s in policy.steps],
            "hierarchies": {q: h.to_dict() for q, h in a.spec.hierarchies.items()},
            "missing_values": a.spec.missing, "policy": policy.to_dict(),
            "reapply": {**dict(reapply or {}), "commands": commands, "earlier_steps": [list(e) for e in earlier]},
            "earlier_operations": [operation_text(op) for op in operations],
        },
        "5_evidence": {
            "risk_before": ra.risk_before, "risk_after": risk_after,
            "attack_before": attack_before, "attack_after": a.attack,
            "meets_threshold": a.attack["meets_threshold"], "overall_risk": a.attack["overall_risk"],
            "overall_risk_before": attack_before["overall_risk"], "met_before": attack_before["meets_threshold"],
            "information_loss": ra.information_loss,
            "loss_per_column": ra.loss_per_column,
            "reassess_between": [_add_months(today, 18).isoformat(), _add_months(today, 24).isoformat()],
        },
    }
    report = {"input": input_name, "generated": today.isoformat(), "steps": steps, "sources": dict(SOURCES)}
    if a.spec.longitudinal is not None and ra.events_per_person is not None:
        report["longitudinal"] = longitudinal_section(ra, operations)
        report["sources"].update(LONGITUDINAL_SOURCES)
    if title is not None:
        report["title"] = title
    return report


