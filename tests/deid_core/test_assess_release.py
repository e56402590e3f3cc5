"""The library's entry point for a release's measures, ``assess_release`` -> ``ReleaseAssessment`` (what the
report states, measured once; the report package words it and measures nothing), and library errors that
name parameters, which the ``deid`` command names by their flags."""
from __future__ import annotations

import json
import pickle
import sys
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

import deid_core
from deid_core import AttackOptions, ReleaseAssessment, assess, assess_release, build_report, release_page
from deid_core.cli import main
from deid_core.cli.options import flagged
from deid_core.errors import DeidInputError, ParameterError
from deid_core.io import read_table
from deid_core.risk.known_subsets import known_qis
from deid_core.spec import parse_spec
from deid_core.spec import load_spec
from deid_core.transform.keys import check_key
from deidspecs import write_claims


def _table() -> tuple[pd.DataFrame, deid_core.Spec]:
    df = pd.DataFrame({"name": [f"n{i}" for i in range(60)], "zip": [f"021{i % 7:02d}" for i in range(60)],
                       "age": [str(30 + i % 9) for i in range(60)], "dx": ["a", "b", "c"] * 20})
    spec = parse_spec({"columns": {"name": "direct", "zip": "quasi", "age": "quasi", "dx": "sensitive"},
                       "hierarchies": {"zip": {"builder": "prefix"}, "age": {"builder": "interval", "widths": [5, 10]}},
                       "release": {"type": "non-public", "threshold": 0.2}})
    return df, spec


def test_a_release_made_by_levels_is_measured_with_its_original_in_one_typed_result():
    df, spec = _table()
    ra = assess_release(df, spec, levels={"zip": 2, "age": 1})
    assert isinstance(ra, ReleaseAssessment) and ra.release.transformed and not ra.original.transformed
    assert ra.verdict is ra.release.attack and ra.meets_threshold == ra.release.attack["meets_threshold"]
    assert ra.policy is ra.release.policy and ra.risk_before == ra.release.before
    # the original comes from the same encoding, and is what measuring the table untransformed gives
    untouched = assess(df, replace(spec, levels={}, record_suppression=False))
    assert np.array_equal(ra.original.ec_sizes, untouched.ec_sizes)
    pd.testing.assert_frame_equal(ra.original.per_record, untouched.per_record)
    assert ra.original.summary == untouched.summary and ra.original.loss == untouched.loss
    fates = {f["column"]: f for f in ra.columns}
    assert fates["name"]["fate"] == "dropped" and fates["zip"]["level_to"] == 2 and fates["dx"]["fate"] == "kept"
    assert [r["column"] for r in ra.loss_per_column] == ["zip", "age"] and ra.identifier_check is None


def test_a_release_made_elsewhere_is_measured_from_scratch_beside_its_source():
    df, spec = _table()
    made = assess_release(df, spec, levels={"zip": 1})
    ra = assess_release(df, spec, made.output, policy=made.policy)
    assert ra.spec.hierarchies and not ra.release.spec.hierarchies  # the release as a recipient holds it
    assert ra.attack_before == ra.original.attack
    assert ra.information_loss["non_uniform_entropy"] == made.information_loss["non_uniform_entropy"]
    with pytest.raises(DeidInputError, match="needs the policy that made it"):
        assess_release(df, spec, made.output)


def test_a_longitudinal_release_carries_its_simulated_attack_and_complete_knowledge(tmp_path):
    data, spec = write_claims(tmp_path, persons=30)
    ra = assess_release(read_table(data), load_spec(spec), levels={"dx": 1}, complete_knowledge="approximate",
                        attack=AttackOptions(iterations=50, seed=3))
    assert ra.attack["attack"]["iterations"] == 50 and ra.attack["attack"]["seed"] == 3
    assert ra.complete_knowledge["variant"] == "approximate" and ra.events_per_person["max"] == 4
    longitudinal = build_report(ra)["longitudinal"]
    assert longitudinal["attack"] == ra.attack and longitudinal["events_per_person"] == ra.events_per_person


def test_the_report_and_its_page_measure_nothing(monkeypatch):
    df, spec = _table()
    ra = assess_release(df, spec, levels={"age": 2}, fates=spec.fates(df.columns))
    assert ra.identifier_check is not None and "columns_checked" in ra.identifier_check

    def measured(*_, **__):
        raise AssertionError("the report measured")
    for module, name in (("deid_core.assess", "_assess"), ("deid_core.assess", "information_loss"),
                         ("deid_core.column_fates", "column_fates"), ("deid_core.risk", "attack_assessment")):
        monkeypatch.setattr(sys.modules[module], name, measured)
    report = build_report(ra, input_name="t.csv", title="A title")
    page = release_page(ra, report)
    assert report["title"] == "A title" and json.dumps(report, default=str)
    assert "<h2>Verdict</h2>" in page and page.count("<figure>") == 2


def test_a_library_error_names_its_parameter_and_the_command_its_flag(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("DEID_KEY", raising=False)
    with pytest.raises(ParameterError) as refused:
        known_qis(["zip", "age"], 5)
    assert refused.value.parameter == "known" and str(refused.value).startswith("known 5 must lie in 1..2")
    assert flagged(refused.value).startswith("--known 5 must lie in 1..2")
    with pytest.raises(ParameterError) as keyless:
        check_key(None)
    assert keyless.value.parameter == "key" and "supply it with key or the DEID_KEY" in str(keyless.value)
    assert "supply it with --key-file or the DEID_KEY" in flagged(keyless.value)
    back = pickle.loads(pickle.dumps(keyless.value))  # from a worker process: still mappable to its flag
    assert (back.template, back.names, str(back)) == (keyless.value.template, ("key",), str(keyless.value))
    # the command line: the flag the user typed
    df, _ = _table()
    data, policy = tmp_path / "t.csv", tmp_path / "p.json"
    df.to_csv(data, index=False)
    policy.write_text(json.dumps({"format": "deid_core.policy", "steps": [{"op": "pseudonymize", "column": "name"}],
                                  "columns": {"zip": "quasi", "age": "quasi", "dx": "sensitive"}, "default": None}))
    assert main(["apply", "--input", str(data), "--policy", str(policy), "--out", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("deid: error: a masking key of at least 16 bytes is required (supply it with --key-file or the "
                   "DEID_KEY environment variable)")
