"""Orchestration: measure a table, optionally transform it (full-domain levels +
record suppression), measure again, and compute information loss. Pure
in-memory; the CLI does the I/O."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import DeidInputError
from .metric import (average_class_size, is_marker, discernibility, missingness_change, non_uniform_entropy,
                     numeric_utility, precision)
from .risk import (EncodedTable, attack_assessment, encode_table, k_for_threshold, per_record,
                   summarize)
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


def assess(df: pd.DataFrame, spec: Spec, population: pd.DataFrame | None = None,
           levels: Mapping[str, int] | None = None, record_suppression: bool | None = None,
           numeric: Sequence[str] | None = None) -> Assessment:
    """Measure ``df``; with ``levels``/``record_suppression`` also transform and re-measure."""
    table = encode_table(df, spec, population)
    qis = spec.quasi
    levels = _validate_levels(table, {**spec.levels, **(levels or {})})
    suppress = spec.record_suppression if record_suppression is None else record_suppression
    strict_cut = spec.release.strict_cut
    cl0 = table.classes()
    before = summarize(cl0, strict_cut, spec.gamma)
    transformed = bool(any(levels.values()) or suppress)
    k = k_for_threshold(spec.release.threshold)
    policy = full_domain_policy(spec.hierarchies, {q: levels.get(q, 0) for q in qis}, drop=spec.direct,
                                suppress_k=k if suppress else None, qis=qis)
    if transformed:
        out, _ = policy.apply(df)
        supp = np.full(len(df), bool(qis))
        for q in qis:
            supp &= is_marker(out[q])
        cl = table.classes(levels, suppressed=supp if supp.any() else None)
        summary = summarize(cl, strict_cut, spec.gamma)
        summary["suppressed_records"] = int(supp.sum())
    else:
        out = df.drop(columns=spec.direct)
        cl, summary = cl0, dict(before)
        summary["suppressed_records"] = 0
    if numeric is None:
        numeric = [q for q in qis if q in spec.hierarchies and spec.hierarchies[q].builder == "interval"]
    for c in numeric:
        if c not in df.columns:
            raise DeidInputError(f"unknown column {c!r} in numeric columns: not in the input")
    heights = {q: table.hierarchies[q].height for q in qis}
    loss = information_loss(df, out, qis, levels, heights, numeric)
    return Assessment(spec=spec, summary=summary, before=before, attack=attack_assessment(summary, spec.release),
                      policy=policy, output=out, loss=loss, per_record=per_record(cl), ec_sizes=cl.ec_sizes,
                      levels=levels, transformed=transformed)
