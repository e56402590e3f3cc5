"""Interval (box) k-anonymity (Xiang et al. 2014 §5) and interval statistics (mean exact; variance exact under no-nesting)."""
from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from deid_core.algorithm.boxes import anonymize, interval_statistics, nested, released, variance_max, variance_min
from deid_core.cli import main
from deid_core.risk import ec_sizes_of


@pytest.mark.parametrize("k,dims", [(2, 1), (3, 2), (5, 3)])
def test_boxes_hold_k_records_and_contain_their_points(k, dims):
    rng = np.random.default_rng(k)
    x = np.round(rng.normal(size=(150, dims)) * 10 + 100, 1)
    b = anonymize(x, k)
    assert b.sizes.min() >= k and b.sizes.sum() == len(x)
    assert ((b.lo[b.box] <= x) & (x <= b.hi[b.box])).all()
    out = released(pd.DataFrame(x, columns=[f"v{i}" for i in range(dims)]), [f"v{i}" for i in range(dims)], b)
    assert ec_sizes_of(out, list(out.columns)).min() >= k  # from the released strings


def test_kd_tree_and_numpy_neighbours_agree_without_ties():
    from deid_core.algorithm.boxes import knn
    rng = np.random.default_rng(2)
    x = rng.normal(size=(300, 3))
    a = np.array([1.0, 2.0, 0.5])
    i1, r1 = knn(x, a, 4, tree=True)
    i2, r2 = knn(x, a, 4, tree=False)
    assert (i1 == i2).all() and np.allclose(r1, r2) and (i1[:, 0] == np.arange(300)).all()


def test_one_dimension_box_is_the_span_of_the_k_nearest():
    x = np.array([[1.0], [2.0], [10.0], [11.0], [12.0], [30.0]])
    b = anonymize(x, 2)
    spans = {(float(b.lo[i, 0]), float(b.hi[i, 0])) for i in range(len(b.lo))}
    assert (1.0, 2.0) in spans and b.sizes.min() >= 2
    assert {tuple(s) for s in spans} >= {(1.0, 2.0)}


def brute(lo, hi, steps=5):
    vs = [np.var(c) for c in itertools.product(*[np.linspace(a, b, steps) for a, b in zip(lo, hi)])]
    return min(vs), max(vs)


def test_variance_range_exact_without_nesting_bound_with_nesting():
    rng = np.random.default_rng(0)
    for trial in range(60):
        n = int(rng.integers(2, 5))
        lo = np.round(rng.random(n) * 10, 1)
        hi = lo + (1.5 if trial % 2 == 0 else np.round(rng.random(n) * 3, 1))
        vmin_b, vmax_b = brute(lo, hi)
        vmax, exact = variance_max(lo, hi)
        assert exact == (not nested(lo, hi))
        assert variance_min(lo, hi) <= vmin_b + 1e-9
        assert vmax >= vmax_b - 1e-9
        if exact:
            assert vmax == pytest.approx(vmax_b, abs=1e-9)
    assert variance_min(np.array([0.0, 4.0]), np.array([2.0, 6.0])) == pytest.approx(1.0)  # x = 2, 4


def test_statistics_contain_the_truth():
    rng = np.random.default_rng(5)
    x = rng.normal(139.3, 15, size=(60, 1))  # Xiang et al. 2014 Fig. 2: systolic blood pressure, 60 values
    for k in (3, 4, 9):
        b = anonymize(x, k)
        st = interval_statistics(b.lo[b.box, 0], b.hi[b.box, 0], x[:, 0])
        assert st["mean"][0] <= st["true_mean"] <= st["mean"][1]
        assert st["variance"][0] - 1e-9 <= st["true_variance"] <= st["variance"][1] + 1e-9


def test_cli_boxes(tmp_path, capsys):
    rng = np.random.default_rng(1)
    pd.DataFrame({"sbp": rng.integers(100, 180, 80), "age": rng.integers(20, 90, 80)}).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "s.toml").write_text('[columns]\nsbp = "quasi"\nage = "quasi"\n')
    out = tmp_path / "r.json"
    assert main(["search", "--input", str(tmp_path / "d.csv"), "--spec", str(tmp_path / "s.toml"), "--method", "boxes",
                 "--k", "4", "--report", str(out), "--out", str(tmp_path / "rel.csv")]) == 0, capsys.readouterr().err
    pol = json.loads(out.read_text())["policies"][0]
    assert pol["min_box_size"] >= 4 and pol["risk"] <= 0.25 and set(pol["statistics"]) == {"sbp", "age"}
    (tmp_path / "bad.csv").write_text("sbp,age\n120,x\n")
    assert main(["search", "--input", str(tmp_path / "bad.csv"), "--spec", str(tmp_path / "s.toml"), "--method", "boxes",
                 "--k", "1", "--report", str(tmp_path / "x.json")]) == 2 and not (tmp_path / "x.json").exists()


def test_boxes_without_scipy(monkeypatch):
    """scipy is not a declared dependency: without it the numpy path gives the same boxes on tie-free data."""
    import sys
    rng = np.random.default_rng(9)
    x = rng.normal(size=(120, 2))
    with_tree = anonymize(x, 3)
    monkeypatch.setitem(sys.modules, "scipy.spatial", None)
    without = anonymize(x, 3)
    assert (with_tree.box == without.box).all() and without.sizes.min() >= 3
