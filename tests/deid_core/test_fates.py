"""Every column of a release has a declared fate, and identifiers are refused before anything is written:
``deid safe-harbor``, ``deid apply``, ``deid search --apply-best`` (and the identifier detector's accuracy)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from deid_core.cli import main
from deid_core.detect import KINDS, column_findings
from deid_core.spec import parse_spec

from deid_testdata import TEST_DATA
DATA = TEST_DATA


def patients(n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    return pd.DataFrame({
        "patient_id": [str(v) for v in 10 ** 8 + rng.choice(9 * 10 ** 8, n, replace=False)],
        "zip": rng.choice(["02139", "02140", "10001", "94110"], n),
        "age": rng.integers(30, 100, n).astype(str),
        "sex": rng.choice(["F", "M"], n),
        "dx": rng.choice(["C50", "C61", "I10"], n),
    })


SPEC = '[columns]\nzip = "quasi"\nage = "quasi"\nsex = "quasi"\ndx = "sensitive"\n[types]\nzip = "zip"\nage = "age"\n'


def files(tmp_path: Path, spec: str = SPEC) -> tuple[Path, Path]:
    data, spec_path = tmp_path / "in.csv", tmp_path / "spec.toml"
    patients().to_csv(data, index=False)
    spec_path.write_text(spec)
    return data, spec_path


def refused(capsys, argv: list[str], *needles: str) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and all(n in err for n in needles), err
    return err


def test_safe_harbor_refuses_unlisted_columns(tmp_path, capsys):
    data, spec = files(tmp_path)
    out = tmp_path / "out.csv"
    refused(capsys, ["safe-harbor", "--input", str(data), "--spec", str(spec), "--out", str(out)],
            "not in the spec's [columns]: 'patient_id'", 'default = "drop"')
    assert not out.exists()
    # a spec with no [types]: the patient id, 5-digit ZIPs and ages over 89 are all detected in the release
    spec.write_text('[columns]\npatient_id = "other"\nzip = "quasi"\nage = "quasi"\nsex = "quasi"\ndx = "sensitive"\n')
    err = refused(capsys, ["safe-harbor", "--input", str(data), "--spec", str(spec), "--out", str(out)],
                  "'patient_id' (other) looks like long digit identifiers", "'zip' (quasi) looks like 5-digit ZIP",
                  "'age' (quasi) looks like ages over 89")
    assert not out.exists() and "02139" not in err


def test_default_key_drop_other_quasi_and_a_column_named_default(tmp_path, capsys):
    data, spec = files(tmp_path)
    spec.write_text(SPEC.replace("[columns]\n", '[columns]\ndefault = "drop"\n'))
    out, rep = tmp_path / "out.csv", tmp_path / "rep.json"
    assert main(["safe-harbor", "--input", str(data), "--spec", str(spec), "--out", str(out), "--report", str(rep)]) == 0
    assert list(pd.read_csv(out, dtype=str).columns) == ["zip", "age", "sex", "dx"]
    report = json.loads(rep.read_text())
    assert report["defaulted_columns"] == {"patient_id": "drop"} and report["column_fates"]["patient_id"] == "direct"
    assert set(report["columns"]) == {"patient_id", "zip", "age", "sex", "dx"}    # every column, not {}
    spec.write_text(SPEC.replace("[columns]\n", '[columns]\ndefault = "other"\n'))
    refused(capsys, ["safe-harbor", "--input", str(data), "--spec", str(spec), "--out", str(out)],
            "'patient_id' (other) looks like long digit")
    spec.write_text('[columns]\ndefault = "sensitive"\n')
    refused(capsys, ["safe-harbor", "--input", str(data), "--spec", str(spec), "--out", str(out)],
            "[columns] default = 'sensitive' must be one of drop, other, quasi")
    # a real column literally named "default" is declared in the table form
    s = parse_spec({"columns": {"default": {"role": "sensitive"}, "x": "quasi"}})
    assert s.columns == {"default": "sensitive", "x": "quasi"} and s.rest is None
    import tomllib
    s = parse_spec(tomllib.loads('[columns]\nx = "other"\n[columns.default]\nrole = "direct"\n'))
    assert s.columns == {"x": "other", "default": "direct"} and s.fates(["x", "default"])["default"] == "direct"


def test_accept_column_override_reason_in_report(tmp_path, capsys):
    data, spec = files(tmp_path)
    spec.write_text(SPEC.replace("[columns]\n", '[columns]\npatient_id = "other"\n'))
    out, rep = tmp_path / "out.csv", tmp_path / "rep.json"
    argv = ["safe-harbor", "--input", str(data), "--spec", str(spec), "--out", str(out),
            "--accept-column", "patient_id:study numbers assigned by the registry, not derived from identity"]
    refused(capsys, argv, "--accept-column needs a report file")
    assert main(argv + ["--report", str(rep)]) == 0
    report = json.loads(rep.read_text())
    reason = "study numbers assigned by the registry, not derived from identity"
    assert report["accepted_columns"] == {"patient_id": {"reason": reason, "detected": ["long_digits"]}}
    assert report["columns"]["patient_id"]["accepted"] == reason
    refused(capsys, argv[:-2] + ["--accept-column", "nope:x", "--report", str(rep)], "--accept-column names 'nope'")


def test_apply_refuses_columns_the_policy_does_not_know(tmp_path, capsys):
    data, spec = files(tmp_path)
    spec.write_text(SPEC.replace("[columns]\n", '[columns]\npatient_id = "direct"\n'))
    policy = tmp_path / "p.json"
    assert main(["safe-harbor", "--input", str(data), "--spec", str(spec), "--out", str(tmp_path / "o.csv"),
                 "--policy-out", str(policy)]) == 0
    saved = json.loads(policy.read_text())
    assert saved["columns"]["patient_id"] == "direct" and saved["safe_harbor"] is True
    batch = patients().assign(email=[f"p{i}@example.org" for i in range(60)])
    batch.to_csv(tmp_path / "b.csv", index=False)
    out = tmp_path / "b_out.csv"
    refused(capsys, ["apply", "--input", str(tmp_path / "b.csv"), "--policy", str(policy), "--out", str(out)],
            "not in the policy: 'email'")
    assert not out.exists()
    # a policy that records default = "other": the e-mail column is then detected in the release
    (tmp_path / "p2.json").write_text(json.dumps({**saved, "default": "other"}))
    argv = ["apply", "--input", str(tmp_path / "b.csv"), "--policy", str(tmp_path / "p2.json"), "--out", str(out)]
    refused(capsys, argv, "'email' (other) looks like e-mail addresses")
    rep = tmp_path / "r.json"
    assert main(argv + ["--accept-column", "email:test addresses", "--report", str(rep)]) == 0
    assert json.loads(rep.read_text())["accepted_columns"]["email"]["reason"] == "test addresses"
    # an older policy without recorded fates: only the columns its steps name are known
    old = {k: saved[k] for k in ("format", "version", "description", "steps")}
    (tmp_path / "old.json").write_text(json.dumps(old))
    patients().to_csv(tmp_path / "c.csv", index=False)
    refused(capsys, ["apply", "--input", str(tmp_path / "c.csv"), "--policy", str(tmp_path / "old.json"),
                     "--out", str(out)], "not in the policy: 'sex', 'dx'")


def test_search_apply_best_refuses_unlisted_and_detected_columns(tmp_path, capsys):
    data, spec = files(tmp_path)
    argv = ["search", "--input", str(data), "--spec", str(spec), "--method", "ola", "--k", "2",
            "--report", str(tmp_path / "r.json"), "--out", str(tmp_path / "rel.csv")]
    refused(capsys, argv, "not in the spec's [columns]: 'patient_id'")
    spec.write_text(SPEC.replace("[columns]\n", '[columns]\ndefault = "other"\n'))
    refused(capsys, argv, "'patient_id' (other) looks like long digit")
    assert not (tmp_path / "rel.csv").exists() and not (tmp_path / "r.json").exists()
    assert main(argv + ["--accept-column", "patient_id:synthetic"]) == 0
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["accepted_columns"]["patient_id"]["reason"] == "synthetic"
    assert result["best_policy"]["columns"]["patient_id"] == "other"
    spec.write_text(SPEC.replace("[columns]\n", '[columns]\ndefault = "drop"\n'))
    assert main(argv) == 0
    assert "patient_id" not in pd.read_csv(tmp_path / "rel.csv", dtype=str).columns


def test_detector_precision_and_recall_on_the_labelled_table():
    table = pd.read_csv(DATA / "identifier_columns.csv", dtype=str, keep_default_na=False)
    labels = dict(pd.read_csv(DATA / "identifier_columns_labels.csv", dtype=str).values)
    predicted = {c: (f[0].kind if (f := column_findings(table[c], c)) else "none") for c in table.columns}
    kinds = set(labels.values()) - {"none"}
    # every kind is represented; addresses, house numbers and linkage columns are measured on FEBRL and Faker's
    # locales by test_detect_measured.py
    assert kinds == set(KINDS) - {"address", "street_number", "linkage"}
    ident = [c for c in table.columns if labels[c] != "none"]
    flagged = [c for c in table.columns if predicted[c] != "none"]
    precision = sum(labels[c] != "none" for c in flagged) / len(flagged)   # flagged columns that are identifiers
    recall = sum(predicted[c] != "none" for c in ident) / len(ident)      # identifier columns flagged
    kind_right = sum(predicted[c] == labels[c] for c in ident) / len(ident)
    assert precision >= 0.9 and recall >= 0.9 and kind_right >= 0.9, (precision, recall, kind_right, {
        c: (labels[c], predicted[c]) for c in table.columns if labels[c] != predicted[c]})
    for kind in kinds:  # per kind (docs/deid.md table)
        tp = sum(labels[c] == kind and predicted[c] == kind for c in table.columns)
        assert tp / sum(predicted[c] == kind for c in table.columns) >= 0.9
        assert tp / sum(labels[c] == kind for c in table.columns) >= 0.9


def test_a_small_table_does_not_hide_a_long_digit_identifier():
    """Two rows say nothing about uniqueness, but distinct 10-digit numbers are still record numbers."""
    from deid_core.detect import column_findings
    found = column_findings(pd.Series(["1234567890", "2234567891"]), "patient_id")
    assert [f.kind for f in found] == ["long_digits"]
    assert column_findings(pd.Series(["0389", "250"]), "dx") == []           # short codes are not identifiers
