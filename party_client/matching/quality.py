"""Linkage quality: the plaintext evaluation of the same keys, and the usual
measures (precision, recall, F1, pair completeness, reduction ratio).

The secure protocol and :func:`plaintext_pairs` compute the same predicate —
a querier record and a holder row match when they share a key in some table
— so on the same inputs they must return the same pairs; the quality
harness (``benchmarks/fuzzy_quality.py``) also runs an independent
``recordlinkage`` baseline.
"""
from __future__ import annotations

import pandas as pd

from party_client.matching.keys import HolderKeys, QuerierKeys


def plaintext_pairs(querier: QuerierKeys, holder: HolderKeys) -> pd.DataFrame:
    """(record, row, terms) for every querier record and holder row sharing a key."""
    if querier.spec != holder.spec:
        raise ValueError("the two sides' keys were derived differently")
    found = []
    for t, (table, column) in enumerate(zip(querier.tables, holder.values)):
        rows = pd.DataFrame({"key": column, "row": range(len(column))}).dropna()
        keys = pd.DataFrame({"key": [table.values[i] for i in table.value_index], "record": table.record_index})
        found.append(keys.merge(rows, on="key")[["record", "row"]].assign(term=t))
    if not found:
        return pd.DataFrame(columns=["record", "row", "terms"])
    pairs = pd.concat(found, ignore_index=True)
    names = [table.name for table in querier.tables]
    return (pairs.groupby(["record", "row"])["term"].agg(lambda t: "|".join(names[i] for i in sorted(set(t))))
            .rename("terms").reset_index())


def quality(found: set[tuple[int, int]], truth: set[tuple[int, int]], candidates: int | None = None,
            all_pairs: int | None = None) -> dict:
    """Precision, recall, F1; with candidate counts also pair completeness and reduction ratio."""
    true_positives = len(found & truth)
    precision = true_positives / len(found) if found else 0.0
    recall = true_positives / len(truth) if truth else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    result = {"pairs": len(found), "true_links": len(truth), "true_positives": true_positives,
              "precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4)}
    if candidates is not None and all_pairs:
        result["reduction_ratio"] = round(1 - candidates / all_pairs, 6)
    return result


def blocking_quality(candidates: set[tuple[int, int]], truth: set[tuple[int, int]], left: int, right: int) -> dict:
    """Reduction ratio ``1 - |candidates| / (n m)`` and pair completeness ``|candidates & truth| / |truth|``."""
    return {"candidate_pairs": len(candidates),
            "reduction_ratio": round(1.0 - len(candidates) / float(left * right), 6) if left and right else 0.0,
            "pair_completeness": round(len(candidates & truth) / len(truth), 4) if truth else 1.0}
