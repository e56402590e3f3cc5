"""Orchestration: measure a table, optionally transform it (full-domain levels +
record suppression; with ``[longitudinal]`` suppression of whole persons), measure
again, and compute information loss; and a release made elsewhere measured from scratch, beside the
table it came from (what every page states; the report package only words the results). Pure
in-memory; the CLI does the I/O."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import DeidInputError
from .longitudinal.person_classes import person_classes
from .longitudinal.persons import person_level1
from .metric import (average_class_size, is_marker, discernibility, missingness_change, non_uniform_entropy,
                     numeric_utility, precision)
from .risk import (Classes, EncodedTable, attack_assessment, encode_table, k_for_threshold, meets, per_record,
                   release_conditional_threshold, summarize)
from .risk.known_subsets import KnownQIs, block_summaries, worst
from .spec import Spec
from .transform import Policy, full_domain_policy


@dataclass
class Assessment:
    """Risk of the input and (if transformed) of the output, loss, policy."""

    spec: Spec
    summary: dict                      # risk of the released table (after, or the input if no transform)
    before: dict                       # risk of the input
    attack: dict                       # attack model on ``summary``
    policy: Policy
    output: pd.DataFrame
    loss: dict
    per_record: pd.DataFrame           # per-record risks of the released table
    ec_sizes: np.ndarray               # class sizes of the released table
    levels: dict = field(default_factory=dict)
    transformed: bool = False
    #: ``[longitudinal]``: row -> person index (the per-person measures count distinct persons), else None
    person_index: np.ndarray | None = None
    #: ``[longitudinal]``: the released table's risk counted per row, to show what row counting would report
    row_summary: dict | None = None

    def to_dict(self) -> dict:
        out = dict(self.summary)
        out["threshold"] = self.attack
        out["before"] = self.before
        out["levels"] = self.levels
        out["information_loss"] = self.loss
        out["policy"] = self.policy.to_dict()
        return out


def _validate_levels(table: EncodedTable, levels: Mapping[str, int]) -> dict[str, int]:
    out = {}
    for q, lvl in levels.items():
        if q not in table.hierarchies:
            raise DeidInputError(f"unknown column {q!r} in levels: not a quasi-identifier")
        h = table.hierarchies[q]
        if not 0 <= int(lvl) <= h.height:
            raise DeidInputError(f"level {lvl} for {q!r} is outside 0..{h.height}")
        out[q] = int(lvl)
    return out


def information_loss(before: pd.DataFrame, after: pd.DataFrame, qis: Sequence[str], levels: Mapping[str, int],
                     heights: Mapping[str, int], numeric: Sequence[str] = ()) -> dict:
    """Every information loss measure of ``after`` against ``before`` (same rows, same order)."""
    return {
        "missingness": missingness_change(before, after, qis),
        "non_uniform_entropy": non_uniform_entropy(before, after, qis),
        "discernibility": {"before": discernibility(before, qis), "after": discernibility(after, qis)},
        "average_class_size": {"before": average_class_size(before, qis), "after": average_class_size(after, qis)},
        "precision": precision(levels, heights, after),
        "numeric": numeric_utility(before, after.reindex(columns=before.columns), [c for c in numeric if c in after.columns]),
    }


class _Measure:
    """Summary and per-record risks of row classes: per row, or with ``[longitudinal]`` per person."""

    def __init__(self, df: pd.DataFrame, spec: Spec) -> None:
        self.spec, self.rows = spec, len(df)
        self.pids: pd.Index | None = None
        self.pcode: np.ndarray | None = None
        lg = spec.longitudinal
        if lg is not None:
            if spec.missing == "match_any":
                raise DeidInputError("[risk] missing = \"match_any\" is not supported with [longitudinal] "
                                     "(classes are counted in persons on own-class values)")
            table, self.pcode = person_level1(df, lg.person, lg.level1)  # one line naming a person if level 1 varies
            self.pids = table.index

    def classes(self, cl: Classes) -> Classes:
        if self.pcode is None:
            return cl
        return person_classes(cl, self.pcode, len(self.pids))

    def summary(self, cl_rows: Classes, cl: Classes) -> dict:
        out = summarize(cl, self.spec.release.strict_cut, self.spec.gamma)
        if self.pcode is not None:
            out["fully_missing_persons"] = out["fully_missing_records"]
            out["records"] = self.rows
            out["fully_missing_records"] = int((~cl_rows.keep).sum())
            out = {"persons": len(self.pids), "events": self.rows, **out}
        return out

    def per_record(self, cl: Classes) -> pd.DataFrame:
        pr = per_record(cl)
        if self.pids is not None:
            pr.insert(0, self.spec.longitudinal.person, np.asarray(self.pids))
        return pr


#: A person id repeats on the rows of one person: the rows sharing a value agree on some other column (a
#: value fixed per person, such as a date of birth) for at least this share of the repeated rows.
PERSON_AGREEMENT = 0.9


def person_id_columns(df: pd.DataFrame, columns: Sequence[str]) -> dict[str, int]:
    """Of ``columns``, those that plausibly identify a person across rows, with the rows whose value
    repeats: the value repeats (one person's rows, El Emam & Arbuckle, ch. 4), it is a code — one word, so
    not a name with a surname or an address — and the rows sharing a value agree on another column for
    at least :data:`PERSON_AGREEMENT` of the repeated rows, as one person's rows share their date of birth. A
    given name repeats too, but over different people, whose other values differ."""
    from .longitudinal.assessment import repeated_ids

    out = {}
    for c, n in repeated_ids(df, columns).items():
        s = df[c].astype("string")
        rep = s.duplicated(keep=False).fillna(False).to_numpy(bool) & s.notna().to_numpy(bool)
        if s[rep].str.contains(r"\s", regex=True).mean() > 0.1:
            continue  # several words: a name or an address, not a code
        by = df.loc[rep].groupby(s[rep].to_numpy(), observed=True)
        sizes = by.size()
        for o in df.columns:
            if o != c and df[o].nunique(dropna=False) > 1 and \
                    sizes[by[o].nunique(dropna=False) == 1].sum() >= PERSON_AGREEMENT * rep.sum():
                out[c] = n
                break
    return out


def suppressed_rows(frame: pd.DataFrame, qis: Sequence[str]) -> np.ndarray:
    """Records whose every quasi-identifier is the suppression marker: suppressed, in no class (a release
    measured from scratch counts them as ``deid search`` and the transformation that made them do)."""
    supp = np.full(len(frame), bool(qis))
    for q in qis:
        supp &= is_marker(frame[q])
    return supp


def assess(df: pd.DataFrame, spec: Spec, population: pd.DataFrame | None = None,
           levels: Mapping[str, int] | None = None, record_suppression: bool | None = None,
           numeric: Sequence[str] | None = None) -> Assessment:
    """Measure ``df``; with ``levels``/``record_suppression`` also transform and re-measure.

    With ``spec.longitudinal`` every class size counts distinct persons and the per-record risks are
    per person (:func:`deid_core.longitudinal.person_classes.person_classes`).
    """
    return _assess(df, spec, population, levels, record_suppression, numeric)[0]


def assess_with_original(df: pd.DataFrame, spec: Spec, population: pd.DataFrame | None = None,
                         levels: Mapping[str, int] | None = None, record_suppression: bool | None = None,
                         numeric: Sequence[str] | None = None) -> tuple[Assessment, Assessment]:
    """:func:`assess` of ``df`` and, from the same encoding of the table, the table as it came in measured
    without any transformation (the spec's levels and record suppression set aside): the "before" of the
    plots."""
    a, original = _assess(df, spec, population, levels, record_suppression, numeric, original=True)
    assert original is not None
    return a, original


def _assess(df: pd.DataFrame, spec: Spec, population: pd.DataFrame | None, levels: Mapping[str, int] | None,
            record_suppression: bool | None, numeric: Sequence[str] | None,
            original: bool = False) -> tuple[Assessment, Assessment | None]:
    table = encode_table(df, spec, population)
    measure = _Measure(df, spec)
    qis = spec.quasi
    levels = _validate_levels(table, {**spec.levels, **(levels or {})})
    suppress = spec.record_suppression if record_suppression is None else record_suppression
    marked = suppressed_rows(df, qis)  # a release read back: its suppressed records stay suppressed
    rows0 = table.classes(suppressed=marked if marked.any() else None)
    cl0 = measure.classes(rows0)
    before = measure.summary(rows0, cl0)
    heights = {q: table.hierarchies[q].height for q in qis}
    person = spec.longitudinal.person if spec.longitudinal is not None else None

    def measured(levels: dict, suppress: bool, numeric: Sequence[str] | None) -> Assessment:
        transformed = bool(any(levels.values()) or suppress)
        k = k_for_threshold(spec.release.threshold)
        policy = full_domain_policy(spec.hierarchies, {q: levels.get(q, 0) for q in qis}, drop=spec.direct,
                                    suppress_k=k if suppress else None, qis=qis, person=person)
        suppressed_persons = 0
        if transformed:
            out, ctx = policy.apply(df)  # with [longitudinal] whole persons are suppressed (ops.suppression_mask)
            supp = suppressed_rows(out, qis)
            rows = table.classes(levels, suppressed=supp if supp.any() else None)
            cl = measure.classes(rows)
            summary = measure.summary(rows, cl)
            summary["suppressed_records"] = int(supp.sum())
            suppressed_persons = int(ctx.get("suppressed_persons", 0))
        else:
            out = df.drop(columns=spec.direct)
            rows, cl, summary = rows0, cl0, dict(before)
            summary["suppressed_records"] = int(marked.sum())
        if person is not None:
            summary["suppressed_persons"] = suppressed_persons
        if numeric is None:
            numeric = [q for q in qis if q in spec.hierarchies and spec.hierarchies[q].builder == "interval"]
        for c in numeric:
            if c not in df.columns:
                raise DeidInputError(f"unknown column {c!r} in numeric columns: not in the input")
        loss = information_loss(df, out, qis, levels, heights, numeric)
        row_summary = summarize(rows, spec.release.strict_cut, spec.gamma) if measure.pcode is not None else None
        return Assessment(spec=spec, summary=summary, before=before, attack=attack_assessment(summary, spec.release),
                          policy=policy, output=out, loss=loss, per_record=measure.per_record(cl),
                          ec_sizes=cl.ec_sizes, levels=levels, transformed=transformed, person_index=measure.pcode,
                          row_summary=row_summary)

    a = measured(levels, suppress, numeric)
    if not original:
        return a, None
    same = not a.transformed and numeric is None  # the table as it came in is what was measured
    return a, replace(a if same else measured({}, False, None), levels={},
                      spec=replace(spec, levels={}, record_suppression=False))


def assess_known(df: pd.DataFrame, spec: Spec, population: pd.DataFrame | None, a: Assessment,
                 known: KnownQIs, progress: bool = False) -> dict:
    """The release of ``a`` when the adversary knows m of the n QIs (El Emam & Arbuckle, ch. 7, "Covering
    Designs"): every measure per block of the covering design, blocks sorted by their share of high-risk
    units (largest first, the order the book de-identifies them in), the worst of every measure over the
    blocks and the attack model on that worst summary."""
    table = encode_table(df, spec, population)
    measure = _Measure(df, spec)
    supp = suppressed_rows(a.output if a.transformed else df, spec.quasi)
    supp = supp if supp.any() else None
    cut = release_conditional_threshold(spec.release)

    def one(rows: Classes) -> dict:
        cl = measure.classes(rows)
        s = measure.summary(rows, cl)
        s["high_risk_share"] = float(np.mean(~meets(1.0 / cl.f, cut))) if len(cl.f) else 0.0
        return s

    blocks = block_summaries(table, known, one, levels=a.levels, suppressed=supp, progress=progress)
    blocks.sort(key=lambda b: (-b["high_risk_share"], -b["prosecutor"]["max"]))
    w = worst([{k: v for k, v in b.items() if k != "qis"} for b in blocks])
    return {**known.summary(), "high_risk_cut": cut, "worst": w, "threshold": attack_assessment(w, spec.release),
            "blocks": blocks}


# -- a release measured from scratch (what every page states) -----------------------------------------
def release_assessment(source: pd.DataFrame, output: pd.DataFrame, spec: Spec) -> Assessment:
    """A release made elsewhere (``deid apply``, ``deid search``'s best policy, a workbench node) measured from
    scratch under ``spec``: on its own columns with no hierarchy (what a recipient holds), its suppressed
    records in no class, per person with ``[longitudinal]`` (the person column put back from ``source``, rows
    in the same order). Its ``attack`` is the verdict every page states (:func:`deid_core.risk.release_verdict`)."""
    rel = replace(spec, columns={c: r for c, r in spec.columns.items() if c in output.columns and r != "direct"},
                  types={}, hierarchies={}, levels={}, record_suppression=False)
    frame, lg = output, spec.longitudinal
    if lg is not None:
        if len(output) != len(source) or lg.person not in source.columns:
            raise DeidInputError("the release does not keep the input's rows: cannot count persons")
        frame = output.drop(columns=[lg.person], errors="ignore")
        frame.insert(0, lg.person, source[lg.person].to_numpy())
        rel = replace(rel, columns={lg.person: "direct", **rel.columns},
                      longitudinal=replace(lg, level1=tuple(c for c in lg.level1 if c in output.columns),
                                           level2=tuple(c for c in lg.level2 if c in output.columns)))
    return assess(frame, rel)


def reassess_release(source: pd.DataFrame, output: pd.DataFrame, spec: Spec,
                     population: pd.DataFrame | None = None) -> tuple[Assessment, Assessment]:
    """(the release, the original): :func:`release_assessment`, and the original measured under ``spec``
    (against ``population`` when one is given)."""
    before = assess(source, replace(spec, levels={}, record_suppression=False), population)
    return release_assessment(source, output, spec), before
