"""The linkage page says in words what each level means, and where a weight is not log2(m/u) of the m and u
it shows (the preset's location roles share one piece of evidence), it says so and names the fields."""
from __future__ import annotations

import pandas as pd

from party_client.matching.linkage_page import render_page
from party_client.matching.presets import person_model


def test_the_page_explains_levels_and_weights_that_are_not_log_m_over_u():
    model = person_model({"first": "f", "last": "l", "postcode": "p", "city": "c"})
    result = pd.DataFrame({"f": ["anna", "jack"], "matched": [True, False], "match_weight": [20.5, None]})
    page = render_page(model, result, "match_weight", "matched", ["f"], 2, 1, 2)
    assert "the same NYSIIS code" in page and "none of the levels above" in page and "no value on either side" in page
    caveat = page.split("The weights of ")[1].split(" are not log2(m/u)")[0]
    assert caveat == "postcode, city"


def test_the_page_counts_records_as_the_report_does_and_warns_of_identifiers():
    """A record with two matches has two output rows: the page said "3 matched pairs for 3 of your 4 rows"
    for 3 records of which 2 matched."""
    model = person_model({"first": "f", "last": "l"})
    result = pd.DataFrame({"f": ["anna", "anna", "jack", "mia"], "matched": [True, True, True, False],
                           "match_weight": [20.5, 19.0, 30.0, None]})
    page = render_page(model, result, "match_weight", "matched", ["f"], 3, 2, 3)
    assert "3 matched pairs for 2 of your 3 records" in page
    assert "do not share it" in page and "Do not share: these rows are your own records" in page
