"""Rules are capped (fields, terms) before any super-linear work: a huge rule is refused in well
under a second with one line, never left to a quadratic minimizer (docs/protocol.md, "Fuzzy,
multi-field matching")."""
from __future__ import annotations

import itertools
import time

import pandas as pd
import pytest

from linkhelpers import run_party
from party_client.errors import PartyError
from party_client.matching.term_rules import MAX_RULE_TERMS
from party_client.matching.rules_file import load_rules


def _document(fields: int, match: str) -> dict:
    return {"field": [{"name": f"f{i}", "column": f"c{i}", "encoder": "exact"} for i in range(fields)],
            "rule": {"match": match}}


def _refused_quickly(document: dict, words: str) -> None:
    started = time.perf_counter()
    with pytest.raises(PartyError, match=words) as refusal:
        load_rules(document)
    assert time.perf_counter() - started < 1.0
    assert "\n" not in str(refusal.value)


def test_a_twenty_thousand_term_rule_is_refused_in_under_a_second():
    terms = [" and ".join(f"f{i}" for i in combo) for combo in itertools.combinations(range(50), 3)]
    assert len(terms) >= 19_600
    _refused_quickly(_document(50, " or ".join(f"({t})" for t in terms)), "names fields 58800 times")
    few = " or ".join(f"({t})" for t in terms[:1200])             # few references, too many terms
    _refused_quickly(_document(50, few), f"more than {MAX_RULE_TERMS}")


def test_twenty_thousand_fields_are_refused_before_the_rule_is_read():
    _refused_quickly(_document(20_000, " or ".join(f"f{i}" for i in range(20_000))), r"at most \d+ \[\[field\]\]")


def test_a_product_that_explodes_is_refused_before_it_is_formed():
    factors = " and ".join(f"(f{2 * i} or f{2 * i + 1})" for i in range(20))      # 2^20 terms
    _refused_quickly(_document(40, factors), f"more than {MAX_RULE_TERMS}")


def test_repeated_terms_are_handled_not_refused():
    started = time.perf_counter()
    rules = load_rules(_document(3, " or ".join(["(f0 and f1)", "f2", "(f0 and f1 and f2)"] * 600)))
    assert time.perf_counter() - started < 1.0
    assert sorted(rules.term_name(t) for t in rules.terms) == ["f0+f1", "f2"]


def test_the_cli_refuses_a_huge_rules_file_with_one_line(tmp_path):
    fields = "".join(f'[[field]]\nname = "f{i}"\ncolumn = "c{i}"\nencoder = "exact"\n' for i in range(50))
    terms = " or ".join("(" + " and ".join(f"f{i}" for i in combo) + ")"
                        for combo in itertools.combinations(range(50), 3))
    (tmp_path / "rules.toml").write_text(fields + f'[rule]\nmatch = "{terms}"\n')
    pd.DataFrame({f"c{i}": ["1"] for i in range(50)}).to_csv(tmp_path / "q.csv", index=False)
    run_party("init", "--dir", str(tmp_path / "q"), "--name", "q")
    result = run_party("join", "--dir", str(tmp_path / "q"), "--keyholder", "127.0.0.1:9", "--insecure",
                       "--holder", "h", "--input", str(tmp_path / "q.csv"), "--rules", str(tmp_path / "rules.toml"),
                       "--out", str(tmp_path / "out.csv"), check=False, timeout=60)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().count("\n") == 0 and "names fields 58800 times" in result.stderr
    assert not (tmp_path / "out.csv").exists()
