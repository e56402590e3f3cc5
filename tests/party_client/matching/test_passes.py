"""--preset person's blocking passes (party_client/matching/presets.py, ``PASSES``; benchmarks/README.md,
"Blocking for slipped and census")."""
from __future__ import annotations

from party_client.matching.preset_roles import parse_map
from party_client.matching.presets import person_passes


def passes(mapping: str) -> list[tuple[str, ...]]:
    return [p.fields for p in person_passes(parse_map(mapping))]


def test_without_id_or_street_one_pass_needs_neither_date_nor_first_name():
    found = passes("first=f,last=l,dob=d,postcode=p,city=c")
    assert found == [("dob",), ("first", "last"), ("first:nysiis", "postcode"), ("last:soundex", "postcode")]
    assert [p for p in found if not {"dob", "first", "first:nysiis"} & set(p)] == [("last:soundex", "postcode")]


def test_with_id_and_street_the_passes_are_unchanged():
    found = passes("id=i,first=f,last=l,dob=d,postcode=p,street_number=n,address=a,city=c,state=s")
    assert found == [("id",), ("dob",), ("postcode", "street_number"), ("address", "last:initial")]


def test_without_postcode_the_surname_and_year_pass_remains():
    assert passes("first=f,last=l,dob=d") == [("dob",), ("first", "last"), ("last:soundex", "dob:year")]
