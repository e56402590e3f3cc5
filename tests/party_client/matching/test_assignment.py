"""One-to-one by weight: per record the heaviest match, or globally the assignment of largest total weight."""
from __future__ import annotations

import pandas as pd

from party_client.matching.assignment import one_to_one, reported_weight
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
