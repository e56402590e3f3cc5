"""Ragged ranges: groups of given sizes laid end to end, their starts and each element's position in its
group, without a Python loop over the groups."""
from __future__ import annotations

import numpy as np


def starts(counts: np.ndarray) -> np.ndarray:
    """Where each group starts: the exclusive cumulative sum of ``counts``."""
    counts = np.asarray(counts, dtype=np.int64)
    return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)


def ranges(counts: np.ndarray) -> np.ndarray:
    """``0, 1, …, counts[0]−1, 0, 1, …, counts[1]−1, …`` (empty groups add nothing)."""
    counts = np.asarray(counts, dtype=np.int64)
    return np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(starts(counts), counts)
