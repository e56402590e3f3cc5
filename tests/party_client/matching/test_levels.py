"""Comparison levels: each level's keys decide exactly its stated semantics (property tests), missing is
its own level with weight 0, and EM over level patterns recovers known m and u."""
from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from party_client.errors import PartyError
from party_client.matching.fellegi_sunter import (LevelField, LevelModel, accepted, expectation_maximisation,
                                                  model_from_fit, pair_levels, pattern_weights)
from party_client.matching.levels import (Level, date_keys, group_agreement, missing_keys, number_keys,
                                          osa_distance, slip_reference, text_keys, typo_reference)

pytestmark = pytest.mark.slow          # property tests over every level: about a minute

LIMIT = 8
letters = st.text(alphabet="abcde", min_size=1, max_size=LIMIT)


def agree(level: Level, x: str, y: str, other_x: str = "", other_y: str = "") -> bool:
    """The level decided from keys: x is the querier's value, y the holder's."""
    codes_q, codes_h = pd.Series([x], dtype=object), pd.Series([y], dtype=object)
    if level.kind == "swapped":
        q = text_keys(level, codes_q, pd.Series([other_x], dtype=object))
        h = text_keys(level, codes_h, pd.Series([other_y], dtype=object))
    else:
        q, h = text_keys(level, codes_q), text_keys(level, codes_h)
    return bool(group_agreement(q, h, np.array([0]), np.array([0]))[0])


def one_edit(draw_value: str, data) -> str:
    """x with one insertion, deletion, substitution or adjacent transposition."""
    kind = data.draw(st.sampled_from(["insert", "delete", "substitute", "transpose"]))
    i = data.draw(st.integers(0, len(draw_value)))
    c = data.draw(st.sampled_from("abcdef"))
    if kind == "insert":
        return draw_value[:i] + c + draw_value[i:]
    if kind == "delete" and len(draw_value) > 1:
        i = min(i, len(draw_value) - 1)
        return draw_value[:i] + draw_value[i + 1:]
    if kind == "transpose" and len(draw_value) > 1:
        i = min(i, len(draw_value) - 2)
        return draw_value[:i] + draw_value[i + 1] + draw_value[i] + draw_value[i + 2:]
    i = min(i, len(draw_value) - 1)
    return draw_value[:i] + c + draw_value[i + 1:]


@settings(max_examples=150, deadline=None)
@given(letters, st.data())
def test_one_edit_always_agrees_at_typo(x, data):
    y = one_edit(x, data)
    level = Level("typo", LIMIT)
    assert agree(level, x, y) and agree(level, y, x)


@settings(max_examples=150, deadline=None)
@given(letters, letters)
def test_typo_keys_decide_exactly_the_stated_semantics(x, y):
    level = Level("typo", LIMIT)
    assert agree(level, x, y) == typo_reference(x, y, LIMIT) == typo_reference(y, x, LIMIT)
    if osa_distance(x, y) <= 1:
        assert agree(level, x, y)
    if osa_distance(x, y) >= 3:
        assert not agree(level, x, y)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abcdefgh", min_size=3, max_size=LIMIT), st.data())
def test_three_edits_apart_never_agree_at_typo(x, data):
    y = x
    while osa_distance(x, y) < 3:
        y = one_edit(y, data)
        if len(y) > LIMIT:
            y = y[:LIMIT]
    assert not agree(Level("typo", LIMIT), x, y)


@settings(max_examples=100, deadline=None)
@given(letters, letters)
def test_swapped_names_agree_at_swapped(first, last):
    level = Level("swapped", "last")
    assert agree(level, first, last, other_x=last, other_y=first)
    if first != last:
        assert not agree(level, first, first, other_x=last, other_y=last)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="0123456789", min_size=2, max_size=10), st.integers(0, 8))
def test_adjacent_digit_transposition_agrees_at_transposed(x, i):
    i = min(i, len(x) - 2)
    y = x[:i] + x[i + 1] + x[i] + x[i + 2:]
    assert agree(Level("transposed", 10), x, y) == (x != y)


digits = st.text(alphabet="0123", min_size=1, max_size=12)


@settings(max_examples=80, deadline=None)
@given(st.text(alphabet="0123456789", min_size=2, max_size=10), st.integers(0, 9), st.sampled_from("0123456789"))
def test_a_substituted_or_transposed_digit_agrees_at_slip(x, i, digit):
    i = min(i, len(x) - 1)
    substituted = x[:i] + digit + x[i + 1:]
    j = min(i, len(x) - 2)
    transposed = x[:j] + x[j + 1] + x[j] + x[j + 2:]
    for y in (substituted, transposed):
        assert agree(Level("slip", 10), x, y) and agree(Level("slip", 10), y, x)


@settings(max_examples=150, deadline=None)
@given(digits, digits)
def test_slip_keys_decide_exactly_the_stated_semantics(x, y):
    """Keys and the stated semantics agree on every pair, including lengths that differ, values longer
    than the limit and differences beyond it; no pair of different lengths, or whose differences span
    more than three positions, ever agrees."""
    level = Level("slip", 6)
    assert agree(level, x, y) == slip_reference(x, y, 6) == slip_reference(y, x, 6)
    differ = [k for k in range(min(len(x), len(y))) if x[k] != y[k]]
    if len(x) != len(y) or (differ and differ[-1] - differ[0] > 2):
        assert not agree(level, x, y)


def test_slip_examples():
    level = Level("slip", 10)
    assert agree(level, "3776965", "3776945")          # one digit replaced
    assert agree(level, "5714719", "5714791")          # two adjacent digits swapped
    assert not agree(level, "3776965", "3776956 ")      # lengths differ
    assert not agree(level, "3776965", "4776964")      # differences six positions apart
    assert not agree(level, "3776965", "3786955")      # differences three positions apart
    assert not agree(level, "3", "3") and not agree(level, "", "")
    assert Level.parse("slip:10", "text").comparisons == 5 and Level.parse("slip:7", "text").comparisons == 3


def test_frequent_agrees_on_equal_values_each_side_counts_among_its_own_most_frequent():
    """Term-frequency class: each party ranks its own column; a pair agrees when the values are equal and
    each side has the value among its N most frequent (ties broken by value)."""
    from party_client.matching.levels import most_frequent
    level = Level("frequent", 2)
    querier = pd.Series(["smith", "smith", "smith", "li", "li", "zyx", "brown"], dtype=object)
    holder = pd.Series(["smith", "smith", "brown", "brown", "zyx", "li"], dtype=object)
    assert most_frequent(querier, 2) == {"smith", "li"} and most_frequent(holder, 2) == {"brown", "smith"}
    q, h = text_keys(level, querier), text_keys(level, holder)
    left, right = np.array([0, 3, 6, 5]), np.array([0, 5, 2, 4])     # smith, li, brown, zyx on both sides
    assert group_agreement(q, h, left, right).tolist() == [True, False, False, False]
    assert agree(Level("exact"), "zyx", "zyx")                         # the next level still sees them equal


def test_phonetic_initial_prefix():
    assert agree(Level("soundex"), "robert", "rupert") and not agree(Level("soundex"), "robert", "weber")
    assert agree(Level("initial"), "robert", "rob") and not agree(Level("initial"), "robert", "bob")
    assert agree(Level("prefix", 3), "robert", "roberta") and not agree(Level("prefix", 3), "robert", "rupert")


def date_agree(level: Level, x: str, y: str) -> bool:
    q, h = date_keys(level, pd.Series([x], dtype=object)), date_keys(level, pd.Series([y], dtype=object))
    return bool(group_agreement(q, h, np.array([0]), np.array([0]))[0])


def test_date_levels():
    assert date_agree(Level("exact"), "19800517", "19800517")
    assert date_agree(Level("day_month_swap"), "19800305", "19800503")
    assert not date_agree(Level("day_month_swap"), "19800305", "19810503")
    assert date_agree(Level("year"), "19800517", "19810517") and date_agree(Level("year"), "19800517", "19790517")
    assert not date_agree(Level("year"), "19800517", "19820517")
    assert date_agree(Level("days", 30), "19800517", "19800610")          # 24 days apart
    assert date_agree(Level("days", 30), "19801220", "19810110")          # across a year end
    assert not date_agree(Level("days", 30), "19800517", "19800717")
    assert not date_agree(Level("exact"), "", "")


@settings(max_examples=200, deadline=None)
@given(st.dates(min_value=dt.date(1900, 1, 1)), st.dates(min_value=dt.date(1900, 1, 1)))
def test_partial_agrees_exactly_when_two_of_year_month_and_day_are_the_same(x, y):
    """Real data's commonest date error, one component wrong (a slipped day, month or year), had no level
    between exact and "else"."""
    a, b = x.strftime("%Y%m%d"), y.strftime("%Y%m%d")
    same = (x.year == y.year) + (x.month == y.month) + (x.day == y.day)
    assert date_agree(Level("partial"), a, b) == (same >= 2)
    assert not date_agree(Level("partial"), a, "") and Level("partial").comparisons == 3


@settings(max_examples=100, deadline=None)
@given(st.integers(-50, 50), st.integers(-5, 5), st.integers(1, 3))
def test_numbers_within_a_tolerance(x, delta, tolerance):
    q = number_keys(Level("within", tolerance), pd.Series([str(x)], dtype=object))
    h = number_keys(Level("within", tolerance), pd.Series([str(x + delta)], dtype=object))
    assert bool(group_agreement(q, h, np.array([0]), np.array([0]))[0]) == (abs(delta) <= tolerance)


def test_missing_agrees_when_either_side_is_missing():
    q = missing_keys(pd.Series(["a", "", "a", ""], dtype=object))
    h = missing_keys(pd.Series(["b", "b", "", ""], dtype=object))
    pairs = np.arange(4)
    assert group_agreement(q, h, pairs, pairs).tolist() == [False, True, True, True]


NAMES = [LevelField("first", "text", (Level("exact"), Level("typo", LIMIT), Level("swapped", "last")), "first"),
         LevelField("last", "text", (Level("exact"), Level("soundex")), "last")]


def model() -> LevelModel:
    weights = {"first": {"exact": 6.0, "typo:8": 3.0, "swapped:last": 5.0, "else": -4.0},
               "last": {"exact": 7.0, "soundex": 2.0, "else": -5.0}}
    return LevelModel(NAMES, weights, threshold=5.0)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", "anna", "ann", "bob"]), st.sampled_from(["", "smith", "smyth", "anna"])),
                min_size=2, max_size=6))
def test_missing_gives_weight_zero(rows):
    frame = pd.DataFrame(rows, columns=["first", "last"])
    lm = model()
    groups = lm.groups(lm.codes(frame))
    left, right = np.repeat(np.arange(len(frame)), len(frame)), np.tile(np.arange(len(frame)), len(frame))
    levels = pair_levels(lm, groups, groups, left, right)
    weights = pattern_weights(lm, levels)
    for (i, j), w, pattern in zip(zip(left, right), weights, levels):
        expected = 0
        for c, f in enumerate(lm.fields):
            if frame.iloc[i][f.name] == "" or frame.iloc[j][f.name] == "":
                assert pattern[c] == len(f.levels)              # missing, whatever else
                continue
            expected += round(lm.weights[f.name][f.outcomes[pattern[c]]] * 1000)
        assert w == expected


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["", "4223", "4232", "2423", "9999"]), min_size=2, max_size=6))
def test_missing_shares_the_value_slot_and_never_agrees_at_another_level(values):
    """The querier's missing value travels as a marker in its value slot: missing needs no slot of its
    own, and the marker never agrees at exact or transposed (no holder key is ever the marker)."""
    field = LevelField("postcode", "text", (Level("exact"), Level("transposed", 4)), "postcode", normalize="identifier")
    lm = LevelModel([field], {"postcode": {"exact": 8.0, "transposed:4": 4.0, "else": -3.0}}, threshold=5.0)
    frame = pd.DataFrame({"postcode": values})
    groups = lm.groups(lm.codes(frame))["postcode"]
    assert [g.sources for g in groups] == [("value",), ("value",), ("value", "anchor")]
    left, right = np.repeat(np.arange(len(frame)), len(frame)), np.tile(np.arange(len(frame)), len(frame))
    levels = pair_levels(lm, {"postcode": groups}, {"postcode": groups}, left, right)[:, 0]
    for i, j, level in zip(left, right, levels):
        x, y = values[i], values[j]
        swaps = {y[:k] + y[k + 1] + y[k] + y[k + 2:] for k in range(3) if y and y[k] != y[k + 1]}
        expected = 2 if not x or not y else 0 if x == y else 1 if x in swaps else 3
        assert level == expected, (x, y)


def test_swapped_first_and_last_reach_the_swapped_level():
    frame_q = pd.DataFrame({"first": ["jack"], "last": ["steinert"]})
    frame_h = pd.DataFrame({"first": ["steinert"], "last": ["jack"]})
    lm = model()
    levels = pair_levels(lm, lm.groups(lm.codes(frame_q)), lm.groups(lm.codes(frame_h)), np.array([0]), np.array([0]))
    assert lm.fields[0].outcomes[levels[0, 0]] == "swapped:last"


def test_em_recovers_known_m_and_u_within_two_hundredths():
    rng = np.random.default_rng(5)
    fields = [LevelField(f"f{i}", "text", (Level("exact"), Level("soundex"), Level("initial")), f"f{i}") for i in range(5)]
    true_m = [0.85, 0.08, 0.04, 0.03]
    true_u = [0.02, 0.05, 0.10, 0.83]
    n, share = 60_000, 0.2
    match = rng.random(n) < share
    patterns = np.zeros((n, len(fields)), dtype=np.int64)
    for c in range(len(fields)):
        outcome_m = rng.choice(4, size=n, p=true_m)
        outcome_u = rng.choice(4, size=n, p=true_u)
        drawn = np.where(match, outcome_m, outcome_u)
        patterns[:, c] = np.where(drawn == 3, 4, drawn)          # index 3 is 'missing': else is 4
    lm = LevelModel(fields, {}, 0.0)
    fit = expectation_maximisation(lm, patterns)
    assert fit.converged
    assert abs(fit.match_proportion - share) < 0.02
    names = ["exact", "soundex", "initial", "else"]
    for f in fields:
        for name, m, u in zip(names, true_m, true_u):
            assert abs(fit.m[f.name][name] - m) < 0.02, (f.name, name)
            assert abs(fit.u[f.name][name] - u) < 0.02, (f.name, name)
    built = model_from_fit(fields, fit, threshold=8.0)
    assert math.isclose(built.weights["f0"]["exact"], math.log2(fit.m["f0"]["exact"] / fit.u["f0"]["exact"]), abs_tol=1e-3)
    assert accepted(built, np.array([[0] * 5])).all() and not accepted(built, np.array([[4] * 5])).any()


def test_em_that_does_not_converge_writes_no_rule():
    fields = [LevelField(name, "text", (Level("exact"), Level("initial")), name) for name in "abc"]
    patterns = np.random.default_rng(1).choice([0, 1, 3], size=(500, 3))
    fit = expectation_maximisation(LevelModel(fields, {}, 0.0), patterns, max_iterations=2)
    assert not fit.converged
    with pytest.raises(PartyError, match="did not converge"):
        model_from_fit(fields, fit, threshold=1.0)


def test_every_level_kind_says_what_agreeing_means():
    """The linkage page explains each level in words: every kind has a meaning, parameters included."""
    from party_client.matching.levels import DATE_LEVELS, NUMBER_LEVELS, TEXT_LEVELS
    for value_type, kinds in (("text", TEXT_LEVELS), ("date", DATE_LEVELS), ("number", NUMBER_LEVELS)):
        for kind in kinds:
            level = Level.parse(f"{kind}:last" if kind == "swapped" else kind, value_type)
            assert level.meaning and (level.parameter is None or str(level.parameter) in level.meaning)


def test_share_agrees_on_equal_values_each_side_holds_at_the_share():
    """Term-frequency class by share: each party classes its own column; a pair agrees when the values are
    equal and on each side the value is at least N thousandths of its non-empty values, held twice."""
    from party_client.matching.levels import shared_values
    level = Level.parse("share:250", "text")                 # a quarter of the side's values
    querier = pd.Series(["smith", "smith", "smith", "li", "li", "zyx", "brown", ""], dtype=object)
    holder = pd.Series(["smith", "smith", "brown", "brown", "zyx", "li", "", ""], dtype=object)
    assert shared_values(querier, 250) == {"smith", "li"} and shared_values(holder, 250) == {"smith", "brown"}
    assert shared_values(pd.Series(["a", "b", "c"], dtype=object), 300) == set()    # held once: never a class
    q, h = text_keys(level, querier), text_keys(level, holder)
    left, right = np.array([0, 3, 6, 5]), np.array([0, 5, 2, 4])     # smith, li, brown, zyx on both sides
    assert group_agreement(q, h, left, right).tolist() == [True, False, False, False]
    assert level.comparisons == 1 and Level.parse("share", "text") == Level("share", 5)
    with pytest.raises(PartyError, match="thousandths"):
        Level.parse("share:1001", "text")
