"""Re-identification risk of a keyed-hash bucket revealed in the clear (a lookup's bucket; docs/protocol.md, "Lookup")."""
from __future__ import annotations

import math

import numpy as np
import pytest

from deid_core.risk.buckets import combined_bucket_risk, hashed_bucket_risk, max_buckets


def test_bucket_risk_matches_simulation():
    """Average over people of 1/(size of their bucket) equals the closed form."""
    rng = np.random.default_rng(3)
    for population, buckets in ((20_000, 1_000), (5_000, 2_000), (300, 100)):
        sizes = np.bincount(rng.integers(0, buckets, population), minlength=buckets)
        per_person = float(np.count_nonzero(sizes)) / population     # sum over people of 1/size
        assert math.isclose(hashed_bucket_risk(population, buckets), per_person, rel_tol=0.05)


def test_max_buckets_respects_threshold():
    for population in (1, 10, 1000, 1_000_000, 10_000_000):
        b = max_buckets(population, 0.05)
        assert b >= 1
        if b > 1:
            assert hashed_bucket_risk(population, b) <= 0.05 < hashed_bucket_risk(population, b + 1)
    assert max_buckets(1_000_000, 0.05) == pytest.approx(50_000, rel=0.01)
    assert combined_bucket_risk(1_000_000, [50_000, 50_000]) > 0.9          # intersection re-identifies
