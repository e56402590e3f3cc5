"""Covering designs C(v, k, t) (El Emam & Arbuckle, ch. 7, "Covering Designs"): every design covers, is at
least the Schönheim bound, and the book's small example is reproduced."""
from __future__ import annotations

import math
from collections import Counter
from itertools import combinations

import pytest
from hypothesis import given, settings, strategies as st

from deid_core.errors import DeidInputError
from deid_core.risk.covering import covering_design, improve, is_covering, schonheim_bound

#: Table 7-6 of the book, (15, k, t) -> the printed number of blocks.
BOOK_TABLE_7_6 = {(3, 3): 455, (4, 3): 124, (5, 3): 56, (6, 3): 31, (7, 3): 15, (8, 3): 13, (9, 3): 10, (10, 3): 7,
                  (5, 5): 3003, (6, 5): 578, (7, 5): 189, (8, 5): 89, (9, 5): 42, (10, 5): 27,
                  (7, 7): 6435, (8, 7): 871, (9, 7): 270, (10, 7): 108}


def brute_covers(blocks, v, t) -> bool:
    """Independent check: every t-subset is a subset of some block (sets, no bit masks)."""
    bs = [set(b) for b in blocks]
    return all(any(set(c) <= b for b in bs) for c in combinations(range(v), t))


def test_schonheim_bound_by_hand():
    # L(15,4,3) = ⌈15/4 ⌈14/3 ⌈13/2⌉⌉⌉ = ⌈15/4 · 33⌉ = 124; L(5,4,3) = ⌈5/4 ⌈4/3 ⌈3/2⌉⌉⌉ = ⌈5/4 · 3⌉ = 4
    assert schonheim_bound(15, 4, 3) == 124
    assert schonheim_bound(5, 4, 3) == 4
    assert schonheim_bound(15, 7, 7) == math.comb(15, 7)  # k = t: every t-subset
    assert schonheim_bound(15, 15, 7) == 1


def test_book_printed_value_below_the_bound_is_an_erratum():
    """(15, 8, 7) is printed as 871, below L(15, 8, 7) = 919: no design can be that small."""
    assert schonheim_bound(15, 8, 7) == 919 > BOOK_TABLE_7_6[(8, 7)]


def test_book_table_7_4_five_qis_three_known_in_blocks_of_four():
    d = covering_design(5, 4, 3)
    assert len(d) == 4 == d.lower_bound
    assert brute_covers(d.blocks, 5, 3)


@pytest.mark.parametrize("k,t", sorted(BOOK_TABLE_7_6))
def test_table_7_6_designs_cover_and_respect_the_bound(k, t):
    d = covering_design(15, k, t)
    assert is_covering(d.blocks, 15, t)
    assert all(len(set(b)) == k and max(b) < 15 for b in d.blocks)
    assert len(d) >= d.lower_bound == schonheim_bound(15, k, t)
    if k == t:
        assert len(d) == math.comb(15, t) == BOOK_TABLE_7_6[(k, t)]
    # pruned: every block covers a t-subset no other block covers
    count = Counter(c for b in d.blocks for c in combinations(b, t))
    assert all(any(count[c] == 1 for c in combinations(b, t)) for b in d.blocks)


def test_is_covering_detects_a_missing_subset():
    d = covering_design(7, 4, 2)
    assert is_covering(d.blocks, 7, 2)
    for i in range(len(d)):  # pruned: every block covers a pair no other block does
        assert not is_covering(d.blocks[:i] + d.blocks[i + 1:], 7, 2)
    assert not is_covering([(0, 1, 2, 3)], 7, 2)


def test_local_search_keeps_a_covering_and_never_grows():
    d = covering_design(10, 4, 3)
    better = improve(d.blocks, 10, 4, 3, seconds=0.5, seed=3)
    assert brute_covers(better, 10, 3)
    assert schonheim_bound(10, 4, 3) <= len(better) <= len(d)


def test_constructive_greedy_for_large_designs(monkeypatch):
    import deid_core.risk.covering as cov
    monkeypatch.setattr(cov, "MAX_INCIDENCES", 0)  # force the block-by-block construction
    d = cov.covering_design(9, 5, 3)
    assert d.method.startswith("constructive") and brute_covers(d.blocks, 9, 3) and len(d) >= d.lower_bound


@pytest.mark.parametrize("v,k,t", [(5, 6, 3), (5, 3, 4), (5, 3, 0), (70, 3, 2)])
def test_bad_parameters_are_one_line_errors(v, k, t):
    with pytest.raises(DeidInputError):
        covering_design(v, k, t)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 9).flatmap(lambda v: st.tuples(st.just(v), st.integers(1, v)))
       .flatmap(lambda vk: st.tuples(st.just(vk[0]), st.just(vk[1]), st.integers(1, vk[1]))))
def test_every_design_covers_and_is_at_least_the_bound(vkt):
    v, k, t = vkt
    d = covering_design(v, k, t)
    assert brute_covers(d.blocks, v, t)
    assert len(d) >= schonheim_bound(v, k, t)
    assert all(len(b) == k == len(set(b)) for b in d.blocks)
