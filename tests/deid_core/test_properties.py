"""Property tests: generalization never raises a risk measure (Benitez, Loukides & Malin 2010 Thm 2.1, Liu et al. 2016 Prop. 3);
class sizes agree with an independent groupby; suppression is counted in missingness."""
from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings, strategies as st

from deid_core.metric import missingness, non_uniform_entropy
from deid_core.risk import encode_table, match_any_sizes, summarize
from deid_core.spec import parse_spec
from deid_core.transform import Policy

SPEC = {
    "columns": {"age": "quasi", "zip": "quasi", "sex": "quasi"},
    "hierarchies": {"age": {"builder": "interval", "widths": [5, 10, 20], "top_code": 90},
                    "zip": {"builder": "prefix", "levels": 5}},
}
HEIGHTS = {"age": 4, "zip": 5, "sex": 1}
ZIPS = ["02139", "02141", "02210", "10001", "10003", "94110"]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

row = st.tuples(st.integers(0, 99), st.sampled_from(ZIPS), st.sampled_from(["F", "M"]))


@st.composite
def population_and_sample(draw):
    """A census-like population (distinct QI tuples with counts) and a sample drawn from it (f_j ≤ F_j)."""
    cells = draw(st.lists(row, min_size=1, max_size=25, unique=True))
    counts = draw(st.lists(st.integers(1, 6), min_size=len(cells), max_size=len(cells)))
    taken = [draw(st.integers(1, c)) for c in counts]
    pop = pd.DataFrame([(str(a), z, s, c) for (a, z, s), c in zip(cells, counts)], columns=["age", "zip", "sex", "count"])
    data = pd.DataFrame([(str(a), z, s) for (a, z, s), t in zip(cells, taken) for _ in range(t)], columns=["age", "zip", "sex"])
    return data, pop


@st.composite
def level_pair(draw):
    hi = {q: draw(st.integers(0, h)) for q, h in HEIGHTS.items()}
    lo = {q: draw(st.integers(0, hi[q])) for q in HEIGHTS}
    return lo, hi


def _measures(s: dict) -> dict[str, float]:
    out = {f"prosecutor.{k}": v for k, v in s["prosecutor"].items()}
    for key in ("journalist", "instance_disclosure"):
        out.update({f"{key}.{k}": v for k, v in s.get(key, {}).items()})
    if "marketer" in s:
        out["marketer"] = s["marketer"]
        out["population_risk.sum"] = s["population_risk"]["sum"]
    return out


@SETTINGS
@given(population_and_sample(), level_pair())
def test_generalizing_never_raises_risk(ds, levels):
    data, pop = ds
    lo, hi = levels
    table = encode_table(data.astype("category"), parse_spec(SPEC), pop)
    s_lo, s_hi = summarize(table.classes(lo)), summarize(table.classes(hi))
    assert s_lo["population_inconsistent_records"] == 0
    m_lo, m_hi = _measures(s_lo), _measures(s_hi)
    for name, v in m_hi.items():
        assert v <= m_lo[name] + 1e-12, (name, lo, hi)
    assert s_hi["k_min"] >= s_lo["k_min"]
    assert s_hi["equivalence_classes"] <= s_lo["equivalence_classes"]
    # Liu et al. 2016, Prop. 1: r_i ≥ q_i
    assert s_hi["instance_disclosure"]["R"] >= s_hi["instance_disclosure"]["Q"] - 1e-12


def _with_missing(data: pd.DataFrame, holes: list[tuple[int, int]]) -> pd.DataFrame:
    d = data.astype(object).copy()
    for r, c in holes:
        d.iat[r % len(d), c % 3] = np.nan
    return d


@SETTINGS
@given(population_and_sample(), level_pair(), st.lists(st.tuples(st.integers(0, 200), st.integers(0, 2)), max_size=8),
       st.sampled_from(["own_class", "match_any"]))
def test_missing_values_monotone_and_sizes_independent(ds, levels, holes, missing):
    data, _ = ds
    d = _with_missing(data, holes)
    spec = parse_spec({**SPEC, "risk": {"missing": missing}})
    table = encode_table(d.astype("category"), spec)
    lo, hi = levels
    c_lo, c_hi = table.classes(lo), table.classes(hi)
    s_lo, s_hi = summarize(c_lo), summarize(c_hi)
    for k in ("max", "average", "strict_average"):
        assert s_hi["prosecutor"][k] <= s_lo["prosecutor"][k] + 1e-12
    assert s_lo["records"] == len(d)
    kept = d[c_lo.keep]
    if missing == "own_class":  # independent check: pandas groupby with dropna=False
        codes = {q: table.hierarchies[q].level_map(lo[q])[table.codes[q]][c_lo.keep] for q in SPEC["columns"]}
        ref = pd.DataFrame(codes).groupby(list(codes), dropna=False)["age"].transform("size").to_numpy()
        assert np.array_equal(c_lo.f, ref)
    else:  # brute-force compatibility counts
        vals = kept.to_numpy(dtype=object)
        isna = pd.isna(vals)
        brute = [sum(all(isna[i, j] or isna[o, j] or vals[i, j] == vals[o, j] for j in range(3)) for o in range(len(vals)))
                 for i in range(len(vals))]
        assert c_lo.f.tolist() == brute if lo == {q: 0 for q in HEIGHTS} else True
    assert (~c_lo.keep).sum() == d.isna().all(axis=1).sum()  # fully missing records reported, not dropped silently


@SETTINGS
@given(population_and_sample(), st.integers(2, 6), st.lists(st.tuples(st.integers(0, 200), st.integers(0, 2)), max_size=6))
def test_suppression_is_counted_in_missingness(ds, k, holes):
    data, _ = ds
    d = _with_missing(data, holes)
    qis = ["age", "zip", "sex"]
    out, ctx = Policy([{"op": "suppress_records", "columns": qis, "k": k}]).apply(d.astype("category"))
    sizes = d.groupby(qis, dropna=False)["age"].transform("size").to_numpy()
    suppressed = sizes < k
    assert ctx["suppressed_records"] == int(suppressed.sum())
    natural = d[qis].isna().to_numpy()
    m = missingness(out, qis)
    assert m["records_missing"] == int((natural.any(axis=1) | suppressed).sum())
    assert m["cells_missing"] == int((natural | suppressed[:, None]).sum())
    assert m["record"] >= missingness(d, qis)["record"]
    nue = non_uniform_entropy(d, out, qis)
    assert nue["bits"] >= 0
    if not suppressed.any():
        assert nue["bits"] == 0


def test_match_any_sizes_small_example():
    """A missing value matches anything: (a,-), (a,x), (b,x) -> sizes 2, 2, 1."""
    codes = [np.array([0, 0, 1]), np.array([-1, 0, 0])]
    assert match_any_sizes(codes, [2, 1]).tolist() == [2, 2, 1]
