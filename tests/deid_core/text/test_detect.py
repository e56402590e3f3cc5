"""Detection of PHI in free text (deid_core.text; docs/text.md, "What is detected")."""
from __future__ import annotations

import pytest

from deid_core.errors import DeidInputError
from deid_core.text import detect
from deid_core.text.resolve import resolve
from deid_core.text.spans import CUE, LIST, PATTERN, Span


def found(text, hints=None):
    return {(s.text, s.type) for s in detect(text, hints)}


def texts(text, hints=None):
    return {s.text for s in detect(text, hints)}


def test_the_misses_of_other_tools_are_found():
    note = ("Pt seen by Dr. villegas on 2/03. Villegas, Yosef MRN 0012345 was seen again on the third of July "
            "and Jan '19.")
    got = found(note)
    assert {("villegas", "LAST_NAME"), ("Villegas", "LAST_NAME"), ("Yosef", "FIRST_NAME"), ("0012345", "MRN"),
            ("2/03", "DATE"), ("the third of July", "DATE"), ("Jan '19", "DATE")} <= got


def test_lastname_firstname_after_a_name_label_in_lower_case():
    """Both words of "villegas, yosef" after "Name:" (neither listed, neither capitalized): before, the cue found
    the surname and the first name leaked; two English words after a label are still no name."""
    assert {("villegas", "LAST_NAME"), ("yosef", "FIRST_NAME")} <= found("Name: villegas, yosef  DOB: 2/03/1950")
    assert found("Name: pending, will call back") == set()


def test_eponyms_scores_and_lookalike_codes_are_not_flagged():
    note = ("History of Huntington's disease and Parkinson's disease. Apgar 9. G2P1A1. C6C7T1 and S1S2S4 noted. "
            "Foley catheter placed. Murphy's sign negative, Babinski sign absent, Bankart lesion. BP 120/80, "
            "strength 5/5, pain 7/10. Lasix 40 mg. Jackson-Pratt drain. In 2015 diagnosed.")
    assert detect(note) == []


@pytest.mark.parametrize("date", ["2/03", "03/14/2019", "14 March 2019", "2019-03-14", "March 14, 2019",
                                  "the third of July", "Jan '19", "March 2019", "Sept. 5", "3/14/19", "July 4th"])
def test_every_written_form_of_a_date(date):
    assert (date, "DATE") in found(f"Follow-up visit on {date} at noon.")


def test_a_month_is_a_date_but_april_before_a_surname_is_a_name():
    got = found("Return in April. April Jones called.")
    assert ("April", "DATE") in got and ("April", "FIRST_NAME") in got and ("Jones", "LAST_NAME") in got


def test_cue_words_find_lowercase_and_unlisted_names():
    got = texts("wife maria at bedside. Mrs. Xochitl visited. spoke with hautamaki about it. pt juhani salminen.")
    assert {"maria", "Xochitl", "hautamaki", "juhani", "salminen"} <= got


def test_common_words_need_a_cue():
    assert texts("Hope is good, will grant the request, brown stool.") == set()
    assert "Brown" in texts("Discussed with Dr. Brown.")


def test_every_mention_of_a_found_name_is_found():
    got = [s for s in detect("Dr. Okonkwo saw the patient. okonkwo will call back; OKONKWO signed.")]
    assert [s.text for s in got] == ["Okonkwo", "okonkwo", "OKONKWO"]


@pytest.mark.parametrize("text,value,type_", [
    ("Call (555) 123-4567 today", "(555) 123-4567", "PHONE"), ("fax 555.123.4567 x12", "555.123.4567 x12", "PHONE"),
    ("mail jd@example.org now", "jd@example.org", "EMAIL"), ("see https://x.example.com/a?b=1.", "https://x.example.com/a?b=1", "URL"),
    ("SSN 123-45-6789", "123-45-6789", "SSN"), ("Acct # 99887766", "99887766", "ACCOUNT"),
    ("DEA number AB1234567", "AB1234567", "LICENSE"), ("pacemaker serial number PM123456", "PM123456", "DEVICE"),
    ("a 92 yo woman", "92", "AGE"), ("aged 101", "101", "AGE"), ("ninety-two year old", "ninety-two", "AGE"),
    ("at St. Mary's Hospital today", "St. Mary's Hospital", "FACILITY"), ("to Mercy Clinic", "Mercy Clinic", "FACILITY"),
    ("lives at 12 Oak Street Apt 4, Dayton, OH 45402", "12 Oak Street Apt 4", "STREET"),
    ("lives at 12 Oak Street Apt 4, Dayton, OH 45402", "Dayton", "CITY"),
    ("lives at 12 Oak Street Apt 4, Dayton, OH 45402", "45402", "ZIP"),
    ("moved from Canada", "Canada", "COUNTRY"), ("postal code K1A 0B1", "K1A 0B1", "ZIP"),
])
def test_pattern_recognizers(text, value, type_):
    assert (value, type_) in found(text)


def test_an_age_under_90_and_a_bare_year_are_not_phi():
    assert detect("a 45 yo man, diabetic since 2015") == []


def test_hints_and_their_variants_are_found_first():
    note = "doe, jane (J. Doe) mrn 12345, born 2 January 1970; Doe called. Xq12 on 01/02/1970."
    got = found(note, {"name": "Jane Doe", "mrn": "0012345", "dob": "1970-01-02"})
    assert {("doe", "LAST_NAME"), ("jane", "FIRST_NAME"), ("J.", "FIRST_NAME"), ("12345", "MRN"),
            ("2 January 1970", "DATE"), ("01/02/1970", "DATE"), ("Doe", "LAST_NAME")} <= got
    assert all(s.source == "hint" for s in detect(note, {"name": "Jane Doe"}) if s.text.lower() in ("doe", "jane"))


def test_an_unknown_hint_or_a_non_string_is_refused():
    with pytest.raises(DeidInputError, match="unknown hint 'nmae'"):
        detect("x", {"nmae": "Jane"})
    with pytest.raises(DeidInputError, match="must be a string"):
        detect(b"x")


def test_overlaps_the_longest_then_the_most_specific_wins():
    spans = [Span(0, 4, "FIRST_NAME", "Mary", "list", LIST), Span(0, 19, "FACILITY", "Mary's Hospital ...", "f", PATTERN),
             Span(20, 25, "CITY", "Paris", "l", LIST), Span(20, 25, "LAST_NAME", "Paris", "cue", CUE)]
    assert [(s.start, s.type) for s in resolve(spans)] == [(0, "FACILITY"), (20, "LAST_NAME")]


def test_a_name_signed_with_a_credential_and_an_initial_after_a_title():
    got = found("Results reviewed. -- Robin Summers, RN. Seen by Dr. J. Okafor.")
    assert {("Robin", "FIRST_NAME"), ("Summers", "LAST_NAME"), ("J.", "FIRST_NAME"), ("Okafor", "LAST_NAME")} <= got


def test_city_with_state_abbreviation_wins_over_a_state_named_city():
    got = found("Lives at 24 Archer Knolls, Washington, WI 90977.")
    assert {("Washington", "CITY"), ("WI", "STATE"), ("90977", "ZIP")} <= got
