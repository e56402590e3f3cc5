"""The report an ethics board reads: the five steps of El Emam & Arbuckle's
method as a JSON-ready dict, and one HTML renderer for it.

Sections follow *Anonymizing Health Data* (El Emam & Arbuckle, O'Reilly
2013), ch. 2, "Steps in the De-Identification Methodology": 1 direct
identifiers and quasi-identifiers; 2 the threshold; 3 the risk measured under
the plausible attacks; 4 what was done, column by column (with the policy in
re-appliable form); 5 the re-assessment of the release (risk before and
after against the threshold, information loss, plots) and a date 18–24
months ahead to look at it again (ch. 3, "Final Thoughts"). ``deid assess
--html`` and ``party link-release`` both call :func:`build_report` and
:func:`render_html`; link-release adds a ``linkage`` section to the dict.
"""
from __future__ import annotations

import base64
import datetime as _dt
import html
import io
import json
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .assess import Assessment, information_loss
from .errors import DeidInputError
from .hierarchy import DATE_LEVELS, build_hierarchy, distinct_values
from .metric import is_marker, non_uniform_entropy
from .risk import THRESHOLD_TABLE, attack_assessment, k_for_threshold
from .spec import SUPPRESSED, HierarchySpec, Spec
from .transform import Policy
from .transform.ops import step_touches
from .transform.ops import MASKING_OPS

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

ROLE_TEXT = {"direct": "direct identifier", "quasi": "quasi-identifier", "sensitive": "sensitive (analytic)",
             "other": "other (not identifying)", "undeclared": "not declared in the spec"}

#: Measures in words, in the order the tables show them; "a.b" reads summary[a][b].
MEASURES = [
    ("persons", "Persons (longitudinal data: class sizes below count persons)"),
    ("records", "Records"),
    ("suppressed_persons", "Persons suppressed (all their records)"),
    ("suppressed_records", "Records suppressed"),
    ("fully_missing_records", "Records with every quasi-identifier missing"),
    ("equivalence_classes", "Equivalence classes (records alike on the quasi-identifiers)"),
    ("k_min", "Smallest equivalence class (k)"),
    ("prosecutor.max", "Prosecutor risk, maximum"),
    ("prosecutor.average", "Prosecutor risk, average"),
    ("prosecutor.strict_average", "Prosecutor risk, strict average"),
    ("journalist.max", "Journalist risk, maximum"),
    ("journalist.average", "Journalist risk, average"),
    ("marketer", "Marketer risk"),
    ("population_risk.normalized", "Population risk (normalized)"),
    ("instance_disclosure.max_r", "Instance disclosure risk, maximum"),
    ("instance_disclosure.R", "Instance disclosure risk, average"),
]

ATTACK_NAMES = {"T1": "T1 deliberate attempt (data recipient)", "T2": "T2 inadvertent recognition of an acquaintance",
                "T3": "T3 data breach", "T4": "T4 public release (demonstration attack)"}

_LEVEL_NAMES = {"week": "week of the month", "month": "month", "quarter": "quarter", "year": "year",
                "5y": "5-year band", "10y": "10-year band"}


def _add_months(d: _dt.date, months: int) -> _dt.date:
    y, m = divmod(d.month - 1 + months, 12)
    day = min(d.day, 28)
    return _dt.date(d.year + y, m + 1, day)


def _get(summary: Mapping[str, Any], key: str) -> Any:
    value: Any = summary
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


# ------------------------------------------------------------------ what happened to each column

def level_names(hs: HierarchySpec, height: int) -> list[str]:
    """A name per hierarchy level (0 = the original value, the top = every value replaced by ``*``)."""
    p = dict(hs.params)
    if hs.builder == "dates":
        names = ["day (the full date)"] + [_LEVEL_NAMES[lv] for lv in p.get("levels", DATE_LEVELS)]
    elif hs.builder == "interval":
        names = ["the exact value"] + [f"intervals of {w}" for w in p.get("widths", [5, 10, 20])]
        if p.get("top_code") is not None:
            names[1:] = [n + f" ({int(p['top_code'])}+ at the top)" for n in names[1:]]
    elif hs.builder == "prefix":
        names = ["the full code"] + [f"last {i} character{'s' if i > 1 else ''} cropped" for i in range(1, height)]
    elif hs.builder == "icd":
        names = ["the full code", "4 characters", "3-character category", "chapter"]
    elif hs.builder == "atc":
        names = ["the full ATC code (substance)", "chemical subgroup (5 characters)",
                 "pharmacological subgroup (4 characters)", "therapeutic subgroup (3 characters)",
                 "anatomical main group (1 character)"]
    else:
        names = ["the original value"] + [f"level {i} of the hierarchy" for i in range(1, height)]
    names = (names + [f"level {i}" for i in range(len(names), height)])[:height]
    return names + ["* (hidden)"]


def _hierarchy_of(step: Mapping[str, Any], column: str, values: set[str]) -> tuple[HierarchySpec, int]:
    hs = HierarchySpec.from_dict(column, step["hierarchy"])
    return hs, build_hierarchy(hs, values, name=column).height


def describe_step(step: Mapping[str, Any], column: str, values: set[str]) -> dict:
    """One policy step, as it concerns ``column``, in words (plus levels for ``generalize``)."""
    op = step["op"]
    if op == "drop":
        return {"op": op, "text": "dropped: the column is not in the release"}
    if op == "generalize":
        hs, height = _hierarchy_of(step, column, values)
        level = int(step["level"])
        names = level_names(hs, height)
        source = f" ({hs.params['source']})" if hs.params.get("source") else ""
        return {"op": op, "builder": hs.builder, "level_from": 0, "level_to": level, "height": height,
                "from": names[0], "to": names[level],
                "text": f"generalized from {names[0]} to {names[level]} ({hs.builder} hierarchy{source})"}
    if op == "map":
        return {"op": op, "text": f"recoded: {len(step.get('mapping', {}))} values replaced by more general ones"}
    if op == "suppress_records":
        if step.get("person"):
            return {"op": op, "k": int(step["k"]), "person": step["person"],
                    "text": f"every record of the persons in a class of fewer than k = {int(step['k'])} persons on "
                            f"{', '.join(step['columns'])} suppressed"}
        return {"op": op, "k": int(step["k"]),
                "text": f"records in classes smaller than k = {int(step['k'])} on "
                        f"{', '.join(step['columns'])} suppressed"}
    if op == "suppress_cells":
        return {"op": op, "text": f"cells holding any of {len(step.get('values', []))} rare values suppressed"}
    if op == "blank":
        return {"op": op, "text": f"every cell replaced by {SUPPRESSED}"}
    if op == "zip3":
        return {"op": op, "text": "cut to the first 3 digits; 3-digit areas of 20,000 people or fewer set to 000"}
    if op == "year":
        return {"op": op, "text": "reduced to the year"}
    if op == "top_code":
        at = int(float(step.get("at", 90)))
        return {"op": op, "text": f"values of {at} and over grouped as {step.get('label', f'{at}+')}"}
    if op == "birth_year_cap":
        cap = int(step["reference_year"]) - 90
        return {"op": op, "text": f"birth years up to {cap} (age 90 or over) grouped as <={cap}"}
    if op == "pseudonymize":
        text = "masked: replaced by keyed pseudonyms (HMAC-SHA256, key kept by the data owner)"
        if step.get("dominant"):
            text += (f"; its dominant value vs the rest assessed as a quasi-identifier with "
                     f"{', '.join(step['dominant'].get('columns', []))} (k = {step['dominant'].get('k')})")
        return {"op": op, "text": text}
    if op == "randomize":
        return {"op": op, "text": "masked: replaced by keyed random values"}
    if op == "fpe":
        return {"op": op, "text": f"masked: format-preserving pseudonyms (FF3-1, format {step.get('format', 'digits')}, "
                                  "key kept by the data owner)"}
    if op == "names":
        return {"op": op, "text": f"masked: replaced by {step.get('part', 'first')} names drawn from a name-frequency "
                                  "list" + (f", conditioned on the released {step['sex']}" if step.get("sex") else "")}
    if op == "dates_intervals":
        text = (f"dates replaced by randomized intervals from a {step.get('anchor', 'month')} anchor (interval "
                f"width {step.get('width', 7)} days)")
        if step.get("birth") or step.get("death"):
            text += (", each person's timeline" + (f" opened by {step['birth']}" if step.get("birth") else "")
                     + (" and" if step.get("birth") and step.get("death") else "")
                     + (f" closed by {step['death']}" if step.get("death") else ""))
        if column in (step.get("connected") or {}):
            text = f"moved by the same number of days as {step['connected'][column]} on the same row"
        return {"op": op, "text": text}
    return {"op": op, "text": op}


def _as_text(s: pd.Series) -> pd.Series:
    return s.astype(object).where(s.notna(), "")


#: A report shows an original value only when at least this many records hold it: an example must not
#: disclose a rare value (a unique date of birth is a person's quasi-identifier).
EXAMPLE_MIN_RECORDS = 5


def release_example(before: pd.Series, after: pd.Series, held: pd.Series) -> dict[str, str]:
    """The most frequent change before → after; a rare original value (held by fewer than
    :data:`EXAMPLE_MIN_RECORDS` records of the input) is not shown, only what it became."""
    pairs = pd.DataFrame({"before": before, "after": after})
    counts = pairs.value_counts().reset_index().sort_values(["count", "before"], ascending=[False, True])
    top = counts.iloc[0]
    if int(held.get(top["before"], 0)) >= EXAMPLE_MIN_RECORDS:
        return {"before": str(top["before"]), "after": str(top["after"])}
    return {"before": f"(held by fewer than {EXAMPLE_MIN_RECORDS} records: not shown)", "after": str(top["after"]),
            "withheld": True}


def column_fates(source: pd.DataFrame, output: pd.DataFrame, spec: Spec, policy: Policy) -> list[dict]:
    """Per input column: its role and exactly what happened to it in the release.

    ``output`` has the rows of ``source`` in the same order. Examples (a value
    before -> after) are the most frequent changed value of a quasi-identifier
    or analytic column; direct identifiers and masked columns never show one.
    """
    fates = []
    for column in source.columns:
        role = spec.columns.get(column, "undeclared")
        fate: dict[str, Any] = {"column": column, "role": role, "role_text": ROLE_TEXT.get(role, role)}
        steps = [s for s in policy.steps if step_touches(s, column)]
        values = distinct_values(source[column])
        actions = [describe_step(s, column, values) for s in steps if column in output.columns or s["op"] == "drop"]
        if column not in output.columns:
            fate.update(fate="dropped", actions=actions or [describe_step({"op": "drop"}, column, values)],
                        text="Dropped: not in the release" + (" (a direct identifier)." if role == "direct" else "."))
            fates.append(fate)
            continue
        before, after = _as_text(source[column]), _as_text(output[column])
        was, now = is_marker(source[column]), is_marker(output[column])
        gone_before = was | source[column].isna().to_numpy()  # a marker read back from a file is missing
        suppressed = now & ~was
        changed = (before.to_numpy() != after.to_numpy()) & ~suppressed
        generalize = [a for a in actions if a["op"] == "generalize"]
        fate.update(
            actions=actions, cells_changed=int(changed.sum()), cells_suppressed=int(suppressed.sum()),
            cells_missing_before=int(gone_before.sum()),
            distinct_before=int(before[~was].nunique()), distinct_after=int(after[~now].nunique()),
        )
        if generalize:
            fate.update(level_from=0, level_to=generalize[-1]["level_to"], height=generalize[-1]["height"],
                        generalized_from=generalize[-1]["from"], generalized_to=generalize[-1]["to"])
        masked = any(a["op"] in MASKING_OPS for a in actions)
        if changed.any() and role != "direct" and not masked:
            fate["example"] = release_example(before[changed], after[changed], before.value_counts())
        if not actions and not changed.any() and not now.any() and not gone_before.any():
            fate.update(fate="kept", text="Kept as it is.")
        else:
            words = [a["text"] for a in actions if a["op"] != "suppress_records"] or (["changed"] if changed.any()
                                                                                        or suppressed.any() else [])
            words = words or ["kept as it is"]
            if suppressed.any():
                words.append(f"{int(suppressed.sum())} cell{'s' if suppressed.sum() != 1 else ''} suppressed")
            if gone_before.any():
                words.append(f"{int(gone_before.sum()):,} of {len(was):,} cells already missing or suppressed in the "
                             "input (an earlier deid codes or deid truncate suppresses cells)")
            fate.update(fate="masked" if masked else ("generalized" if generalize else "transformed"),
                        text="; ".join(words)[:1].upper() + "; ".join(words)[1:] + ".")
        fates.append(fate)
    return fates


def _suppressed_records(output: pd.DataFrame, policy: Policy) -> int:
    """Records whose quasi-identifiers were all suppressed by a ``suppress_records`` step."""
    count = 0
    for step in policy.steps:
        if step["op"] == "suppress_records":
            cols = [c for c in step["columns"] if c in output.columns]
            if cols:
                mask = np.ones(len(output), dtype=bool)
                for c in cols:
                    mask &= is_marker(output[c])
                count = max(count, int(mask.sum()))
    return count


def _loss_per_column(source: pd.DataFrame, output: pd.DataFrame, qis: Sequence[str], fates: list[dict]) -> list[dict]:
    by_column = {f["column"]: f for f in fates}
    rows = []
    for q in qis:
        f = by_column.get(q, {})
        if q not in output.columns:
            rows.append({"column": q, "dropped": True, "distinct_before": int(source[q].nunique()), "distinct_after": 0,
                         "cells_suppressed": 0, "entropy_percent": 100.0, "precision": 0.0})
            continue
        nue = non_uniform_entropy(source, output, [q])
        level, height = f.get("level_to", 0), f.get("height", 0)
        n = len(output)
        supp = is_marker(output[q]).sum()
        precision = 1.0 - ((n - supp) * (level / height if height else 0.0) + supp) / n if n else 1.0
        rows.append({"column": q, "dropped": False, "distinct_before": f.get("distinct_before"),
                     "distinct_after": f.get("distinct_after"), "cells_suppressed": f.get("cells_suppressed", 0),
                     "entropy_bits": nue["bits"], "entropy_percent": nue["percent"], "precision": precision})
    return rows


# ------------------------------------------------------------------ the report dict

def _events_per_person(person_index: np.ndarray) -> dict:
    n = np.bincount(person_index)
    return {"min": int(n.min()), "median": float(np.median(n)), "mean": float(n.mean()), "max": int(n.max())}


def longitudinal_section(a: Assessment, attack: Mapping[str, Any] | None = None,
                         operations: Sequence[Mapping[str, Any]] = ()) -> dict:
    """The report's longitudinal part: persons and events, per-person vs per-row risk, the adversary power
    and the simulated attack (``deid assess --attack``), and earlier truncation/code operations (their
    ``deid truncate``/``deid codes`` report JSON)."""
    lg = a.spec.longitudinal
    if lg is None or a.person_index is None:
        raise DeidInputError("the longitudinal section needs an assessment made with [longitudinal]")
    rows = a.row_summary or {}
    return {"person": lg.person, "level1": list(lg.level1), "level2": list(lg.level2),
            "adversary_power": lg.adversary_power, "persons": a.summary["persons"], "events": a.summary["events"],
            "events_per_person": _events_per_person(a.person_index),
            "risk_persons": {"k_min": a.summary["k_min"], **a.summary["prosecutor"]},
            "risk_rows": {"k_min": rows.get("k_min"), **(rows.get("prosecutor") or {})},
            "attack": dict(attack) if attack else None, "operations": [dict(o) for o in operations]}


def build_report(a: Assessment, input_name: str = "", today: _dt.date | None = None, *,
                 source: pd.DataFrame | None = None, before: Assessment | None = None,
                 policy: Policy | None = None, reapply: Mapping[str, str] | None = None,
                 attack: Mapping[str, Any] | None = None, operations: Sequence[Mapping[str, Any]] = ()) -> dict:
    """The five-step report as a JSON-ready dict (the ``report`` key of the assess JSON).

    ``a`` assesses the released table. ``source`` is the table before
    de-identification (same rows); ``before`` an assessment of it when ``a``
    was measured from scratch on the release (link-release); ``policy`` the
    policy that made the release (default ``a.policy``); ``reapply`` says how
    to re-apply it (``command`` and ``policy_file``). With ``[longitudinal]`` the report gains a
    ``longitudinal`` part (:func:`longitudinal_section`; ``attack`` and ``operations`` go into it).
    """
    today = today or _dt.date.today()
    spec = (before or a).spec
    rel = a.spec.release
    policy = policy or a.policy
    risk_before = before.summary if before is not None else a.before
    attack_before = before.attack if before is not None else attack_assessment(a.before, rel)
    qis = spec.quasi
    fates = column_fates(source, a.output, spec, policy) if source is not None else []
    if before is not None and source is not None:
        kept = [q for q in qis if q in a.output.columns]
        levels = {f["column"]: f.get("level_to", 0) for f in fates if f["column"] in kept}
        heights = {f["column"]: f.get("height", 0) for f in fates if f["column"] in kept}
        loss = information_loss(source, a.output, kept, levels, heights)
    else:
        loss = a.loss
    suppressed = _suppressed_records(a.output, policy) if source is not None else a.summary.get("suppressed_records", 0)
    risk_after = dict(a.summary)
    risk_after["suppressed_records"] = suppressed
    k = k_for_threshold(rel.threshold)
    steps = {
        "1_identifiers": {
            "direct": spec.direct, "quasi": spec.quasi, "sensitive": spec.role("sensitive"), "other": spec.role("other"),
            "why": {"direct": WHY_DIRECT, "quasi": WHY_QUASI}, "source": SOURCES["identifiers"],
        },
        "2_threshold": {
            "release_type": rel.type, "threshold": rel.threshold, "k_equivalent": k,
            "k_unit": "persons" if a.spec.longitudinal is not None else "records",
            "metric": "maximum risk (T4, public)" if rel.type == "public" else "strict average risk x Pr(T) (T1-T3)",
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
            "missing_values": a.spec.missing, "policy": policy.to_dict(), "reapply": dict(reapply or {}),
        },
        "5_evidence": {
            "risk_before": risk_before, "risk_after": risk_after,
            "attack_before": attack_before, "attack_after": a.attack,
            "meets_threshold": a.attack["meets_threshold"], "overall_risk": a.attack["overall_risk"],
            "overall_risk_before": attack_before["overall_risk"], "met_before": attack_before["meets_threshold"],
            "information_loss": loss,
            "loss_per_column": _loss_per_column(source, a.output, qis, fates) if source is not None else [],
            "reassess_between": [_add_months(today, 18).isoformat(), _add_months(today, 24).isoformat()],
        },
    }
    report = {"input": input_name, "generated": today.isoformat(), "steps": steps, "sources": dict(SOURCES)}
    if a.spec.longitudinal is not None and a.person_index is not None:
        report["longitudinal"] = longitudinal_section(a, attack, operations)
        report["sources"].update(LONGITUDINAL_SOURCES)
    return report


# ------------------------------------------------------------------ plots

def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def plots(a: Assessment, before: Assessment | None = None) -> dict[str, str]:
    """Records (persons with [longitudinal]) by class size, before and after, and the risk per record (per person)
    as base64 PNGs (matplotlib Agg)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = {}
    fig, ax = plt.subplots(figsize=(6, 3.2))
    sizes = a.ec_sizes if len(a.ec_sizes) else np.array([0])
    prior = (before.ec_sizes if before is not None else None)
    top = max(sizes.max(), prior.max() if prior is not None and len(prior) else 0, 2)
    bins = np.unique(np.round(np.logspace(0, np.log10(top), 30)))
    if prior is not None and len(prior):
        ax.hist(prior, bins=bins, weights=prior, color="#bbbbbb", label="before")
    ax.hist(sizes, bins=bins, weights=sizes, color="#4472c4", alpha=0.85, label="released")
    ax.set_xscale("log")
    unit = "persons" if a.person_index is not None else "records"  # [longitudinal]: classes count persons
    ax.set_xlabel(f"size of the equivalence class ({unit} in it)")
    ax.set_ylabel(unit)
    ax.axvline(a.attack["k_equivalent"], color="#c00000", ls="--", label=f"k = {a.attack['k_equivalent']}")
    ax.legend()
    out["ec_histogram"] = _png(fig)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 3.2))
    for col, color in (("prosecutor", "#4472c4"), ("journalist", "#ed7d31"), ("instance_disclosure", "#70ad47")):
        if col in a.per_record:
            r = np.sort(a.per_record[col].dropna().to_numpy())[::-1]
            ax.plot(np.arange(1, len(r) + 1), r, label=f"{col.replace('_', ' ')} (released)", color=color)
    if before is not None and "prosecutor" in before.per_record:
        r = np.sort(before.per_record["prosecutor"].dropna().to_numpy())[::-1]
        ax.plot(np.arange(1, len(r) + 1), r, label="prosecutor (before)", color="#999999", ls=":")
    ax.axhline(a.spec.release.threshold, color="#c00000", ls="--", label="threshold")
    ax.set_xscale("log")
    ax.set_xlabel(f"{unit} (sorted by risk)")
    ax.set_ylabel(f"risk per {unit[:-1]}")
    ax.legend(fontsize=8)
    out["risk_per_record"] = _png(fig)
    plt.close(fig)
    return out


# ------------------------------------------------------------------ HTML

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;max-width:62em;margin:2em auto;
padding:0 1em;line-height:1.45}
h1{font-size:1.7em;margin-bottom:.2em}h2{border-bottom:2px solid #4472c4;padding-bottom:.15em;margin-top:1.8em}
h3{margin-top:1.3em}.meta{color:#555}
table{border-collapse:collapse;margin:.6em 0 1em;font-size:.95em}
th,td{border:1px solid #ccd;padding:4px 8px;text-align:left;vertical-align:top}
thead th{background:#eef2fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#176d2c;font-weight:600}.fail{color:#b00020;font-weight:600}
.verdict{padding:.7em 1em;border-radius:6px;margin:1em 0;border:1px solid}
.verdict.pass{background:#eaf6ec;border-color:#9ccaa5}.verdict.fail{background:#fdecee;border-color:#e6a1aa}
pre{background:#f6f6f6;padding:1em;overflow:auto;font-size:.85em;max-height:30em}
pre.cmd{white-space:pre-wrap;word-break:break-all;max-height:none}code{background:#f2f2f2;padding:0 .2em}.small{font-size:.85em;color:#555}
figure{display:inline-block;margin:.5em 1em .5em 0}figcaption{font-size:.85em;color:#555}
ol.sources li{margin-bottom:.3em}
"""


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) >= 1e4 else f"{v:.4g}"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, (list, tuple)):
        return ", ".join(_fmt(x) for x in v) or "—"
    if isinstance(v, dict):
        return "; ".join(f"{k}: {_fmt(x)}" for k, x in v.items()) or "—"
    return str(v)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], numeric: Sequence[int] = ()) -> str:
    """An HTML table; every cell is escaped (cells already in HTML are passed as ``_Html``)."""
    def cell(i: int, v: Any) -> str:
        text = v.html if isinstance(v, _Html) else html.escape(_fmt(v))
        return f"<td class='num'>{text}</td>" if i in numeric else f"<td>{text}</td>"
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(cell(i, v) for i, v in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


class _Html:
    """A cell whose text is already escaped HTML."""

    def __init__(self, text: str) -> None:
        self.html = text


def _verdict(ok: bool) -> _Html:
    return _Html("<span class='pass'>meets</span>" if ok else "<span class='fail'>does not meet</span>")


def _p(text: str) -> str:
    return f"<p>{html.escape(text)}</p>"


def _names(cols: Sequence[str]) -> str:
    return ", ".join(cols) if cols else "none"


def _section_identifiers(s: dict) -> list[str]:
    ids = s["1_identifiers"]
    return [
        "<h2>1. Direct identifiers and quasi-identifiers</h2>",
        _p(f"Direct identifiers: {_names(ids['direct'])}. {ids['why']['direct']}"),
        _p(f"Quasi-identifiers: {_names(ids['quasi'])}. {ids['why']['quasi']}"),
        _p(f"Sensitive (analytic) columns: {_names(ids['sensitive'])}; other columns: {_names(ids['other'])}. "
           "They are released as they are unless the policy says otherwise."),
    ]


def _section_threshold(s: dict) -> list[str]:
    t = s["2_threshold"]
    rows = [[ATTACK_NAMES.get(a, a), "maximum risk" if v["metric"] == "max" else "average risk",
             f"{v['range'][0]} to {v['range'][1]}"] for a, v in t["threshold_table"].items()]
    return [
        "<h2>2. The threshold</h2>",
        _p(f"This is a {t['release_type']} release. {t['why']} The threshold is {t['threshold']}: every "
           f"equivalence class must hold at least k = {t['k_equivalent']} {t.get('k_unit', 'records')} for the "
           "risk measured on "
           f"them to stay at or under it."),
        _table(["attack", "risk metric", "threshold range"], rows),
    ]


def _attack_rows(attacks: Mapping[str, Any]) -> list[list[Any]]:
    return [[ATTACK_NAMES.get(t, t), v["pr_t"], v["pr_reid_given_t"], v["pr_reid"], _verdict(v["meets_threshold"])]
            for t, v in attacks.items()]


def _section_attacks(s: dict) -> list[str]:
    ev = s["5_evidence"]
    before = ev["attack_before"]
    return [
        "<h2>3. The risk, measured under the plausible attacks</h2>",
        _p("The risk of re-identification under an attack T is Pr(re-id, T) = Pr(T) × Pr(re-id | T): the chance "
           "the attack happens times the chance it succeeds, which is 1 / the size of a record's equivalence "
           "class. Before de-identification:"),
        _table(["attack", "Pr(T)", "Pr(re-id | T)", "Pr(re-id, T)", "threshold"], _attack_rows(before["attacks"]),
               numeric=(1, 2, 3)),
        _p(f"Before de-identification the data {'meet' if before['meets_threshold'] else 'do not meet'} the "
           f"threshold {s['2_threshold']['threshold']} (overall risk {_fmt(before['overall_risk'])})."),
    ]


def _fate_rows(fates: list[dict]) -> list[list[Any]]:
    rows = []
    for f in fates:
        ex = f.get("example")
        example = _Html(f"<code>{html.escape(ex['before'])}</code> → <code>{html.escape(ex['after'])}</code>") \
            if ex else "—"
        level = (f"{f['level_from']} → {f['level_to']} of {f['height']}" if "level_to" in f else "—")
        rows.append([_Html(f"<b>{html.escape(f['column'])}</b>"), f["role_text"], f["text"], level, example,
                     f.get("cells_suppressed", "—")])
    return rows


def _section_transformation(s: dict) -> list[str]:
    tr = s["4_transformation"]
    parts = ["<h2>4. What was done</h2>"]
    fates = tr.get("columns") or []
    if fates:
        dropped = [f["column"] for f in fates if f.get("fate") == "dropped"]
        generalized = [f"{f['column']} ({f['generalized_from']} → {f['generalized_to']})" for f in fates
                       if "generalized_to" in f]
        sentence = (f"Dropped: {_names(dropped)}. Generalized: {_names(generalized)}. ")
        k, persons, n = tr.get("suppression_k"), tr.get("persons_suppressed"), tr["records_suppressed"]
        if k and persons is not None:
            sentence += (f"Persons with a record in an equivalence class of fewer than k = {k} persons have all "
                         f"their records suppressed (their quasi-identifiers replaced by {SUPPRESSED}); here "
                         f"{persons:,} person{'s' if persons != 1 else ''}, {n:,} record{'s' if n != 1 else ''}.")
        else:
            sentence += (f"Records in equivalence classes smaller than k = {k} are suppressed (their "
                         f"quasi-identifiers replaced by {SUPPRESSED}); here {n:,} record"
                         f"{'s' if n != 1 else ''}." if k else "No record was suppressed.")
        parts += [_p(sentence),
                  _table(["column", "role", "what happened", "hierarchy level", "example before → after",
                          "cells suppressed by this release"], _fate_rows(fates), numeric=(5,)),
                  "<p class='small'>Examples are the most frequent changed value of a column; an original value "
                  f"held by fewer than {EXAMPLE_MIN_RECORDS} records is not shown, and direct identifiers and "
                  "masked columns never show one.</p>"]
    else:
        parts.append(_p("Policy steps: " + "; ".join(st.get("text", st["op"]) for st in tr.get("steps", [])) + "."))
    return parts


def _risk_table(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    rows = []
    for key, name in MEASURES:
        b, a = _get(before, key), _get(after, key)
        if (key == "suppressed_records" or (key == "suppressed_persons" and a is not None)) and b is None:
            b = 0
        if b is None and a is None:
            continue
        rows.append([name, b, a])
    return _table(["measure", "before", "released"], rows, numeric=(1, 2))


def _section_evidence(s: dict, images: Mapping[str, str]) -> list[str]:
    ev, t = s["5_evidence"], s["2_threshold"]
    ok = ev["meets_threshold"]
    verdict = (f"The released data {'meet' if ok else 'do NOT meet'} the threshold {t['threshold']}: "
               f"overall risk {_fmt(ev['overall_risk'])} (before: {_fmt(ev['overall_risk_before'])}).")
    loss = ev["information_loss"]
    nue, miss = loss.get("non_uniform_entropy", {}), loss.get("missingness", {})
    loss_rows = [
        ["Non-uniform entropy lost (share of the maximum)", f"{nue.get('percent', 0):.2f} %"],
        ["Records with a missing or suppressed quasi-identifier", f"{_fmt(miss.get('before', {}).get('record'))} → "
                                                                  f"{_fmt(miss.get('after', {}).get('record'))}"],
        ["Cells missing or suppressed (quasi-identifiers)", f"{_fmt(miss.get('before', {}).get('cell'))} → "
                                                            f"{_fmt(miss.get('after', {}).get('cell'))}"],
        ["Discernibility (Σ class size²)", f"{_fmt(loss.get('discernibility', {}).get('before'))} → "
                                           f"{_fmt(loss.get('discernibility', {}).get('after'))}"],
        ["Average equivalence class size", f"{_fmt(loss.get('average_class_size', {}).get('before'))} → "
                                           f"{_fmt(loss.get('average_class_size', {}).get('after'))}"],
        ["Precision (1 = nothing generalized)", _fmt(loss.get("precision", {}).get("precision"))],
    ]
    parts = [
        "<h2>5. Re-assessment of the release</h2>",
        f"<div class='verdict {'pass' if ok else 'fail'}'>{html.escape(verdict)}</div>",
        "<h3>Risk before and after</h3>",
        _risk_table(ev["risk_before"], ev["risk_after"]),
        _p("Released data under each plausible attack:"),
        _table(["attack", "Pr(T)", "Pr(re-id | T)", "Pr(re-id, T)", "threshold"],
               _attack_rows(ev["attack_after"]["attacks"]), numeric=(1, 2, 3)),
        "<h3>Information loss</h3>",
        _table(["measure", "value"], loss_rows),
    ]
    per = ev.get("loss_per_column") or []
    if per:
        parts.append(_table(["quasi-identifier", "distinct values before → after", "cells suppressed by this release",
                             "non-uniform entropy lost", "precision"],
                            [[r["column"], "dropped" if r["dropped"] else
                              f"{_fmt(r['distinct_before'])} → {_fmt(r['distinct_after'])}",
                              r["cells_suppressed"], f"{r['entropy_percent']:.2f} %", r["precision"]] for r in per],
                            numeric=(2, 3, 4)))
    numeric = (loss.get("numeric") or {}).get("columns") or {}
    if numeric:
        parts.append(_table(["numeric column", "mean before", "mean after", "SD before", "SD after",
                             "correlation before/after"],
                            [[c, v["mean_before"], v["mean_after"], v["sd_before"], v["sd_after"],
                              v["corr_before_after"]] for c, v in numeric.items()], numeric=(1, 2, 3, 4, 5)))
    if images:
        parts.append("<h3>Plots</h3>")
        captions = {"ec_histogram": "Records by the size of their equivalence class; dashed: the k the threshold needs",
                    "risk_per_record": "Risk per record, highest first, against the threshold"}
        for name, data in images.items():
            cap = captions.get(name, name)
            parts.append(f"<figure><img alt='{html.escape(cap)}' src='data:image/png;base64,{html.escape(data)}'>"
                         f"<figcaption>{html.escape(cap)}</figcaption></figure>")
    a, b = ev["reassess_between"]
    parts.append(_p(f"Re-assess between {a} and {b} (every 18 to 24 months), or earlier if quasi-identifiers are "
                    "added or changed, the recipients change, or the data come from a different population."))
    return parts


def _section_linkage(link: Mapping[str, Any]) -> list[str]:
    rows = [[k, v] for k, v in link.get("table", {}).items()]
    parts = ["<h2>Linkage</h2>",
             _p(str(link.get("summary", "")) + " The data were linked before they were de-identified, so the "
                "risk measured below is that of the linked table."),
             _table(["", "value"], rows)]
    learned = link.get("learned") or {}
    if learned:
        parts += ["<h3>What each party learned</h3>",
                  _table(["party", "learned", "never learned"], [[p, v["learned"], v["never"]]
                                                                 for p, v in learned.items()])]
    return parts


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.2f} %"


def _operation_text(op: Mapping[str, Any]) -> tuple[str, str]:
    """(what, result) of one earlier ``deid truncate``/``deid codes`` report, in words."""
    if "removed_claims" in op:
        how = (f"claims per person top-coded at the {op.get('percentile')}th percentile ({op.get('cutoff')} claims)"
               if op.get("method") == "percentile" else
               f"every bin of {op.get('width', 5)} claims per person holds at least k = {op.get('k')} persons")
        return (f"Long tail truncated: {how}",
                f"{op['removed_claims']:,} of {op['claims']:,} claims removed ({_pct(op['removed_claims_proportion'])})"
                f", from {op['removed_persons']:,} of {op['persons']:,} persons")
    if op.get("operation") == "suppress":
        return (f"Codes in {op.get('code')} suppressed where a code group is held by fewer than k = {op.get('k')} "
                "persons in its class", f"{op['suppressed_rows']:,} rows of {op['suppressed_persons']:,} persons "
                f"({op['groups_below_k']:,} code groups)")
    if op.get("operation") == "shuffle":
        return (f"Codes in {op.get('code')} shuffled among the persons of each class and code group "
                f"(level {op.get('group_level')} of the code hierarchy)",
                f"{op['rows_changed']:,} of {op['events']:,} rows now hold a different code "
                f"({op['groups']:,} groups); every group keeps its codes and their counts")
    return ("Earlier step", json.dumps(op, default=str)[:200])


def _section_longitudinal(lg: Mapping[str, Any]) -> list[str]:
    epp = lg["events_per_person"]
    rp, rr = lg["risk_persons"], lg["risk_rows"]
    parts = [
        "<h2>Longitudinal data: one person, many rows</h2>",
        _p(f"The table holds {lg['events']:,} events (rows) of {lg['persons']:,} persons, identified by the "
           f"column {lg['person']} (removed from the release). A person has {epp['min']:,} to {epp['max']:,} "
           f"events (median {_fmt(epp['median'])}). Every class size in this report counts distinct persons: "
           "three identical claims of one patient are a class of one person, whose risk is 1, not 1/3."),
        _p(f"Values fixed per person (level 1, always assumed known to an adversary): {_names(lg['level1'])}. "
           f"Values of each event (level 2): {_names(lg['level2'])}."),
        _table(["released data counted by", "smallest class", "maximum risk", "average risk"],
               [["persons (used in this report)", rp.get("k_min"), rp.get("max"), rp.get("average")],
                ["rows (would understate the risk)", rr.get("k_min"), rr.get("max"), rr.get("average")]],
               numeric=(1, 2, 3)),
    ]
    att = lg.get("attack")
    if att:
        power, res = att["adversary_power"], att["attack"]
        p_max = power["p_max"]
        if power.get("fixed"):
            parts.append(_p(f"Adversary power: the adversary is assumed to know {p_max} value(s) of each event "
                            f"column for every person."))
        else:
            by = power["by_qi"]
            rows = [[p] + [by[h]["distribution"].get(str(p), 0) for h in by] for p in range(1, p_max + 1)]
            parts += [_p(f"Adversary power: how many values of each event column an adversary is assumed to know "
                         f"about a person, at most {p_max}. It grows with the person's number of events and falls "
                         "when their values vary little (the book's formula with the Simpson variability). "
                         "Persons by power:"),
                      _table(["values known"] + [f"persons ({h})" for h in by], rows,
                             numeric=tuple(range(1, len(by) + 1)))]
        lo, hi = res["ci95"]
        thr = res["threshold"]
        how = ("every possible combination of known values of every person was tried" if res["exact"] else
               f"{res['iterations']:,} attacks were simulated on persons drawn at random (seed {res['seed']})")
        ok = res["average"] <= thr
        parts += [
            _p("Simulated attack: the adversary knows a person's level-1 values and as many of their event values "
               "as their power allows, looks for released persons whose events contain all of them, and picks one "
               f"of those at random. {how[0].upper() + how[1:]}."),
            _table(["result", "value"],
                   [["average chance of a correct re-identification", _pct(res["average"])],
                    ["95 % confidence interval", f"{_pct(lo)} to {_pct(hi)}" if not res["exact"] else "exact"],
                    [f"persons above the threshold {thr}", _pct(res["high_risk_persons"])],
                    ["simulated attack, average against the threshold", _verdict(ok)]]),
            _p("Two measures, two adversaries: step 5 below counts, per person, the persons who share one of "
               "their events (level-1 and level-2 values of one row: an adversary who knows one event), and "
               "gives the verdict on the threshold; the simulated attack above assumes an adversary who knows "
               "several events, all of which must be found in the same released person (the measure of the "
               "Heritage Health Prize release). They can disagree; the release decision should say which one "
               "it relies on."),
        ]
    else:
        parts.append(_p("No simulated attack was run (deid assess --attack runs one)."))
    ops = lg.get("operations") or []
    if ops:
        parts += ["<h3>Done before this assessment</h3>",
                  _table(["step", "result"], [_operation_text(o) for o in ops])]
    return parts


def _section_policy(s: dict) -> list[str]:
    tr = s["4_transformation"]
    re_ = tr.get("reapply") or {}
    command = re_.get("command", "deid apply --input NEXT.csv --policy POLICY.json --out RELEASE.csv")
    where = re_.get("policy_file")
    if not s["5_evidence"]["meets_threshold"]:  # a failing release is never offered for re-application
        return ["<h2>The policy</h2>",
                _p("This release does NOT meet its threshold: the policy below is not to be re-applied as it is. "
                   "Generalize or suppress more (deid search finds a policy that meets it), then assess again."),
                f"<pre>{html.escape(json.dumps(tr['policy'], indent=2, default=str))}</pre>"]
    return [
        "<h2>The policy to re-apply</h2>",
        _p("Next year's data of the same kind can be released the same way: the same generalizations give the "
           "same risk on a stable population, which this report's re-assessment confirms or refutes."
           + (f" The policy is saved as {where}." if where else " Save the JSON below as POLICY.json.")),
        f"<pre class='cmd'>{html.escape(command)}</pre>",
        f"<pre>{html.escape(json.dumps(tr['policy'], indent=2, default=str))}</pre>",
    ]


def _section_sources(report: Mapping[str, Any]) -> list[str]:
    items = "".join(f"<li>{html.escape(v)}</li>" for v in (report.get("sources") or SOURCES).values())
    return ["<h2>Sources</h2>", f"<ol class='sources'>{items}</ol>"]


def render_html(report: Mapping[str, Any], images: Mapping[str, str] | None = None) -> str:
    """A self-contained, offline HTML page for a :func:`build_report` dict (plots as PNG data URIs)."""
    if not isinstance(report, Mapping) or "steps" not in report:
        raise DeidInputError("render_html needs a report dict from build_report")
    s = report["steps"]
    title = report.get("title", "De-identification report")
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p class='meta'>Input: {html.escape(str(report.get('input', '')))} — generated "
        f"{html.escape(str(report.get('generated', '')))}. The method follows El Emam &amp; Arbuckle's five steps "
        "(sources at the end).</p>",
    ]
    if report.get("linkage"):
        parts += _section_linkage(report["linkage"])
    parts += _section_identifiers(s)
    parts += _section_threshold(s)
    if report.get("longitudinal"):
        parts += _section_longitudinal(report["longitudinal"])
    parts += _section_attacks(s)
    parts += _section_transformation(s)
    parts += _section_evidence(s, images or {})
    parts += _section_policy(s)
    parts += _section_sources(report)
    parts.append("</body></html>")
    return "\n".join(parts)


def search_plot(result: dict) -> str:
    """Risk vs information loss of the policies a search found, best one marked; base64 PNG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pols = result.get("policies", [])
    fig, ax = plt.subplots(figsize=(6, 3.6))
    if pols:
        loss = np.array([p["information_loss"] for p in pols], dtype=float)
        risk = np.array([p["risk"] for p in pols], dtype=float)
        ax.scatter(loss, risk, s=18, color="#4472c4", label=f"{len(pols)} policies")
        ax.scatter(loss[:1], risk[:1], s=60, facecolors="none", edgecolors="#c00000", label="best")
    thr = result.get("threshold", (result.get("criterion") or {}).get("threshold"))
    if thr:
        ax.axhline(thr, color="#c00000", ls="--", label="threshold")
    ax.set_xlabel(f"information loss ({result.get('loss', '')})")
    ax.set_ylabel("risk")
    ax.set_title(f"deid search --method {result.get('method', '')}")
    ax.legend(fontsize=8)
    out = _png(fig)
    plt.close(fig)
    return out


def render_search_html(result: dict) -> str:
    """A self-contained page: the search's settings, the policies plot and the best policy."""
    esc = html.escape
    meta = {k: v for k, v in result.items() if k not in ("policies", "best_policy")}
    rows = "".join(f"<tr><th>{esc(str(k))}</th><td>{esc(_fmt(v))}</td></tr>" for k, v in meta.items())
    best = result["policies"][0] if result.get("policies") else {}
    return "\n".join([
        "<!doctype html><html><head><meta charset='utf-8'><title>Policy search</title>",
        f"<style>{CSS}</style>",
        "</head><body><h1>De-identification policy search</h1>", f"<table>{rows}</table>",
        f"<img alt='risk vs information loss' src='data:image/png;base64,{search_plot(result)}'>",
        "<h2>Best policy</h2>", f"<pre>{esc(json.dumps(best, indent=2, default=float)[:20000])}</pre>",
        "</body></html>",
    ])


# ------------------------------------------------------------------ utility (deid utility)

def _section_utility(u: Mapping[str, Any]) -> list[str]:
    """Original vs released under the analyses of :mod:`deid_core.metric.utility` (El Emam & Arbuckle, ch. 13)."""
    rec = u.get("records", {})
    parts = ["<h2>Data utility: the same analyses on the original and the released data</h2>",
             _p(f"Records: {_fmt(rec.get('original'))} original, {_fmt(rec.get('released'))} released. Each "
                "statistic is computed on each table on its own; the mean squared error (MSE) sums up how far "
                "the released estimates are from the original ones.")]
    mom = u.get("moments") or {}
    if mom:
        parts += ["<h3>Means and standard deviations</h3>",
                  _table(["column", "mean original", "mean released", "SD original", "SD released"],
                         [[c, v["mean_before"], v["mean_after"], v["sd_before"], v["sd_after"]]
                          for c, v in mom["columns"].items()], numeric=(1, 2, 3, 4)),
                  _p(f"MSE of the means: {_fmt(mom.get('mse_means'))}; of the SDs: {_fmt(mom.get('mse_sds'))}.")]
    cov = u.get("covariance") or {}
    if cov:
        cols = list(cov["before"])
        rows = [[f"{a} × {b}", cov["before"][a][b], cov["after"][a][b]] for i, a in enumerate(cols) for b in cols[i:]]
        parts += ["<h3>Covariance matrix</h3>",
                  _table(["pair", "covariance original", "covariance released"], rows, numeric=(1, 2)),
                  _p(f"MSE of the covariance entries: {_fmt(cov.get('mse'))}.")]
    for r in u.get("regressions") or []:
        b, a = r["before"], r["after"]
        inside = r["after_within_before_ci95"]
        rows = [[k, b["coefficients"][k], b["std_errors"][k], a["coefficients"][k], a["std_errors"][k],
                 "—" if inside[k] is None else ("yes" if inside[k] else "no")] for k in b["coefficients"]]
        parts += [f"<h3>Regression {html.escape(r['formula'])}</h3>",
                  _table(["term", "coefficient original", "SE", "coefficient released", "SE",
                          "released inside the original 95 % CI"], rows, numeric=(1, 2, 3, 4)),
                  _p(f"Records used: {_fmt(b['n'])} original, {_fmt(a['n'])} released; R² {_fmt(b['r2'])} → "
                     f"{_fmt(a['r2'])}; MSE of the coefficients {_fmt(r.get('mse'))}.")]
    tabs = u.get("crosstabs") or []
    if tabs:
        parts += ["<h3>Cross-tabulations</h3>",
                  _table(["columns", "total variation distance", "Cramér's V original", "Cramér's V released",
                          "cells original → released"],
                         [[" × ".join(t["columns"]), t["tvd"], t["cramers_v_before"], t["cramers_v_after"],
                           f"{t['cells_before']} → {t['cells_after']}"] for t in tabs], numeric=(1, 2, 3)),
                  _p("Total variation distance: 0 = the same table, 1 = no cell in common (a generalized value is a "
                     "different cell). Cramér's V measures the strength of the association, which a recoding of "
                     "the categories keeps.")]
    cc = u.get("complete_cases") or {}
    if cc:
        parts += ["<h3>Complete case analysis</h3>",
                  _table(["", "original", "released"],
                         [["records with a missing or suppressed cell (lost by complete case analysis)",
                           _pct(cc["lost_before"]), _pct(cc["lost_after"])],
                          ["average share of missing cells per column (p)", _pct(cc["p_before"]), _pct(cc["p_after"])],
                          [f"expected loss 1 − (1 − p)^m, m = {cc['m']}", _pct(cc["expected_lost_before"]),
                           _pct(cc["expected_lost_after"])]], numeric=(1, 2)),
                  _p("The expected loss assumes the cells are missing at random; suppression is not random (rare "
                     "values go first), so the observed loss is the one to read.")]
    return parts


def render_utility_html(result: Mapping[str, Any]) -> str:
    """A self-contained page for a ``deid utility`` result."""
    return "\n".join([
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Data utility</title>",
        f"<style>{CSS}</style></head><body><h1>Data utility report</h1>",
        f"<p class='meta'>Original: {html.escape(str(result.get('original', '')))} — released: "
        f"{html.escape(str(result.get('released', '')))}.</p>",
        *_section_utility(result),
        "<h2>Sources</h2><ol class='sources'><li>" + html.escape(f"{BOOK}, ch. 13, “Workload-Aware De-Identification”")
        + "</li><li>" + html.escape(f"{BOOK}, ch. 2, “The Impact of Missingness”") + "</li></ol>",
        "</body></html>",
    ])
