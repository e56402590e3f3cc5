"""Equivalence classes on integer codes: packed keys, class sizes, and the ``match_any`` sizes
(docs/deid.md, "Measures"; El Emam & Arbuckle, ch. 2, "Probability Metrics").

A class is a distinct tuple of per-QI codes, found by packing the codes into
one int64 key and ``pd.factorize``, so a class computation is one pass over
small int arrays.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd


def pack_keys(codes: Sequence[np.ndarray], cards: Sequence[int]) -> np.ndarray:
    """One int64 key per row from per-column codes (``-1`` = missing) by mixed radix.

    When the radix product would overflow int64 the running key is
    re-factorized to consecutive integers first.
    """
    n = len(codes[0]) if codes else 0
    key = np.zeros(n, dtype=np.int64)
    span = 1
    for c, card in zip(codes, cards):
        base = card + 1
        if span * base >= 2**62:
            key, uniq = pd.factorize(key)
            key = key.astype(np.int64)
            span = max(len(uniq), 1)
        key = key * base + (c.astype(np.int64) + 1)
        span *= base
    return key


def sizes_from_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(class index per row, class sizes)."""
    inv, uniq = pd.factorize(keys, sort=False)
    return inv, np.bincount(inv, minlength=len(uniq)).astype(np.int64)


def match_any_sizes(codes: Sequence[np.ndarray], cards: Sequence[int]) -> np.ndarray:
    """Per-record number of compatible records when a missing value matches anything."""
    q = len(codes)
    n = len(codes[0])
    miss = np.zeros(n, dtype=np.int64)
    for i, c in enumerate(codes):
        miss |= (c < 0).astype(np.int64) << i
    patterns = np.unique(miss)
    f = np.zeros(n, dtype=np.int64)
    rows = {p: np.flatnonzero(miss == p) for p in patterns}
    for p in patterns:
        for p2 in patterns:
            keep = [i for i in range(q) if not ((p >> i) & 1 or (p2 >> i) & 1)]
            if not keep:
                f[rows[p]] += len(rows[p2])
                continue
            k_src = pack_keys([codes[i][rows[p2]] for i in keep], [cards[i] for i in keep])
            k_dst = pack_keys([codes[i][rows[p]] for i in keep], [cards[i] for i in keep])
            vc = pd.Series(k_src).value_counts()
            f[rows[p]] += vc.reindex(k_dst).fillna(0).to_numpy(dtype=np.int64)
    return f


@dataclass
class Classes:
    """Result of a class computation over the kept (not fully missing) records."""

    keep: np.ndarray      # bool per input record
    ec: np.ndarray        # class index per kept record
    ec_sizes: np.ndarray  # size per class (own-class partition)
    f: np.ndarray         # class size per kept record (match_any: compatible records)
    F: np.ndarray | None  # population class size per kept record
    clamped: int = 0      # records whose population count was < f (or absent) and was raised to f


def class_index(df: pd.DataFrame, columns: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(class index per record, class sizes) on the current values of ``columns`` (missing = its own value)."""
    codes, cards = [], []
    for c in columns:
        cat = df[c] if isinstance(df[c].dtype, pd.CategoricalDtype) else df[c].astype("category")
        codes.append(cat.cat.codes.to_numpy())
        cards.append(len(cat.cat.categories))
    return sizes_from_keys(pack_keys(codes, cards))


def ec_sizes_of(df: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """Class size per record on the current values of ``columns`` (missing = its own value)."""
    inv, sizes = class_index(df, columns)
    return sizes[inv]
