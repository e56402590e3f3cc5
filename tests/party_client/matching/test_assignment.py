"""One-to-one by weight: per record the heaviest match, or globally the assignment of largest total weight."""
from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from party_client.matching.assignment import kept_of_tied, one_to_one, reported_weight
from party_client.matching.layout import PairLayout
from party_client.matching.level_rules import LevelGroup


def test_global_assignment_beats_the_greedy_choice():
    # record 0 prefers row A (10 > 9); record 1 only matches A (8): greedy gives 10, global 9 + 8 = 17
    pairs = pd.DataFrame({"__record": [0, 0, 1], "__match": ["A", "B", "A"], "__weight": [10.0, 9.0, 8.0]})
    per_record = one_to_one(pairs, duplicate_free=False)
    assert sorted(zip(per_record["__record"], per_record["__match"])) == [(0, "A"), (1, "A")]
    globally = one_to_one(pairs, duplicate_free=True)
    assert sorted(zip(globally["__record"], globally["__match"])) == [(0, "B"), (1, "A")]
    assert globally["__weight"].sum() == 17.0


def test_reported_levels_give_the_weight():
    groups = (LevelGroup("first.exact", 1, 1), LevelGroup("first.missing", 1, 2), LevelGroup("dob.exact", 1, 1),
              LevelGroup("dob.missing", 1, 2))
    layout = PairLayout("levels", groups, (), (0,), ((0, 0, 1, 1), (5000, 0, 7000, 0), (-3000, -4000), 6000))
    assert reported_weight(layout, ["first.exact", "dob.exact"]) == 12.0
    assert reported_weight(layout, ["dob.exact"]) == 4.0                 # first: else
    assert reported_weight(layout, ["first.missing", "dob.exact"]) == 7.0


def _whole_matrix(pairs: pd.DataFrame) -> tuple[int, float]:
    """The assignment over one matrix of all records by all rows (as before components): pairs, weight."""
    import numpy as np
    from scipy.optimize import linear_sum_assignment
    records, matches = pd.factorize(pairs["__record"]), pd.factorize(pairs["__match"])
    penalty = float(pairs["__weight"].abs().sum()) + 1.0
    cost = np.full((len(records[1]), len(matches[1])), penalty)
    cost[records[0], matches[0]] = -pairs["__weight"].to_numpy()
    rows, columns = linear_sum_assignment(cost)
    found = cost[rows, columns] < penalty
    return int(found.sum()), float(-cost[rows, columns][found].sum())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12), st.integers(-5, 60)), max_size=40))
def test_components_give_the_whole_matrix_assignment(triples):
    pairs = pd.DataFrame(triples, columns=["__record", "__match", "__weight"]).drop_duplicates(
        ["__record", "__match"]).astype({"__weight": float})
    pairs["__match"] = "row" + pairs["__match"].astype(str)
    chosen = one_to_one(pairs, duplicate_free=True)
    assert chosen["__record"].is_unique and chosen["__match"].is_unique
    expected = _whole_matrix(pairs) if len(pairs) else (0, 0.0)
    assert (len(chosen), chosen["__weight"].sum()) == pytest.approx(expected)


def test_a_record_kept_of_two_rows_of_the_same_weight_is_counted():
    # record 0 weighs the same against A and B: either may be kept, so it is counted; 2 has a clear best
    pairs = pd.DataFrame({"__record": [0, 0, 1, 2, 2], "__match": ["A", "B", "C", "D", "E"],
                          "__weight": [10.0, 10.0, 5.0, 7.0, 6.0]})
    for duplicate_free in (False, True):
        chosen = one_to_one(pairs, duplicate_free)
        assert len(chosen) == 3 and kept_of_tied(pairs, chosen) == 1
    assert kept_of_tied(pairs[pairs["__match"] != "B"], one_to_one(pairs[pairs["__match"] != "B"], True)) == 0
