"""Matched pairs' Fellegi-Sunter weights from the levels K reported, and the one-to-one choice among them:
per querier record the heaviest match, or a global assignment maximizing the total weight when both
tables are declared duplicate-free (Jaro, "Advances in record-linkage methodology as applied to
matching the 1985 census of Tampa, Florida", JASA 84, 1989: the linear sum assignment)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from party_client.matching.layout import PairLayout


def reported_weight(layout: PairLayout, labels: list[str]) -> float:
    """A matched pair's weight (bits): each field's reported level, or its else weight."""
    fields, weights, otherwise, _ = layout.weighted
    by_label = {g.label: i for i, g in enumerate(layout.groups)}
    decided = {fields[by_label[label]]: weights[by_label[label]] for label in labels}
    return sum(decided.get(f, w) for f, w in enumerate(otherwise)) / 1000


def one_to_one(pairs: pd.DataFrame, duplicate_free: bool) -> pd.DataFrame:
    """``pairs`` (__record, __match, __weight): per record its heaviest match (ties: the first match), or
    with ``duplicate_free`` the assignment of records to holder rows with the largest total weight."""
    if not duplicate_free or pairs.empty:
        ordered = pairs.sort_values(["__record", "__weight", "__match"], ascending=[True, False, True])
        return ordered.drop_duplicates("__record")
    from scipy.optimize import linear_sum_assignment   # imported on use: scipy.optimize takes ~0.3 s to import
    records, matches = pd.factorize(pairs["__record"]), pd.factorize(pairs["__match"])
    cost = np.full((len(records[1]), len(matches[1])), 0.0)
    # a pair not found may not be assigned: it costs more than any found pair gains
    penalty = float(pairs["__weight"].abs().sum()) + 1.0
    cost[:] = penalty
    cost[records[0], matches[0]] = -pairs["__weight"].to_numpy(dtype=np.float64)
    rows, columns = linear_sum_assignment(cost)
    chosen = {(records[1][r], matches[1][c]) for r, c in zip(rows, columns) if cost[r, c] < penalty}
    keep = [(r, m) in chosen for r, m in zip(pairs["__record"], pairs["__match"])]
    return pairs[keep]
