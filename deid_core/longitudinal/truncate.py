"""Long tails: truncating claims (El Emam & Arbuckle, ch. 5, "Long Tails"; El Emam et al. 2012, "Truncation of Claims").

The number of claims of a person is a quasi-identifier the adversary knows to
within a bin of ``width`` claims (5 for the Heritage Health Prize data). Bins
are walked from the highest count down; a bin with fewer than k persons (k =
1/threshold) moves all its persons into the next lower bin by removing
claims, each person's new count drawn uniformly inside that bin
(:func:`plan_bins`; ch. 5 Table 5-7). The alternative top-codes the count at
a percentile (:func:`plan_percentile`; the JMIR paper truncated at the 95th).

Which claims go (the book's score is in a figure that did not survive): each
level-2 value's *support* is the number of distinct persons having it; a
claim's support vector is scaled by the largest support of each QI, its score
is the mean of that vector and ties go to the lower standard deviation (low
support on every QI before low support on one). The lowest-scoring claims of
a person are removed first; remaining ties keep the original row order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import DeidInputError
from .integer_codes import factorize, require_columns
from .persons import person_codes


@dataclass(frozen=True)
class Truncation:
    """Outcome of :func:`truncate_claims`: the kept rows and what was removed."""

    frame: pd.DataFrame          # kept rows, original order and index
    removed_claims: int
    removed_persons: int         # persons who lost at least one claim
    claims: int
    persons: int
    bins_before: pd.Series       # persons per bin label
    bins_after: pd.Series
    cutoff: int | None = None    # percentile method: the count persons were cut to
    unmet_bins: tuple[str, ...] = ()  # bins still below k (the lowest bin cannot move)

    def summary(self) -> dict:
        return {"claims": self.claims, "persons": self.persons, "removed_claims": self.removed_claims,
                "removed_claims_proportion": self.removed_claims / self.claims if self.claims else 0.0,
                "removed_persons": self.removed_persons, "cutoff": self.cutoff,
                "bins_before": {k: int(v) for k, v in self.bins_before.items()},
                "bins_after": {k: int(v) for k, v in self.bins_after.items()},
                "unmet_bins": list(self.unmet_bins)}


def bin_labels(counts: np.ndarray, width: int = 5) -> np.ndarray:
    """``[1-5]``, ``[6-10]``… label of each count (the claim-count QI)."""
    b = (np.asarray(counts) - 1) // width
    return np.array([f"[{i * width + 1}-{i * width + width}]" for i in b], dtype=object)


def claim_count_column(df: pd.DataFrame, *, person: str, width: int = 5) -> pd.Series:
    """Per row, the bin label of its person's claim count: the claim-count QI as a level-1 column."""
    pcode, pids = person_codes(df, person)
    counts = np.bincount(pcode, minlength=len(pids))
    return pd.Series(bin_labels(counts, width)[pcode], index=df.index, name="claims_bin")


def _bin_table(counts: np.ndarray, width: int) -> pd.Series:
    b = (counts - 1) // width
    n = np.bincount(b, minlength=int(b.max()) + 1)
    labels = [f"[{i * width + 1}-{i * width + width}]" for i in range(len(n))]
    return pd.Series(n, index=labels, name="persons")


def plan_bins(counts: np.ndarray, k: int, width: int = 5, rng: np.random.Generator | None = None,
              ) -> tuple[np.ndarray, tuple[str, ...]]:
    """New claim count per person (book ch. 5, Table 5-7) and the labels of bins left below k (lowest bin)."""
    if k < 1:
        raise DeidInputError(f"k {k} is below 1")
    if width < 1:
        raise DeidInputError(f"bin width {width} is below 1")
    counts = np.asarray(counts, dtype=np.int64)
    if counts.size and counts.min() < 1:
        raise DeidInputError("claim counts must be at least 1")
    rng = rng or np.random.default_rng(0)
    b = (counts - 1) // width
    target = b.copy()
    sizes = np.bincount(b, minlength=int(b.max()) + 1 if counts.size else 0)
    for i in range(len(sizes) - 1, 0, -1):  # one step per bin, not per person
        if 0 < sizes[i] < k:
            target[target == i] = i - 1
            sizes[i - 1] += sizes[i]
            sizes[i] = 0
    moved = target != b
    new = counts.copy()
    lo = target[moved] * width + 1
    new[moved] = rng.integers(lo, lo + width)
    unmet = (f"[1-{width}]",) if sizes.size and 0 < sizes[0] < k else ()
    return new, unmet


def plan_percentile(counts: np.ndarray, percentile: float = 95.0) -> tuple[np.ndarray, int]:
    """Top-code claim counts at a percentile (the smallest observed count with at least that share at or below)."""
    if not 0 < percentile <= 100:
        raise DeidInputError(f"percentile {percentile} is outside (0, 100]")
    counts = np.asarray(counts, dtype=np.int64)
    cutoff = int(np.percentile(counts, percentile, method="inverted_cdf"))
    return np.minimum(counts, cutoff), cutoff


def claim_scores(df: pd.DataFrame, pcode: np.ndarray, level2: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per claim: mean and standard deviation of its values' scaled support (distinct persons per value)."""
    sup = np.empty((len(df), len(level2)))
    for j, h in enumerate(level2):
        vcode, uniq = factorize(df[h])
        pairs = np.unique(vcode * (int(pcode.max()) + 1) + pcode)
        persons_per_value = np.bincount(pairs // (int(pcode.max()) + 1), minlength=len(uniq))
        s = persons_per_value[vcode].astype(float)
        sup[:, j] = s / s.max()
    if not len(level2):
        return np.zeros(len(df)), np.zeros(len(df))
    return sup.mean(axis=1), sup.std(axis=1)


def truncate_claims(df: pd.DataFrame, *, person: str, level2: Sequence[str], k: int = 10, width: int = 5,
                    method: str = "bins", percentile: float = 95.0, seed: int = 0) -> Truncation:
    """Remove claims so the claim-count QI meets k (``method="bins"``) or is top-coded (``"percentile"``)."""
    pcode, pids = person_codes(df, person)
    require_columns(df, level2, "level-2")
    counts = np.bincount(pcode, minlength=len(pids))
    cutoff, unmet = None, ()
    if method == "bins":
        new, unmet = plan_bins(counts, k, width, np.random.default_rng(seed))
    elif method == "percentile":
        new, cutoff = plan_percentile(counts, percentile)
    else:
        raise DeidInputError(f"truncation method {method!r} is not 'bins' or 'percentile'")
    mean, sd = claim_scores(df, pcode, level2)
    order = np.lexsort((np.arange(len(df)), sd, mean, pcode))  # per person, rarest claim first
    p_sorted = pcode[order]
    rank = np.arange(len(df)) - np.searchsorted(p_sorted, p_sorted)
    drop = np.zeros(len(df), dtype=bool)
    drop[order] = rank < (counts - new)[p_sorted]
    kept = df.loc[~drop]
    return Truncation(frame=kept, removed_claims=int(drop.sum()), removed_persons=int((new < counts).sum()),
                      claims=len(df), persons=len(pids), bins_before=_bin_table(counts, width),
                      bins_after=_bin_table(new, width), cutoff=cutoff, unmet_bins=unmet)
