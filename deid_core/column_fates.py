"""What a release did to each column, in words and numbers: the name of every hierarchy level, each
policy step as a sentence, a column's fate (kept, dropped, generalized, masked, cells suppressed) with a
safe example, and the information lost per quasi-identifier (El Emam & Arbuckle, ch. 2, "Step 1" and
"Information Loss Metrics")."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .hierarchy import DATE_LEVELS, build_hierarchy, distinct_values
from .metric import is_marker, non_uniform_entropy
from .spec import SUPPRESSED, HierarchySpec, Spec
from .transform import Policy
from .transform.ops import MASKING_OPS, step_touches

ROLE_TEXT = {"direct": "direct identifier", "quasi": "quasi-identifier", "sensitive": "sensitive (analytic)",
             "other": "other (not identifying)", "undeclared": "not declared in the spec",
             "text": "free-text notes"}
#: What each ``[text] mode`` does to the identifiers found in a note, in words.
TEXT_MODE_WORDS = {"tag": "replaced by a tag of its type (<LAST_NAME:1>)", "redact": "replaced by ***",
                   "generalize": "generalized (dates to the year, ages over 89 to 90+, ZIP codes to 3 digits), "
                                 "the rest tagged",
                   "surrogate": "replaced by a realistic surrogate under the data owner's key (names from lists, "
                                "identifiers digit for digit, one date shift per patient)"}


_LEVEL_NAMES = {"week": "week of the month", "month": "month", "quarter": "quarter", "year": "year",
                "5y": "5-year band", "10y": "10-year band"}


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


def notes_found_text(found: Mapping[str, Any] | None) -> str:
    """What a notes column's de-identification found, per identifier type, as a sentence for the page
    (``found``: its ``notes`` counts, :meth:`deid_core.text.column.ColumnResult.summary`); "" without."""
    if not found:
        return ""
    documents, with_phi = int(found.get("documents", 0)), int(found.get("documents_with_phi", 0))
    counts = sorted(((int(n), kind) for kind, n in (found.get("found") or {}).items() if int(n)), reverse=True)
    kinds = ", ".join(f"{kind.lower().replace('_', ' ')} {n:,}" for n, kind in counts)
    text = (f" Of {documents:,} notes, {with_phi:,} held an identifier"
            + (f"; found, by type: {kinds}." if kinds else "; none was found."))
    tagged = sum(int(n) for n in (found.get("tagged_without_surrogate") or {}).values())
    if tagged:
        text += f" {tagged:,} could be given no surrogate and were tagged instead."
    return text


def column_fates(source: pd.DataFrame, output: pd.DataFrame, spec: Spec, policy: Policy,
                 notes: Mapping[str, Mapping[str, Any]] | None = None) -> list[dict]:
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
        if role == "text":  # never an example: a note as written holds the identifiers it was cleared of
            mode = (policy.text or {}).get("mode", "tag")
            fate.update(fate="masked", actions=[], text=f"Free-text notes, de-identified note by note before the "
                        f"release: every identifier found in them {TEXT_MODE_WORDS.get(mode, mode)} (docs/text.md)."
                        + notes_found_text((notes or {}).get(column)))
            if (notes or {}).get(column):
                fate["notes"] = notes[column]
            fates.append(fate)
            continue
        before, after = _as_text(source[column]), _as_text(output[column])
        was, now = is_marker(source[column]), is_marker(output[column])
        suppressed = now & ~was
        gone = was | source[column].isna().to_numpy()  # missing or suppressed in the input already
        changed = (before.to_numpy() != after.to_numpy()) & ~suppressed
        generalize = [a for a in actions if a["op"] == "generalize"]
        fate.update(
            actions=actions, cells_changed=int(changed.sum()), cells_suppressed=int(suppressed.sum()),
            cells_missing_before=int(gone.sum()),
            distinct_before=int(before[~gone].nunique()),
            distinct_after=int(after[~(now | output[column].isna().to_numpy())].nunique()),
        )
        if generalize:
            fate.update(level_from=0, level_to=generalize[-1]["level_to"], height=generalize[-1]["height"],
                        generalized_from=generalize[-1]["from"], generalized_to=generalize[-1]["to"])
        masked = any(a["op"] in MASKING_OPS for a in actions)
        if changed.any() and role != "direct" and not masked:
            fate["example"] = release_example(before[changed], after[changed], before.value_counts())
        if not actions and not changed.any() and not suppressed.any():
            fate.update(fate="kept", text="Kept as it is.")
        else:
            words = [a["text"] for a in actions if a["op"] != "suppress_records"] or ["changed"]
            if gone.all():  # e.g. every code suppressed by deid codes before: a generalization had nothing to do
                words = ["nothing left to change: every cell was already missing or suppressed in the input"]
            elif gone.any():
                words.append(f"{int(gone.sum()):,} cell{'s' if gone.sum() != 1 else ''} already missing or "
                             "suppressed in the input")
            if suppressed.any():
                words.append(f"{int(suppressed.sum())} cell{'s' if suppressed.sum() != 1 else ''} suppressed")
            fate.update(fate="masked" if masked else ("generalized" if generalize else "transformed"),
                        text="; ".join(words)[:1].upper() + "; ".join(words)[1:] + ".")
        fates.append(fate)
    return fates


def suppressed_records(output: pd.DataFrame, policy: Policy) -> int:
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


def loss_per_column(source: pd.DataFrame, output: pd.DataFrame, qis: Sequence[str], fates: list[dict]) -> list[dict]:
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
