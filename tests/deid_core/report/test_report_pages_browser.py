"""Every kind of ``--html`` page, made by the real ``deid`` commands (in-process) on small data and opened in
headless chromium in one browser: the verdict first, no JSON fragment, raw key or over-long number, every plot
decoded (tests/pagehelpers.py), and each page true to what happened — the m-of-n result on the assess page,
the original next to the release in its plots, persons labelled as persons, codes suppressed by ``deid
codes`` shown as suppressed, the truncation and codes steps in the policy, a failing release never offered
as re-appliable, a threshold outside the recommended range flagged, a LOLA search in words."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deid_core.cli import main
from deid_testdata import (CLAIMS_LONGITUDINAL_TOML, CLAIMS_SPEC_TOML, LIU2016_DATA, LIU2016_POPULATION, TEST_DATA,
                           claims)
from pagehelpers import CHROMIUM, check_pages

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is absent (apt-get install -y chromium)")

PEOPLE_SPEC = """[columns]
name = "direct"
sex = "quasi"
age = "quasi"
zip = "quasi"
dx = "sensitive"
[hierarchies]
age = { builder = "interval", widths = [5, 10, 20] }
zip = { builder = "prefix" }
[release]
type = "non-public"
threshold = THRESHOLD
"""

CLAIMS_SPEC = CLAIMS_SPEC_TOML + '[release]\ntype = "non-public"\nthreshold = 0.2\n' + CLAIMS_LONGITUDINAL_TOML

#: Column names of the test data and words of the commands that are written with underscores on purpose.
DATA_WORDS = ["provider_zip"]


def people(n: int = 400, seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"name": [f"N{i:04d}" for i in range(n)], "sex": rng.choice(["F", "M"], n),
                         "age": (20 + rng.integers(0, 60, n)).astype(str),
                         "zip": np.char.add("021", rng.integers(10, 40, n).astype(str)),
                         "dx": rng.choice(["C50", "C61", "I21", "E11"], n)})


def deid(*args) -> None:
    assert main([str(a) for a in args]) == 0, args


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> tuple[dict[str, Path], Path]:
    d = tmp_path_factory.mktemp("pages")
    people().to_csv(d / "people.csv", index=False)
    (d / "people.toml").write_text(PEOPLE_SPEC.replace("THRESHOLD", "0.1"))
    (d / "lenient.toml").write_text(PEOPLE_SPEC.replace("THRESHOLD", "0.2"))
    claims().to_csv(d / "claims.csv", index=False)
    (d / "claims.toml").write_text(CLAIMS_SPEC)
    p: dict[str, Path] = {}
    # assess: the m-of-n adversary and a policy saved for deid apply
    p["assess"] = d / "assess.html"
    deid("assess", "--input", d / "people.csv", "--spec", d / "people.toml", "--levels", "age=2,zip=1", "--suppress",
         "--known", "2", "--report", d / "assess.json", "--html", p["assess"], "--policy-out", d / "policy.json",
         "--out", d / "release.csv")
    p["assess_failing"] = d / "assess_failing.html"
    deid("assess", "--input", d / "people.csv", "--spec", d / "lenient.toml", "--report", d / "failing.json",
         "--html", p["assess_failing"])
    # longitudinal: truncate, then codes removing every dx code, then assess with both reports
    p["truncate"], p["codes"], p["assess_longitudinal"] = d / "truncate.html", d / "codes.html", d / "long.html"
    deid("truncate", "--input", d / "claims.csv", "--spec", d / "claims.toml", "--width", "1", "--k", "30",
         "--out", d / "truncated.csv", "--report", d / "truncate.json", "--html", p["truncate"])
    deid("codes", "--input", d / "truncated.csv", "--spec", d / "claims.toml", "--suppress", "--code", "dx", "--k",
         "1000", "--out", d / "coded.csv", "--report", d / "codes.json", "--html", p["codes"], "--force")
    deid("assess", "--input", d / "coded.csv", "--spec", d / "claims.toml", "--levels", "yob=1,dx=1", "--attack",
         "--iterations", "200", "--prior-report", d / "truncate.json", "--prior-report", d / "codes.json",
         "--report", d / "long.json", "--html", p["assess_longitudinal"])
    # every search method
    searches = {"ola": ["--input", d / "people.csv", "--spec", d / "people.toml", "--k", "5"],
                "bps": ["--input", d / "people.csv", "--spec", d / "people.toml", "--iterations", "10"],
                "directed": ["--input", d / "people.csv", "--spec", d / "people.toml", "--iterations", "10"],
                "lola": ["--input", d / "claims.csv", "--spec", d / "claims.toml", "--max-suppression", "0.05",
                         "--iterations", "200"]}
    LIU2016_DATA.to_csv(d / "liu.csv", index=False)
    LIU2016_POPULATION.to_csv(d / "liu_population.csv", index=False)
    (d / "liu.toml").write_text('[columns]\nzip = "quasi"\ndob = "quasi"\n[hierarchies]\nzip = { builder = "prefix" }\n'
                                'dob = { builder = "dates" }\n')
    searches["partition"] = ["--input", d / "liu.csv", "--spec", d / "liu.toml", "--population",
                             d / "liu_population.csv", "--k", "2"]
    rng = np.random.default_rng(1)
    pd.DataFrame({"sbp": rng.integers(100, 180, 80), "age": rng.integers(20, 90, 80)}).to_csv(d / "num.csv", index=False)
    (d / "num.toml").write_text('[columns]\nsbp = "quasi"\nage = "quasi"\n')
    searches["boxes"] = ["--input", d / "num.csv", "--spec", d / "num.toml", "--k", "4"]
    for method, args in searches.items():
        p[f"search_{method}"] = d / f"search_{method}.html"
        deid("search", "--method", method, *args, "--report", d / f"search_{method}.json",
             "--html", p[f"search_{method}"])
    # the other commands
    p["apply"] = d / "apply.html"
    deid("apply", "--input", d / "people.csv", "--policy", d / "policy.json", "--out", d / "applied.csv", "--spec",
         d / "people.toml", "--html", p["apply"])
    p["subsample"] = d / "subsample.html"
    deid("subsample", "--input", d / "people.csv", "--spec", d / "people.toml", "--find-fraction", "--draws", "5",
         "--out", d / "sample.csv", "--report", d / "sample.json", "--html", p["subsample"])
    p["geo"] = d / "geo.html"
    deid("geo", "--areas", TEST_DATA / "geo" / "areas.csv", "--input", TEST_DATA / "geo" / "claims.csv", "--column",
         "zip", "--person", "person", "--k", "20000", "--out", d / "geo.csv", "--report", d / "geo.json",
         "--html", p["geo"])
    p["utility"] = d / "utility.html"
    deid("utility", "--original", d / "people.csv", "--released", d / "release.csv", "--spec", d / "people.toml",
         "--crosstab", "age:zip", "--crosstab", "sex:dx", "--report", d / "utility.json", "--html", p["utility"])
    return p, d


def test_every_page_kind_opens_with_its_verdict_and_nothing_raw(pages):
    paths, d = pages
    plots = {"assess": 2, "assess_failing": 2, "assess_longitudinal": 2, "apply": 2, "truncate": 1, "codes": 1,
             "subsample": 1, "geo": 1, **{k: 1 for k in paths if k.startswith("search_")}}
    texts = check_pages(paths, d / "screenshots", DATA_WORDS, plots)
    assert len(texts) == 15

    assess = texts["assess"]
    assert "An adversary who knows 2 of the 3 quasi-identifiers" in assess          # --known on the page
    assert "Against an adversary who knows any 2 of the 3 quasi-identifiers" in assess
    assert "original (outline) and released (blue)" in assess                         # the original is plotted
    assert "The threshold 0.1 is inside the recommended range 0.05–0.1" in assess

    failing = texts["assess_failing"]
    assert "do NOT meet the threshold 0.2" in failing and "can be released the same way" not in failing
    assert "Flag: the threshold 0.2 is above the recommended range 0.05–0.1 for a non-public release" in failing

    long = texts["assess_longitudinal"]
    assert "Persons by the size of their equivalence class" in long and "Risk per person" in long
    assert "Records by the size" not in long
    dx = next(line for line in long.splitlines() if line.startswith("dx\t"))
    assert "codes suppressed" in dx and "nothing left to change" in dx and "3-character" not in dx
    assert "Long tail truncated (deid truncate)" in long and "Codes in dx suppressed (deid codes)" in long
    assert "deid truncate --input NEXT.csv" in long and "deid codes --input STEP1.csv" in long
    assert "deid apply --input STEP2.csv" in long

    lola = texts["search_lola"]
    assert "Longitudinal OLA" in lola and "persons that may be suppressed" in lola
    assert "re-applies the generalization only" in lola
    for method in ("ola", "bps", "directed", "partition", "boxes"):
        assert "The search" in texts[f"search_{method}"], method

    codes = texts["codes"]
    assert "No code of dx meets k = 1000: every code was suppressed" in codes and "100 %" in codes
    assert "Flag:" in codes

    utility = json.loads((d / "utility.json").read_text())
    age_zip = next(t for t in utility["crosstabs"] if t["columns"] == ["age", "zip"])
    assert age_zip["tvd"] == 1.0 and age_zip["tvd_released_categories"] < 0.5   # generalized: 1 says nothing
    assert "distance on the released categories" in texts["utility"]


def test_the_page_checks_catch_what_they_look_for():
    from pagehelpers import page_problems

    assert page_problems("risk 0.047619047619047616") and page_problems('{"nodes_evaluated": 31}')
    assert page_problems("best_policy_note") and not page_problems("risk 0.04762, 42,560 and 1.235e-05 ok")
    assert not page_problems("column provider_zip", ["provider_zip"]) and not page_problems("adult_hierarchy_age.csv")


def test_a_page_prints_to_pdf_for_the_file(pages, capsys):
    paths, d = pages
    assert main(["pdf", "--html", str(paths["assess_longitudinal"]), "--out", str(d / "long.pdf")]) == 0
    data = (d / "long.pdf").read_bytes()
    assert data.startswith(b"%PDF") and len(re.findall(rb"/Type\s*/Page[^s]", data)) >= 2   # several A4 pages
    err = capsys.readouterr()
    assert "printing" in err.err and "long.pdf" in err.out.strip().splitlines()[-1]
    assert main(["pdf", "--html", str(d / "absent.html"), "--out", str(d / "absent.pdf")]) == 2
    assert not (d / "absent.pdf").exists()


def test_apply_page_needs_the_spec_it_is_judged_against(pages, capsys):
    _, d = pages
    base = ["apply", "--input", str(d / "people.csv"), "--policy", str(d / "policy.json"), "--out", str(d / "x.csv")]
    assert main(base + ["--html", str(d / "x.html")]) == 2 and "--html needs --spec" in capsys.readouterr().err
    assert main(base + ["--spec", str(d / "people.toml")]) == 2 and "--spec applies to --html" in capsys.readouterr().err
    assert not (d / "x.csv").exists() and not (d / "x.html").exists()
