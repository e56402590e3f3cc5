"""Re-identification risk of a keyed-hash bucket revealed in the clear.

A secure lookup reveals ``PRF_s(X) mod B`` to the holder (docs/protocol.md,
"Lookup"): a quasi-identifier with ``B`` values spread uniformly over a
population of ``N`` people.  For a random target, the other ``N - 1`` people
fall in the target's bucket independently with probability ``1/B``, so the
bucket's size is ``F = 1 + Poisson(lam)`` with ``lam = (N - 1)/B`` (for large
``N``), and the target's journalist risk is ``1/F`` (El Emam & Arbuckle, ch. 2, "Probability Metrics":
risk = 1 / size of the equivalence class in the population).  Its
expectation has the closed form

    E[1/(1 + Poisson(lam))] = (1 - exp(-lam)) / lam,

which is the average risk used for the non-public attack types T1-T3 (the
holder is a known, contractually bound party).  Intersecting ``k`` lookups of
the same person under different session secrets multiplies the bucket counts:
``lam = (N - 1) / (B_1 ... B_k)``.  Under one secret the buckets are intervals of
one hash, and what the holder knows is their intersection, a share ``w`` of the
hash range (``1/B`` for one count): ``lam = (N - 1) w`` (:func:`shared_bucket_risk`).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd


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


def shared_bucket_risk(population: int, shares: np.ndarray) -> np.ndarray:
    """Expected re-identification risk, per person, of the part of the hash range (a share in (0, 1])
    that the holder knows a person's hash lies in: ``(1 - exp(-lam)) / lam`` with ``lam = (N - 1) w``."""
    if population < 1:
        raise ValueError("population must be positive")
    lam = (population - 1) * np.asarray(shares, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(lam > 0, -np.expm1(-lam) / np.where(lam > 0, lam, 1.0), 1.0)


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


# ---------------------------------------------------------------- clear keys

def skinner_elliott(sample_uniques: int, sample_pairs: int, sampling_fraction: float) -> float:
    """Probability that a sample-unique record is also population-unique given its key.

    Skinner & Elliott (2002), "A measure of disclosure risk for microdata", JRSS B 64:
    ``theta = pi n1 / (pi n1 + 2 (1 - pi) n2)`` with ``n1`` sample uniques, ``n2`` classes of size 2
    and sampling fraction ``pi``.  It is the expected ``1/F`` of a sample unique (an intruder's
    chance of a correct match), estimated without a population table; a key that is unique for
    everyone in the sample (``n2 = 0``) gets 1.
    """
    if sample_uniques == 0:
        return 0.0
    numerator = sampling_fraction * sample_uniques
    return numerator / (numerator + 2.0 * (1.0 - sampling_fraction) * sample_pairs)


def disclosed_key_risk(keys: Sequence[object], population: int | None = None) -> dict:
    """Re-identification risk of revealing one key per record in the clear (docs/protocol.md, "Fuzzy, multi-field matching").

    The recipient sees every record's key, so a record's equivalence class is the records sharing
    its key (El Emam & Arbuckle, ch. 12, "Scaling Up": "the combination of year of birth and state has a low risk").

    * Without ``population`` the data are the population: prosecutor risk ``1/f`` per record
      (docs/deid.md, "Measures", max and average over records).
    * With a population size ``N`` behind the ``n`` records, ``pi = n/N``: a record in a sample
      class of size ``f >= 2`` has expected risk ``pi/f`` (the large-sample assumption ``f = pi F``
      of El Emam et al. 2012 (Heritage Health Prize), which is also the posterior mean of ``1/F`` under a flat prior), and a sample
      unique has the Skinner-Elliott risk, which stays near 1 for identifying keys.
    """
    codes, _ = pd.factorize(pd.Series(list(keys), dtype=object))
    records = len(codes)
    if records == 0:
        return {"method": "data" if population is None else "population", "records": 0, "classes": 0,
                "max": 0.0, "average": 0.0}
    sizes = np.bincount(codes)
    f = sizes[codes].astype(float)
    if population is None:
        risk = 1.0 / f
        method = "data"
    else:
        if population < records:
            raise ValueError(f"population {population} is smaller than the {records} records")
        fraction = records / population
        theta = skinner_elliott(int((sizes == 1).sum()), int((sizes == 2).sum()), fraction)
        risk = np.where(f == 1, max(theta, fraction), fraction / f)
        method = "population"
    return {"method": method, "records": records, "classes": int(len(sizes)),
            "max": float(risk.max()), "average": float(risk.mean())}


def keyed_bucket_risk(labels: Sequence[object], buckets: int, population: int | None = None) -> dict:
    """Risk of revealing ``PRF_s(key) mod buckets`` per record: :func:`disclosed_key_risk` of the buckets,
    and with a population at least :func:`hashed_bucket_risk` (exact when keys are distinct per person).

    The sample estimate rests on the few sample classes of size 2 once buckets are fine, and a
    search over bucket counts would pick up its noise; the hashed-bucket risk is smooth in the
    bucket count and exact for an identifier, so the larger of the two is used.
    """
    risk = disclosed_key_risk(labels, population)
    if population is not None and risk["records"]:
        floor = hashed_bucket_risk(population, buckets)
        risk.update(hashed_bucket_floor=floor, max=max(risk["max"], floor), average=max(risk["average"], floor))
    return risk
