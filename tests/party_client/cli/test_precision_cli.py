"""``--precision``: conflicts with ``--match-threshold`` and out-of-range targets are refused in one line
(exit 2) before anything runs; the dry-run states the threshold it gives and the curve; and in a real run
the querier derives from the holder's announced table size the same threshold the holder derived from its
own table, before any comparison, so the session's keys agree and the links are the plaintext model's."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pandas as pd
from linkhelpers import make_party, relayed, run_party
from test_preset_cli import HOLDER_MAP, QUERIER_MAP, tables

from party_client.matching.preset_roles import parse_map
from party_client.matching.presets import person_rules


def join_args(tmp_path, *extra: str) -> list[str]:
    return ["join", "--dir", str(tmp_path / "no-party"), "--keyholder", "127.0.0.1:1", "--insecure", "--holder", "h",
            "--input", str(tmp_path / "q.csv"), "--out", str(tmp_path / "o.csv"), "--preset", "person",
            "--map", QUERIER_MAP, *extra]


def test_precision_and_a_threshold_conflict_and_a_target_outside_zero_and_one_is_refused(tmp_path):
    tables(tmp_path)
    for extra, says in ((("--precision", "0.99", "--match-threshold", "12"), "not allowed with argument"),
                        (("--match-threshold", "10", "--precision"), "not allowed with argument"),
                        (("--precision", "1.5"), "--precision must lie strictly between 0 and 1 (got 1.5)"),
                        (("--precision", "0", "--dry-run"), "--precision must lie strictly between 0 and 1")):
        result = run_party(*join_args(tmp_path, *extra), check=False)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1 and says in lines[0], result.stderr
        assert "Traceback" not in result.stderr and not (tmp_path / "o.csv").exists()


def test_the_dry_run_states_the_target_the_threshold_and_the_curve(tmp_path):
    querier, _ = tables(tmp_path)
    dry = run_party(*join_args(tmp_path, "--precision", "--dry-run"))
    rules = person_rules(parse_map(QUERIER_MAP), precision=0.99)
    threshold = rules.at_holder_rows(rules.announced_rows(querier)).model.threshold
    assert (f"threshold {threshold:g} bits, the lowest weight at which the model's estimated precision reaches "
            "the target 0.99") in dry.stdout
    assert "est. precision" in dry.stdout and "<- the threshold" in dry.stdout and "optimistic" in dry.stdout
    fixed = run_party(*join_args(tmp_path, "--dry-run"))
    assert "threshold 12 bits, as given" in fixed.stdout


def test_both_parties_derive_the_same_threshold_before_any_comparison(keyholder, tmp_path):
    querier, _ = tables(tmp_path)
    holder = pd.read_csv(tmp_path / "h.csv", dtype=str, keep_default_na=False)
    (qdir, _), (hdir, hname) = make_party(keyholder, tmp_path), make_party(keyholder, tmp_path)
    flags = keyholder.flags()
    hold = ("hold", "--dir", str(hdir), *flags, "--input", str(tmp_path / "h.csv"), "--preset", "person",
            "--map", HOLDER_MAP, "--precision", "--release-columns", "rec_id", "--once", "--quiet")
    assert run_party(*hold).stdout.startswith("served 0")        # announces its table size, nothing to serve yet
    report = tmp_path / "report.json"
    process = subprocess.Popen([sys.executable, "-m", "party_client.cli", "join", "--dir", str(qdir), *flags,
                                "--holder", hname, "--input", str(tmp_path / "q.csv"), "--preset", "person",
                                "--map", QUERIER_MAP, "--precision", "--scheme", "ristretto", "--quiet",
                                "--timeout", "180", "--out", str(tmp_path / "o.csv"), "--report", str(report),
                                "--html", str(tmp_path / "page.html")], stderr=subprocess.PIPE, text=True)
    relayed(qdir)
    for _ in range(200):
        if run_party(*hold).stdout.startswith("served 1"):     # refused, had the keys' digests differed
            break
        time.sleep(0.3)
    assert process.wait(timeout=180) == 0, process.stderr.read()
    facts = json.loads(report.read_text())
    holder_rules = person_rules(parse_map(HOLDER_MAP), precision=0.99)
    holder_side = holder_rules.at_holder_rows(holder_rules.announced_rows(holder))
    assert facts["precision_target"] == 0.99 and facts["holder_rows"] == holder_rules.announced_rows(holder)
    assert facts["threshold"] == holder_side.model.threshold != 12.0
    querier_side = person_rules(parse_map(QUERIER_MAP), precision=0.99).at_holder_rows(facts["holder_rows"])
    candidates = querier_side.plaintext_matches(querier, holder, querier_side.candidate_pairs(
        querier, holder, holder_side, left_out=[p["left_out_records"] for p in facts["passes"]]), holder_side)
    out = pd.read_csv(tmp_path / "o.csv", dtype=str, keep_default_na=False)
    matched = out[out["matched"] == "True"]
    assert set(zip(matched["rec_id"], matched["rec_id_holder"])) == set(
        zip(querier["rec_id"][candidates.entry], holder["rec_id"][candidates.row]))
    page = (tmp_path / "page.html").read_text()
    assert f"Threshold {facts['threshold']:g} bits: the lowest weight" in page and "reaches the target 0.99" in page
