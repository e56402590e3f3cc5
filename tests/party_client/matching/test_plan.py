"""``--dry-run``'s estimate: from the querier's table alone, the candidate pairs of each of the preset's
blocking passes on FEBRL 4 come out close to the pairs the two tables really share, and the totals
count comparisons and querier ciphertexts per record."""
from __future__ import annotations

import pandas as pd

from party_client.matching.level_rules import block_codes
from party_client.matching.plan import plan, plan_text
from party_client.matching.preset_roles import parse_map
from party_client.matching.presets import person_rules

MAP = ("id=soc_sec_id,first=given_name,last=surname,dob=date_of_birth,postcode=postcode,"
       "street_number=street_number,address=address_1,city=suburb,state=state")


def test_the_estimate_is_close_to_the_candidate_pairs_on_febrl4():
    from febrl import load_febrl4
    a, b = load_febrl4()
    a, b = a.reset_index(), b.reset_index()
    rules = person_rules(parse_map(MAP), population=10_000_000)
    estimate = plan(rules, a)
    codes_a, codes_b = rules.codes(a), rules.codes(b)
    for blocking, planned in zip(rules.blocking, estimate["passes"]):
        keys_a, keys_b = block_codes(rules.model, codes_a, blocking), block_codes(rules.model, codes_b, blocking)
        left = pd.DataFrame({"key": keys_a[keys_a != ""]})
        right = pd.DataFrame({"key": keys_b[keys_b != ""]})
        actual = len(left.merge(right, on="key"))
        assert abs(planned["candidate_pairs"] - actual) <= 0.15 * actual, (blocking.name, planned, actual)
    layout = rules.layout()
    assert estimate["comparisons"] == sum(p["candidate_pairs"] for p in estimate["passes"]) * layout.comparisons
    assert estimate["ciphertexts"] == sum(p["entries"] for p in estimate["passes"]) * layout.slots
    assert estimate["comparisons_per_record"] == round(estimate["comparisons"] / len(a), 1)
    text = plan_text(estimate)
    assert f"({estimate['comparisons_per_record']:,} per record)" in text and "per entry" in text
    # the time comes from each scheme's calls timed on this machine: ristretto's are the cheapest and
    # Paillier's comparisons cost tens of times an elliptic-curve one
    seconds = estimate["seconds"]
    assert 0 < seconds["ristretto"] < seconds["ec"] < seconds["paillier"] / 10
    assert f"this machine's {estimate['cores']} idle cores" in text
