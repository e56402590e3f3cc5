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
    with ``duplicate_free`` the assignment of records to holder rows with the most pairs and, among those,
    the largest total weight."""
    if not duplicate_free or pairs.empty:
        ordered = pairs.sort_values(["__record", "__weight", "__match"], ascending=[True, False, True])
        return ordered.drop_duplicates("__record")
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    records, matches = pd.factorize(pairs["__record"])[0], pd.factorize(pairs["__match"])[0]
    nodes = int(records.max()) + int(matches.max()) + 2
    graph = coo_matrix((np.ones(len(pairs)), (records, records.max() + 1 + matches)), shape=(nodes, nodes))
    # The assignment splits over the connected components of the pairs' graph: a pair alone in its
    # component is kept as it is, and only the few components where records compete are solved, each
    # on its own small matrix (one matrix of all records by all rows would not fit at 100,000 records).
    component = connected_components(graph, directed=False)[1][records]
    size = np.bincount(component)
    keep = size[component] == 1
    contested = np.flatnonzero(size[component] > 1)
    order = contested[np.argsort(component[contested], kind="stable")]
    bounds = np.flatnonzero(np.diff(component[order])) + 1
    weights = pairs["__weight"].to_numpy(dtype=np.float64)
    for members in np.split(order, bounds) if len(order) else ():
        keep[members[_assigned(records[members], matches[members], weights[members])]] = True
    return pairs[keep]


def _assigned(records: np.ndarray, matches: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Which of one component's pairs the assignment keeps: the most pairs, then the largest total weight
    (the linear sum assignment; Jaro 1989)."""
    from scipy.optimize import linear_sum_assignment   # imported on use: scipy.optimize takes ~0.3 s to import
    rows, row_index = np.unique(records, return_inverse=True)
    columns, column_index = np.unique(matches, return_inverse=True)
    # a pair not found may not be assigned: it costs more than any found pair gains
    penalty = float(np.abs(weights).sum()) + 1.0
    cost = np.full((len(rows), len(columns)), penalty)
    cost[row_index, column_index] = -weights
    chosen = np.zeros(cost.shape, dtype=bool)
    r, c = linear_sum_assignment(cost)
    chosen[r, c] = cost[r, c] < penalty
    return chosen[row_index, column_index]


def kept_of_tied(pairs: pd.DataFrame, chosen: pd.DataFrame) -> int:
    """How many records of ``chosen`` (a choice among ``pairs``) kept one of two or more holder rows of the
    very same weight: which one was kept is not fixed (the querier sees the holder's rows in K's order)."""
    kept = chosen.set_index("__record")["__weight"]
    alike = pairs["__weight"].to_numpy() == pairs["__record"].map(kept).to_numpy()
    return int((pairs.loc[alike, "__record"].value_counts() > 1).sum())
