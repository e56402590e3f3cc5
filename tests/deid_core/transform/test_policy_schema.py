"""Strict policies and specs: every step and section checked against its schema, refused with one line
naming the step (or section) and the key; a policy this version writes re-applies byte-identically;
``default = "drop"`` drops (docs/deid.md, "Policies")."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from deid_core.cli import main
from deid_core.errors import DeidInputError
from deid_core.spec import parse_spec
from deid_core.transform import Policy

KEY = "the data owner's secret masking key"


def _policy(*steps: dict, **top) -> dict:
    return {"format": "deid_core.policy", "steps": list(steps), "columns": {"age": "quasi", "sex": "quasi"},
            "default": "drop", **top}


@pytest.mark.parametrize("step, words", [
    ({"op": "fpe", "column": "ssn", "format": "ssn", "domian": "patient-ssn"}, "step 1 (fpe of 'ssn'): unknown key 'domian'"),
    ({"op": "fpe", "column": "ssn", "radix": 36}, "unknown key 'radix'"),
    ({"op": "fpe", "column": "ssn", "domain": 123}, "domain = 123 must be a non-empty string"),
    ({"op": "fpe", "column": "ssn", "format": "hex"}, "format = 'hex' must be digits, ssn or luhn"),
    ({"op": "fpe", "format": "ssn"}, "step 1 (fpe): missing key 'column'"),
    ({"op": "generalize", "column": "age", "hierarchy": {"builder": "flat"}, "level": -1}, "level = -1"),
    ({"op": "generalize", "column": "age", "hierarchy": {"builder": "flat"}}, "missing key 'level'"),
    ({"op": "suppress_records", "columns": ["age"], "k": "5"}, "k = '5' must be an integer >= 1"),
    ({"op": "drop", "columns": "ssn"}, "columns = 'ssn' must be a non-empty list"),
    ({"op": "pseudonymize", "column": "ssn", "length": 4}, "length = 4"),
    ({"op": "randomize", "column": "ssn", "seed": -1}, "seed = -1"),
    ({"op": "names", "column": "ssn", "part": "middle"}, "part = 'middle'"),
    ({"op": "dates_intervals", "column": "d", "columns": ["d"]}, "exactly one of 'column' and 'columns'"),
    ({"op": "explode", "column": "ssn"}, "unknown op 'explode'"),
    ("drop everything", "must be a table"),
])
def test_a_bad_step_is_refused_naming_step_and_key(step, words):
    with pytest.raises(DeidInputError, match=None) as exc:
        Policy.from_dict(_policy(step))
    assert words in str(exc.value), exc.value


@pytest.mark.parametrize("top, words", [({"colour": "red"}, "unknown key 'colour'"), ({"version": "1"}, "version"),
                                        ({"columns": {"age": 5}}, "'columns' must map")])
def test_a_bad_policy_file_is_refused(top, words):
    with pytest.raises(DeidInputError) as exc:
        Policy.from_dict(_policy({"op": "drop", "columns": ["ssn"]}, **top))
    assert words in str(exc.value), exc.value


def _table(tmp_path: Path) -> Path:
    df = pd.DataFrame({"ssn": [f"{123 + i:03d}-45-{6789 - i:04d}" for i in range(12)], "age": ["34"] * 12,
                       "sex": ["F", "M"] * 6, "phone": [f"555-01{i:02d}" for i in range(12)]})
    data = tmp_path / "data.csv"
    df.to_csv(data, index=False)
    return data


def test_the_cli_refuses_the_typo_with_one_line_and_writes_nothing(tmp_path, capsys):
    # the defect: "domian" silently fell back to the column name as the domain, so the pseudonyms no
    # longer agreed with the other tables' (masked with domain "patient-ssn")
    data, policy, out = _table(tmp_path), tmp_path / "p.json", tmp_path / "out.csv"
    policy.write_text(json.dumps(_policy({"op": "fpe", "column": "ssn", "format": "ssn", "domian": "patient-ssn"})))
    (tmp_path / "k").write_text(KEY)
    assert main(["apply", "--input", str(data), "--policy", str(policy), "--out", str(out),
                 "--key-file", str(tmp_path / "k")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'domian'" in err and "policy step 1" in err
    assert not out.exists()


def test_default_drop_drops_and_the_written_policy_reapplies_byte_identically(tmp_path, capsys):
    # the defect: "default": "drop" did not drop (the release was then refused: phone declared direct)
    data, policy, key = _table(tmp_path), tmp_path / "p.json", tmp_path / "k"
    key.write_text(KEY)
    policy.write_text(json.dumps(_policy({"op": "fpe", "column": "ssn", "format": "ssn", "domain": "patient-ssn"})))
    outs = []
    for n, pol in ((1, policy), (2, tmp_path / "applied1.json")):
        out, written = tmp_path / f"out{n}.csv", tmp_path / f"applied{n}.json"
        assert main(["apply", "--input", str(data), "--policy", str(pol), "--out", str(out), "--key-file", str(key),
                     "--policy-out", str(written)]) == 0, capsys.readouterr().err
        outs.append((out.read_bytes(), written.read_bytes()))
    assert outs[0] == outs[1]
    released = pd.read_csv(tmp_path / "out1.csv", dtype=str)
    assert list(released.columns) == ["ssn", "age", "sex"]  # phone (default: drop) is gone


def test_assess_policy_out_reapplies_byte_identically(tmp_path, capsys):
    df = pd.DataFrame({"name": [f"N{i}" for i in range(300)], "age": [str(20 + i % 60) for i in range(300)],
                       "zip": [f"0{2100 + i % 40}" for i in range(300)], "sex": ["F", "M", "F"] * 100,
                       "dx": [f"D{i % 7}" for i in range(300)]})
    sample, spec = tmp_path / "data.csv", tmp_path / "spec.toml"
    df.to_csv(sample, index=False)
    spec.write_text('[columns]\nname = "direct"\nage = "quasi"\nzip = "quasi"\nsex = "quasi"\ndx = "sensitive"\n'
                    '[hierarchies]\nage = { builder = "interval", widths = [5, 10, 20] }\nzip = { builder = "prefix" }\n'
                    '[release]\nthreshold = 0.2\n')
    pol, out = tmp_path / "policy.json", tmp_path / "assess_out.csv"
    assert main(["assess", "--input", str(sample), "--spec", str(spec), "--report", str(tmp_path / "r.json"),
                 "--levels", "age=2,zip=2", "--suppress", "--out", str(out), "--policy-out", str(pol)]) == 0
    again, pol2 = tmp_path / "again.csv", tmp_path / "policy2.json"
    assert main(["apply", "--input", str(sample), "--policy", str(pol), "--out", str(again),
                 "--policy-out", str(pol2)]) == 0, capsys.readouterr().err
    assert again.read_bytes() == out.read_bytes() and pol2.read_bytes() == pol.read_bytes()


@pytest.mark.parametrize("extra, words", [
    ({"relase": {"threshold": 0.05}}, "unknown section [relase]"),
    ({"risk": {"gama": 1}}, "[risk] unknown key(s): gama"),
    ({"transform": {"record_suppression": "yes"}}, "record_suppression"),
    ({"data": {"missing_values": "NA"}}, "missing_values must be a list"),
    ({"hierarchies": {"age": {"builder": "interval", "widht": [5]}}}, "unknown key 'widht' for builder 'interval'"),
    ({"hierarchies": {"age": {"builder": "interval", "widths": [0]}}}, "widths = [0]"),
    ({"hierarchies": {"age": {"builder": "prefix", "levels": "2"}}}, "levels = '2'"),
    ({"types": {"age": 5}}, "[types]"),
])
def test_a_bad_spec_section_is_refused_naming_it(extra, words):
    with pytest.raises(DeidInputError) as exc:
        parse_spec({"columns": {"age": "quasi", "sex": "quasi"}, **extra})
    assert words in str(exc.value), exc.value
