"""The workbench's spec form: fields -> TOML spec (validated by the library's parser) -> form again."""
from __future__ import annotations

import pytest

from deid_core.errors import DeidInputError
from deid_core.spec import parse_spec
from deid_core.ui.specform import SpecForm

COLUMNS = ["member", "zip", "age", "dx", "visit", "note"]


def test_form_to_toml_and_back_keeps_every_field():
    form = SpecForm.for_columns(COLUMNS, flagged={"member": ["long_digits"]})
    assert form.columns["member"].role == "direct" and form.columns["zip"].role == "other"
    form.update({"role:zip": "quasi", "builder:zip": "prefix", "prefix_levels:zip": "5", "type:zip": "zip",
                 "role:age": "quasi", "builder:age": "interval", "widths:age": "5, 10, 20", "top_code:age": "90",
                 "role:dx": "quasi", "builder:dx": "icd", "role:visit": "quasi", "builder:visit": "dates",
                 "role:note": "sensitive", "release_type": "public", "threshold": "0.09", "person": "member",
                 "level:zip": "1", "level:age": "1", "level:dx": "2", "level:visit": "2", "adversary_power": "3"})
    text = form.toml()
    spec = form.spec()
    assert spec.quasi == ["zip", "age", "dx", "visit"] and spec.release.type == "public"
    assert spec.hierarchies["age"].to_dict() == {"builder": "interval", "widths": [5, 10, 20], "top_code": 90}
    assert spec.longitudinal.level1 == ("zip", "age") and spec.longitudinal.adversary_power == 3
    again = SpecForm.from_toml(text, COLUMNS)
    assert again.toml() == text


def test_csv_hierarchy_is_embedded_and_a_loaded_spec_keeps_what_the_form_does_not_edit():
    loaded = SpecForm.from_toml('[columns]\nsex = "quasi"\ndefault = "other"\n[hierarchies]\n'
                                'sex = { rows = [["F", "*"], ["M", "*"]], source = "sex.csv" }\n'
                                '[release]\nthreshold = 0.1\npr_attempt = 0.3\n[risk]\nmissing = "match_any"\n',
                                ["sex", "a", "b"])
    assert loaded.columns["a"].role == "other" and loaded.columns["sex"].rows == [["F", "*"], ["M", "*"]]
    assert loaded.columns["sex"].source == "sex.csv"
    raw = loaded.raw()
    assert raw["release"]["pr_attempt"] == 0.3 and raw["risk"] == {"missing": "match_any"}
    assert parse_spec(raw).hierarchies["sex"].params["rows"] == [["F", "*"], ["M", "*"]]


@pytest.mark.parametrize("fields, words", [
    ({"threshold": "abc"}, "not a number"),
    ({"role:age": "quasi", "builder:age": "interval", "widths:age": "5, x"}, "not a number"),
    ({"role:age": "quasi", "builder:age": "csv"}, "upload its CSV file"),
    ({"person": "age"}, "declare it \"direct\""),
])
def test_bad_fields_are_one_line(fields, words):
    form = SpecForm.for_columns(COLUMNS, flagged={})
    form.update(fields)
    with pytest.raises(DeidInputError, match=words):
        form.spec()
