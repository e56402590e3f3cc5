"""Re-identification risk of a keyed-hash bucket revealed in the clear.

A secure lookup reveals ``PRF_s(X) mod B`` to the holder (PROTOCOL.md,
"Lookup"): a quasi-identifier with ``B`` values spread uniformly over a
population of ``N`` people.  For a random target, the other ``N - 1`` people
fall in the target's bucket independently with probability ``1/B``, so the
bucket's size is ``F = 1 + Poisson(lam)`` with ``lam = (N - 1)/B`` (for large
``N``), and the target's journalist risk is ``1/F`` (book ch. 2, B:1424-1429:
risk = 1 / size of the equivalence class in the population).  Its
expectation has the closed form

    E[1/(1 + Poisson(lam))] = (1 - exp(-lam)) / lam,

which is the average risk used for the non-public attack types T1-T3 (the
holder is a known, contractually bound party).  Intersecting ``k`` lookups of
the same person under different session secrets multiplies the bucket counts:
``lam = (N - 1) / (B_1 ... B_k)``.
"""
from __future__ import annotations

import math


def _expected_inverse_size(lam: float) -> float:
    if lam <= 0:
        return 1.0
    return -math.expm1(-lam) / lam


def hashed_bucket_risk(population: int, buckets: int) -> float:
    """Expected re-identification risk of revealing one of ``buckets`` keyed buckets."""
    if population < 1 or buckets < 1:
        raise ValueError("population and buckets must be positive")
    return _expected_inverse_size((population - 1) / buckets)


def combined_bucket_risk(population: int, bucket_counts: list[int]) -> float:
    """Risk after the holder intersects buckets of the same person from several sessions."""
    if population < 1 or not bucket_counts or min(bucket_counts) < 1:
        raise ValueError("population and bucket counts must be positive")
    product = math.prod(bucket_counts)
    return _expected_inverse_size((population - 1) / product)


def max_buckets(population: int, max_risk: float) -> int:
    """The most buckets whose risk is at most ``max_risk`` (at least 1).

    One bucket reveals nothing beyond membership in the population, so it is
    always allowed; the risk is increasing in the bucket count, hence the
    bisection.
    """
    if not 0 < max_risk <= 1:
        raise ValueError("max_risk must lie in (0, 1]")
    if population < 1:
        raise ValueError("population must be positive")
    low, high = 1, max(1, population)
    if hashed_bucket_risk(population, high) <= max_risk:
        return high
    while high - low > 1:
        middle = (low + high) // 2
        if hashed_bucket_risk(population, middle) <= max_risk:
            low = middle
        else:
            high = middle
    return low
