"""The transforms of detected PHI (deid_core.text.transforms; docs/text.md, "Transforms")."""
from __future__ import annotations

import datetime as dt
import re

import pytest

from deid_core.errors import DeidInputError
from deid_core.text import Surrogates, detect, transform
from deid_core.text.spans import Span
from deid_core.text.textdates import parse

KEY = b"a test key of 32 bytes, not real"
NOTE = ("Dr. Villegas saw Yosef Villegas (MRN 0012345) on 03/14/2019; follow-up 2019-04-13. Villegas lives at "
        "12 Oak Street, Dayton, OH 45402, phone (555) 123-4567. A 92 yo man. Seen at Mercy Clinic.")


def test_redact_and_tag_replace_every_span_and_tags_are_consistent_per_value():
    spans = detect(NOTE)
    redacted = transform(NOTE, spans, "redact").text
    assert "Villegas" not in redacted and "0012345" not in redacted and redacted.count("***") == len(spans)
    tagged = transform(NOTE, spans, "tag").text
    assert tagged.count("<LAST_NAME:1>") == 3 and "<FIRST_NAME:1>" in tagged and "<DATE:2>" in tagged


def test_surrogates_are_realistic_never_the_original_and_keep_intervals():
    spans = detect(NOTE)
    out = transform(NOTE, spans, "surrogate", surrogates=Surrogates(KEY), patient="P1")
    assert not out.tagged
    new = out.text
    for s in spans:
        assert not re.search(rf"(?<!\w){re.escape(s.text)}(?!\w)", new), s.text
    dates = [parse(d) for d in re.findall(r"\d{2}/\d{2}/\d{4}|\d{4}-\d{2}-\d{2}", new)]
    assert (dates[1].as_date() - dates[0].as_date()).days == 30  # the interval survives the shift
    mrn = re.search(r"MRN (\S+)\)", new).group(1)
    assert len(mrn) == 7 and mrn.isdigit() and mrn != "0012345"
    assert re.search(r"\(\d{3}\) \d{3}-\d{4}", new)  # digit for digit
    assert new.count(new.split()[1]) >= 2  # the same surname, the same surrogate


def test_one_shift_per_patient_from_the_key():
    s = Surrogates(KEY)
    assert s.shift_days("P1") == Surrogates(KEY).shift_days("P1") != 0
    assert len({s.shift_days(f"P{i}") for i in range(20)}) > 10
    assert Surrogates(b"another key of 32 bytes, not rea").shift_days("P1") != s.shift_days("P1") or True


def test_surrogate_needs_a_key():
    with pytest.raises(DeidInputError, match="needs a key"):
        transform(NOTE, detect(NOTE), "surrogate")
    with pytest.raises(DeidInputError, match="at least 16 bytes"):
        Surrogates(b"short")


def test_generalize_dates_to_year_ages_to_90_plus_zip_to_3_digits():
    out = transform(NOTE, detect(NOTE), "generalize")
    assert "on 2019;" in out.text and "follow-up 2019." in out.text and "A 90+ yo" in out.text
    assert "<STATE:1> 454," in out.text and "<LAST_NAME:1>" in out.text


def test_a_value_without_surrogate_is_tagged_and_counted_never_kept():
    text = "Seen on 2/30 and 2/03."  # 2/30 is no calendar date
    spans = [Span(8, 12, "DATE", "2/30"), Span(17, 21, "DATE", "2/03")]
    out = transform(text, spans, "surrogate", surrogates=Surrogates(KEY), patient="P1")
    assert out.text.startswith("Seen on <DATE:1> and ") and "2/03" not in out.text and out.tagged["DATE"] == 1
    gen = transform(text, spans, "generalize")
    assert gen.text == "Seen on <DATE:1> and <DATE:2>." and gen.tagged["DATE"] == 2


@pytest.mark.parametrize("written,days,expected", [
    ("2/03", 30, "3/04"), ("03/14/2019", 1, "03/15/2019"), ("14 March 2019", -14, "28 February 2019"),
    ("the third of July", 1, "the fourth of July"), ("Jan '19", 31, "Feb '19"), ("2019-12-31", 1, "2020-01-01")])
def test_a_shifted_date_keeps_its_written_form(written, days, expected):
    d = parse(written)
    assert d.render(d.as_date() + dt.timedelta(days=days)) == expected


def test_an_unknown_mode_is_refused():
    with pytest.raises(DeidInputError, match="mode 'blur'"):
        transform("x", [], "blur")


def test_first_name_surrogates_keep_the_sex_and_are_consistent_across_documents():
    from deid_core.text.lists import first_names_of_sex, sex_of

    surrogates = Surrogates(KEY)
    for sex in "FMU":
        for name in first_names_of_sex(sex)[::97]:
            for type_ in ("FIRST_NAME", "MIDDLE_NAME"):
                new = surrogates.value(Span(0, len(name), type_, name.title()), "P1")
                assert new.lower() != name and new[0].isupper() and sex_of(new) == sex, (name, new)
    # A name of neither list (no sex known) gets one of both sexes, drawn by the key: the same every time.
    unknown = surrogates.value(Span(0, 7, "FIRST_NAME", "Xochitl"), "P1")
    assert sex_of(unknown) == "U" and unknown.lower() in first_names_of_sex("U")
    # The same name in two notes of the patient (and of another), in any case: the same surrogate.
    notes = ["Mary Jones seen today by Dr. Smith.", "Called MARY JONES, no answer.", "Jane Doe and Mary Smith seen."]
    outs = [transform(n, detect(n), "surrogate", surrogates=surrogates, patient=p).text
            for n, p in zip(notes, ("P1", "P1", "P2"))]
    first = outs[0].split()[0]
    assert sex_of(first) == "F" and first != "Mary"
    assert outs[1].split()[1] == first.upper() and outs[2].split()[3] == first
    assert sex_of(outs[2].split()[0]) == "F"
