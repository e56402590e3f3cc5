"""Data utility (El Emam & Arbuckle, ch. 13; ch. 2, "The Impact of Missingness") and ``deid utility``."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from deid_core.cli import main
from deid_core.metric.utility import complete_case_loss, complete_cases, crosstab, ols, utility
from deid_core.spec import SUPPRESSED


def test_complete_case_loss_book_examples():
    """The book: 2 % missing in each of 10 variables loses 18.3 %; 10 % in each of 5 loses 41 %."""
    assert complete_case_loss(0.02, 10) == pytest.approx(0.183, abs=5e-4)
    assert complete_case_loss(0.10, 5) == pytest.approx(0.41, abs=5e-3)


def test_ols_recovers_known_coefficients_and_matches_lstsq():
    rng = np.random.default_rng(3)
    x1, x2 = rng.normal(size=500), rng.normal(size=500)
    y = 2.0 + 3.0 * x1 - 1.5 * x2 + rng.normal(scale=0.1, size=500)
    r = ols(pd.DataFrame({"y": y, "x1": x1, "x2": x2}), "y", ["x1", "x2"])
    X = np.column_stack([np.ones(500), x1, x2])
    beta = np.linalg.lstsq(X, y, rcond=None)[0]
    assert list(r["coefficients"].values()) == pytest.approx(beta.tolist(), rel=1e-9)
    assert r["coefficients"]["x1"] == pytest.approx(3.0, abs=0.02) and r["r2"] > 0.99
    resid = y - X @ beta
    se = np.sqrt(np.diag(np.linalg.inv(X.T @ X)) * (resid @ resid) / (500 - 3))
    assert list(r["std_errors"].values()) == pytest.approx(se.tolist(), rel=1e-9)


def test_crosstab_distortion_by_hand():
    before = pd.DataFrame({"a": ["x", "x", "y", "y"], "b": ["u", "v", "u", "v"]}).astype("category")
    after = pd.DataFrame({"a": ["x", "x", "y", SUPPRESSED], "b": ["u", "u", "u", "v"]}).astype("category")
    r = crosstab(before, after, "a", "b")
    # before: each cell 1/4; after: (x,u) 1/2, (y,u) 1/4, (missing,v) 1/4 -> ½(1/4 + 1/4 + 0 + 1/4 + 1/4) = 1/2
    assert r["tvd"] == pytest.approx(0.5)
    assert r["cramers_v_before"] == pytest.approx(0.0) and r["cells_after"] == 3
    assert crosstab(before, before, "a", "b")["tvd"] == 0.0


def test_complete_cases_counts_suppressed_cells():
    before = pd.DataFrame({"a": ["1", "2", "3", "4"], "b": ["x", None, "y", "z"]}).astype("category")
    after = pd.DataFrame({"a": ["1", SUPPRESSED, "3", "4"], "b": ["x", None, SUPPRESSED, "z"]}).astype("category")
    r = complete_cases(before, after, ["a", "b"])
    assert r["lost_before"] == 0.25 and r["lost_after"] == 0.5
    assert r["p_after"] == pytest.approx(3 / 8) and r["expected_lost_after"] == pytest.approx(1 - (5 / 8) ** 2)


def test_generalized_and_subsampled_release():
    rng = np.random.default_rng(5)
    age = rng.integers(20, 80, 400)
    bmi = 18 + 0.1 * age + rng.normal(scale=2, size=400)
    orig = pd.DataFrame({"age": age.astype(str), "bmi": bmi.round(1).astype(str),
                         "sex": rng.choice(["F", "M"], 400), "dx": rng.choice(["a", "b", "c"], 400)})
    rel = orig.copy()
    rel["age"] = [f"{a // 10 * 10}-{a // 10 * 10 + 9}" for a in age]
    rel = rel.iloc[::2].reset_index(drop=True)  # a subsample: rows need not match
    u = utility(orig.astype("category"), rel.astype("category"), ["age", "bmi"], ["sex", "dx"], None, ["bmi~age"])
    assert u["records"] == {"original": 400, "released": 200}
    assert u["moments"]["columns"]["age"]["mean_before"] == pytest.approx(age.mean())
    reg = u["regressions"][0]
    assert reg["before"]["coefficients"]["age"] == pytest.approx(0.1, abs=0.02)
    assert reg["after_within_before_ci95"]["age"] is True  # the same inference from interval midpoints
    assert [t["columns"] for t in u["crosstabs"]] == [["sex", "dx"]]
    assert u["covariance"]["before"]["age"]["bmi"] == pytest.approx(np.cov(age, bmi.round(1))[0, 1], rel=1e-6)


def test_deid_utility_cli_json_html_and_bad_input(tmp_path, capsys):
    orig = pd.DataFrame({"name": ["Ann", "Bob", "Cy", "Di", "Ed", "Flo"], "age": ["31", "45", "52", "38", "61", "47"],
                         "los": ["3", "5", "8", "2", "9", "6"], "sex": ["F", "M", "M", "F", "M", "F"],
                         "dx": ["a", "b", "b", "a", "c", "a"]})
    rel = orig.drop(columns="name").assign(age=["30-39", "40-49", "50-59", "30-39", SUPPRESSED, "40-49"])
    spec = tmp_path / "s.toml"
    spec.write_text('[columns]\nname = "direct"\nage = "quasi"\nsex = "quasi"\nlos = "sensitive"\ndx = "sensitive"\n')
    o, r = tmp_path / "o.csv", tmp_path / "r.csv"
    orig.to_csv(o, index=False)
    rel.to_csv(r, index=False)
    out, page = tmp_path / "u.json", tmp_path / "u.html"
    assert main(["utility", "--original", str(o), "--released", str(r), "--spec", str(spec),
                 "--regress", "los~age", "--report", str(out), "--html", str(page)]) == 0
    res = json.loads(out.read_text())
    assert res["numeric"] == ["age", "los"] and res["categorical"] == ["sex", "dx"]  # name (direct) left out
    assert res["complete_cases"]["lost_after"] == pytest.approx(1 / 6)
    assert res["moments"]["columns"]["age"]["mean_after"] == pytest.approx(np.mean([34.5, 44.5, 54.5, 34.5, 44.5]))
    html = page.read_text()
    assert "Regression los ~ age" in html and "Complete case analysis" in html and "Cramér" in html
    capsys.readouterr()
    for extra, words in ((["--regress", "los~height"], "'height' is not one of the numeric columns"),
                         (["--regress", "los"], "expected y~x1+x2"),
                         (["--crosstab", "sex:name"], "unknown column 'name'")):
        assert main(["utility", "--original", str(o), "--released", str(r), "--spec", str(spec),
                     "--report", str(tmp_path / "bad.json"), *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err, err
    assert not (tmp_path / "bad.json").exists()


def test_codes_with_leading_zeros_are_not_numeric():
    """A ZIP code or an ICD-9 code reads as a number but its mean means nothing: categorical by default."""
    from deid_core.metric.utility import numeric_columns
    frame = pd.DataFrame({"zip": ["02139", "10001", "94110"], "dx": ["0389", "4019", "25000"],
                          "age": ["34", "50", "07.5"], "los": ["3", "-2", "10"]})
    assert numeric_columns(frame, list(frame.columns)) == ["los"]
