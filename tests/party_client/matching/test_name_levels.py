"""The name levels ``nickname``, ``translit`` and ``compound``: their keys decide exactly the semantics
docs/protocol.md states ("Comparison levels"), and the letters NFKD leaves whole are spelled out."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from party_client.errors import PartyError
from party_client.matching.fellegi_sunter import LevelField, LevelModel, pair_levels
from party_client.matching.level_rules import LevelRules, load_level_rules, rules_document
from party_client.matching.blocking import BlockingPass
from party_client.matching.levels import Level, group_agreement, text_keys
from party_client.matching.name_forms import PARTICLES, name_parts, nickname_forms
from party_client.matching.normalize import normalize_names


def agree(level: Level, x: str, y: str) -> bool:
    """The level decided from keys: x the querier's written value, y the holder's."""
    sides = []
    for value in (x, y):
        written = pd.Series([value], dtype=object)
        parts = name_parts(written, int(level.parameter)) if level.kind == "compound" else None
        sides.append(text_keys(level, normalize_names(written), parts))
    return bool(group_agreement(sides[0], sides[1], np.array([0]), np.array([0]))[0])


def forms(name: str, count: int) -> set[str]:
    """The nickname level's semantics, written from the table: the name and the names it is a nickname
    of, most common first, the first ``count``."""
    return set(([name] + list(nickname_forms().get(name, ())))[:count]) if name else set()


TABLE = sorted(nickname_forms())
NAMES = st.sampled_from(TABLE[::7] + ["robert", "william", "margaret", "elizabeth", "zebulonx", ""])


def test_nickname_examples():
    level = Level.parse("nickname", "text")
    for formal, short in (("Robert", "Bob"), ("William", "Bill"), ("Margaret", "Peggy"), ("Elizabeth", "Liz")):
        assert agree(level, formal, short) and agree(level, short, formal)
    assert agree(level, "Bill", "Will")                       # both nicknames of William
    assert not agree(level, "Robert", "Margaret") and not agree(level, "Bob", "")
    assert not agree(level, "Robert", "William")              # two formal names sharing the nickname Bill
    assert agree(level, "Robert", "Robert")                   # a name is its own first form
    assert level.comparisons == 9 and Level.parse("nickname:4", "text").comparisons == 16


@settings(max_examples=150, deadline=None)
@given(NAMES, NAMES, st.integers(2, 4))
def test_nickname_keys_decide_exactly_the_shared_forms(x, y, count):
    assert agree(Level("nickname", count), x, y) == bool(forms(x, count) & forms(y, count))


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="abeloruüäößs", min_size=1, max_size=8))
def test_an_umlaut_written_out_plain_or_kept_agrees_at_translit(name):
    level = Level.parse("translit", "text")
    written_out = "".join({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss"}.get(c, c) for c in name)
    plain = "".join({"ä": "a", "ö": "o", "ü": "u"}.get(c, c) for c in name)
    assert agree(level, name, written_out) and agree(level, written_out, plain) and agree(level, name, plain)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="aeou", min_size=1, max_size=6), st.text(alphabet="aeou", min_size=1, max_size=6))
def test_translit_agrees_exactly_when_equal_after_the_fold(x, y):
    def folded(value: str) -> str:         # every e after a, o or u dropped
        out = ""
        for c in value:
            if not (c == "e" and out[-1:] in ("a", "o", "u")):
                out += c
        return out
    assert agree(Level("translit"), x, y) == (folded(x) == folded(y))


def test_translit_examples_and_letters_nfkd_leaves_whole():
    level = Level.parse("translit", "text")
    assert agree(level, "Müller", "Mueller") and agree(level, "Mueller", "Muller") and agree(level, "Göbel", "Goebel")
    assert agree(level, "Jørgensen", "Jorgensen") and not agree(level, "Müller", "Miller")
    assert not agree(level, "", "") and level.comparisons == 1
    values = pd.Series(["Søren", "Æbelø", "Łukasz", "Þór", "Đorđe", "Straße", "Müller"])
    assert normalize_names(values).tolist() == ["soeren", "aebeloe", "lukasz", "thor", "dorde", "strasse", "muller"]


def test_compound_examples():
    level = Level.parse("compound", "text")
    assert agree(level, "Müller-Lüdenscheidt", "Müller") and agree(level, "Müller-Lüdenscheidt", "Lüdenscheidt")
    assert agree(level, "van der Berg", "Berg") and agree(level, "García López", "López García")
    assert agree(level, "de la Cruz", "Cruz") and agree(level, "Le", "Le")       # a particle alone is the name
    assert not agree(level, "van Dijk", "van Berg") and not agree(level, "Smith", "Smyth")
    assert not agree(level, "Smith", "") and level.comparisons == 4


PART = st.sampled_from(["berg", "muller", "lopez", "garcia", "dijk", "van", "der", "de", "x"])


@settings(max_examples=150, deadline=None)
@given(st.lists(PART, min_size=1, max_size=4), st.lists(PART, min_size=1, max_size=4),
       st.sampled_from(["-", " ", " - "]), st.integers(1, 3))
def test_compound_keys_decide_exactly_the_shared_parts(x, y, separator, count):
    def parts(words: list[str]) -> set[str]:
        names = [w for w in words if len(w) > 1 and w not in PARTICLES] or words
        return set(names[:count])
    assert agree(Level("compound", count), separator.join(x), separator.join(y)) == bool(parts(x) & parts(y))


def test_parameters_are_bounded():
    for text in ("nickname:1", "nickname:7", "compound:0", "compound:7"):
        with pytest.raises(PartyError):
            Level.parse(text, "text")
    with pytest.raises(PartyError, match="no parameter"):
        Level.parse("translit:2", "text")


def test_a_model_with_the_name_levels_decides_pairs_and_survives_the_rules_file():
    """Levels in a field's order, the first agreeing wins; the rules file gives the same model back."""
    last = LevelField("last", "text", (Level("exact"), Level("translit"), Level("compound", 2)), "surname")
    first = LevelField("first", "text", (Level("exact"), Level("nickname", 3)), "given")
    weights = {"last": {"exact": 8.0, "translit": 7.0, "compound:2": 6.0, "else": -4.0},
               "first": {"exact": 7.0, "nickname:3": 5.0, "else": -3.0}}
    rules = LevelRules(LevelModel([last, first], weights, 10.0), [BlockingPass(("first:initial",))])
    again = load_level_rules(rules_document(rules), "test")
    assert again.spec == rules.spec
    assert again.layout().comparisons == (1 + 1 + 4 + 1) + (1 + 9 + 1)     # levels and missing, per field
    a = pd.DataFrame({"surname": ["Müller-Lüdenscheidt", "Mueller", "Weber", ""],
                      "given": ["Robert", "Peggy", "Anna", "Bill"]})
    b = pd.DataFrame({"surname": ["Lüdenscheidt", "Müller", "Weber", "Smith"],
                      "given": ["Bob", "Margaret", "Hanna", "William"]})
    model = again.model
    levels = pair_levels(model, model.groups(again.codes(a)), model.groups(again.codes(b)), np.arange(4), np.arange(4))
    # last: exact 0, translit 1, compound 2, missing 3, else 4; first: exact 0, nickname 1, missing 2, else 3
    assert levels.tolist() == [[2, 1], [1, 1], [0, 3], [3, 1]]


def test_secure_name_levels_equal_the_plaintext_model(keyholder, tmp_path):
    """Under encryption (ristretto) the blocked engine decides the name levels' N x N comparisons exactly
    as the plaintext reference: the same pairs, with the same weights."""
    from linkhelpers import key_bits_for, make_party, serve_and_join
    last = LevelField("last", "text", (Level("exact"), Level("translit"), Level("compound", 2)), "surname")
    first = LevelField("first", "text", (Level("exact"), Level("nickname", 3)), "given")
    town = LevelField("town", "text", (Level("exact"),), "town")           # one block: every pair compared
    weights = {"last": {"exact": 6.0, "translit": 5.0, "compound:2": 4.0, "else": -4.0},
               "first": {"exact": 5.0, "nickname:3": 3.0, "else": -3.0}, "town": {"exact": 0.5, "else": -1.0}}
    rules = LevelRules(LevelModel([last, first, town], weights, 7.5), [BlockingPass(("town",))])
    querier = pd.DataFrame({"rec_id": [f"q{i}" for i in range(8)],
                            "surname": ["Müller-Lüdenscheidt", "Mueller", "van der Berg", "Weber", "García López",
                                        "Lüdenscheidt", "Berg", ""],
                            "given": ["Robert", "Peggy", "Anna", "Bill", "Liz", "Hans", "Tina", "Bob"], "town": "x"})
    holder = pd.DataFrame({"rec_id": [f"h{i}" for i in range(8)],
                           "surname": ["Lüdenscheidt", "Müller", "Berg", "Weber", "García", "Müller", "Bergmann",
                                       "Lopez"],
                           "given": ["Bob", "Margaret", "Anna", "Will", "Elizabeth", "Hans", "Chris", "Robert"],
                           "town": "x"})
    (qdir, _), (hdir, hname) = make_party(keyholder, tmp_path), make_party(keyholder, tmp_path)
    result = serve_and_join(qdir, hdir, hname, querier, holder,
                            holder=dict(rules=rules, release_columns=["rec_id"]),
                            join=dict(rules=rules, key_bits=key_bits_for("ristretto"), scheme="ristretto"))
    left_out = [p["left_out_records"] for p in result.report["passes"]]
    expected = rules.plaintext_matches(querier, holder, rules.candidate_pairs(querier, holder, left_out=left_out))
    expected_ids = set(zip(querier["rec_id"][expected.entry], holder["rec_id"][expected.row]))
    assert {("q0", "h0"), ("q1", "h1"), ("q2", "h2"), ("q3", "h3"), ("q4", "h4")} <= expected_ids
    assert ("q7", "h7") not in expected_ids and ("q6", "h6") not in expected_ids
    matched = result.frame[result.frame["matched"]]
    assert set(zip(matched["rec_id"], matched["rec_id_holder"])) == expected_ids
