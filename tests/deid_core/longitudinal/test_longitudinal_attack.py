"""Simulated attack on longitudinal data (El Emam et al. 2012, Attack 1)."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from deid_core.longitudinal.attack import simulate_attack


def _toy() -> pd.DataFrame:
    rows = [("A", "F", "x"), ("A", "F", "y"), ("B", "F", "x"), ("C", "F", "y"), ("C", "F", "z"), ("D", "M", "x")]
    return pd.DataFrame(rows, columns=["pid", "sex", "dx"])


KW = dict(person="pid", level1=["sex"], level2=["dx"])


def test_exact_hand_vector():
    # power 1: A knows x (A,B match) or y (A,C) -> 1/2; B knows x -> 1/2; C knows y -> 1/2 or z -> 1;
    # D (alone among men) -> 1. Average (0.5 + 0.5 + 0.75 + 1) / 4 = 0.6875
    r = simulate_attack(_toy(), power=1, exact=True, threshold=0.6, **KW)
    assert r.per_target["risk"].to_dict() == {"A": 0.5, "B": 0.5, "C": 0.75, "D": 1.0}
    assert r.average_risk == 0.6875
    assert r.per_target["high_risk_probability"].to_dict() == {"A": 0.0, "B": 0.0, "C": 0.5, "D": 1.0}
    assert r.high_risk_proportion == 0.375
    assert r.persons == 4 and r.exact
    # power 2: A knows {x, y} -> only A; C knows {y, z} -> only C
    r2 = simulate_attack(_toy(), power=2, exact=True, **KW)
    assert r2.per_target["risk"].to_dict() == {"A": 1.0, "B": 0.5, "C": 1.0, "D": 1.0}


def test_sampling_fraction_and_truncated_target():
    released = _toy()[lambda d: ~((d.pid == "C") & (d.dx == "z"))]  # C's z claim truncated
    r = simulate_attack(released, background=_toy(), power=1, exact=True, sampling_fraction=0.5, **KW)
    # C knowing z matches nobody in the release (risk 0); knowing y matches A and C -> 0.5 * 1/2
    assert r.per_target.loc["C", "risk"] == pytest.approx(0.125)
    assert r.per_target.loc["D", "risk"] == 0.5


def _brute(df: pd.DataFrame, power: int, level2: list[str]) -> float:
    """Reference: per person, every combination of `power` distinct values per QI, matched with Python sets."""
    persons = {pid: g for pid, g in df.groupby("pid", sort=False)}
    sets = {pid: {h: set(g[h]) for h in level2} for pid, g in persons.items()}
    l1 = {pid: tuple(g[["sex"]].iloc[0]) for pid, g in persons.items()}
    total = 0.0
    for pid in persons:
        combos = [list(itertools.combinations(sorted(sets[pid][h]), min(power, len(sets[pid][h]))))
                  for h in level2]
        risks = []
        for combo in itertools.product(*combos):
            m = sum(1 for q in persons if l1[q] == l1[pid]
                    and all(set(c) <= sets[q][h] for c, h in zip(combo, level2)))
            risks.append(1.0 / m)
        total += float(np.mean(risks))
    return total / len(persons)


def _random_claims(seed: int, persons: int = 30, values: int = 6) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    pid = np.repeat([f"p{i}" for i in range(persons)], rng.integers(1, 6, persons))
    sex = {p: rng.choice(["F", "M"]) for p in np.unique(pid)}
    return pd.DataFrame({"pid": pid, "sex": [sex[p] for p in pid],
                         "dx": rng.integers(0, values, len(pid)).astype(str),
                         "los": rng.integers(0, 3, len(pid)).astype(str)})


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_exact_matches_brute_force(seed):
    df = _random_claims(seed)
    for power in (1, 2):
        got = simulate_attack(df, person="pid", level1=["sex"], level2=["dx", "los"], power=power, exact=True)
        assert got.average_risk == pytest.approx(_brute(df, power, ["dx", "los"]))


def test_monte_carlo_agrees_with_exact():
    df = _random_claims(7, persons=60)
    kw = dict(person="pid", level1=["sex"], level2=["dx", "los"], power=2, threshold=0.3)
    exact = simulate_attack(df, exact=True, **kw)
    mc = simulate_attack(df, iterations=20_000, seed=11, **kw)
    lo, hi = mc.ci95
    assert lo <= exact.average_risk <= hi
    assert hi - lo < 0.02
    assert mc.high_risk_proportion == pytest.approx(exact.high_risk_proportion, abs=0.02)


def test_reproducible_and_seeded():
    df = _random_claims(4)
    kw = dict(person="pid", level1=["sex"], level2=["dx"], power=2, iterations=500)
    a = simulate_attack(df, seed=5, **kw)
    b = simulate_attack(df, seed=5, **kw)
    c = simulate_attack(df, seed=6, **kw)
    assert a.summary() == b.summary()
    assert a.per_target["pid"].tolist() != c.per_target["pid"].tolist()
    assert set(a.summary()) >= {"average_risk", "high_risk_proportion", "ci95", "threshold", "persons"}


def test_power_table_per_person():
    power = pd.DataFrame({"dx": [2, 1, 1, 1]}, index=pd.Index(list("ABCD"), name="pid"))
    r = simulate_attack(_toy(), power=power, exact=True, **KW)
    assert r.per_target.loc["A", "risk"] == 1.0  # A with power 2 knows {x, y}


@pytest.mark.parametrize("kw,msg", [({"iterations": 0}, "iterations 0"), ({"power": 0}, "below 1"),
                                    ({"level2": ["cpt"]}, "level-2 column 'cpt'"),
                                    ({"person": "member"}, "person column 'member'"),
                                    ({"power": pd.DataFrame({"dx": [1]}, index=["A"])}, "missing for person"),
                                    ({"sampling_fraction": 0.0}, "sampling fraction")])
def test_bad_input(kw, msg):
    args = {**KW, "power": 1, **kw}
    with pytest.raises(ValueError, match=msg):
        simulate_attack(_toy(), **args)


def test_level1_must_be_fixed():
    df = _toy()
    df.loc[1, "sex"] = "M"
    with pytest.raises(ValueError, match="person 'A' has different level-1 values"):
        simulate_attack(df, power=1, **KW)


def test_exact_refuses_too_many_combinations():
    df = pd.DataFrame({"pid": "a", "sex": "F", "dx": [str(i) for i in range(30)]})
    with pytest.raises(ValueError, match="combinations"):
        simulate_attack(df, power=10, exact=True, max_combinations=1000, **KW)


tables = st.lists(st.tuples(st.integers(0, 7), st.integers(0, 1), st.integers(0, 9), st.integers(0, 9)),
                  min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(rows=tables, seed=st.integers(0, 1000), power=st.integers(1, 3), width=st.sampled_from([2, 3, 5]))
def test_generalizing_never_raises_attack_risk(rows, seed, power, width):
    """Merging values (coarser level-2 and level-1 values) can only enlarge every matching set."""
    df = pd.DataFrame(rows, columns=["pid", "sex", "dx", "los"]).astype(str)
    df["sex"] = df["pid"].map(lambda p: "FM"[int(p) % 2 if int(p) < 5 else 0])
    df["yob"] = df["pid"].map(lambda p: str(1950 + int(p) * 3))
    gen = df.copy()
    gen["dx"] = (df["dx"].astype(int) // width).astype(str)
    gen["los"] = (df["los"].astype(int) // width).astype(str)
    gen["yob"] = (df["yob"].astype(int) // 10).astype(str)
    gen["dx_orig"], gen["los_orig"] = df["dx"], df["los"]
    kw = dict(person="pid", level1=["sex", "yob"], level2=["dx", "los"], power=power, iterations=200, seed=seed)
    before = simulate_attack(df, **kw)
    after = simulate_attack(gen, background_values={"dx": "dx_orig", "los": "los_orig"}, **kw)
    assert before.per_target["pid"].tolist() == after.per_target["pid"].tolist()
    assert (after.per_target["risk"].to_numpy() <= before.per_target["risk"].to_numpy() + 1e-12).all()
    assert after.average_risk <= before.average_risk + 1e-12


def test_sorted_keys_membership_agrees_with_bitset(monkeypatch):
    import deid_core.longitudinal.attack as attack
    df = _random_claims(9, persons=50)
    kw = dict(person="pid", level1=["sex"], level2=["dx", "los"], power=2, exact=True)
    with_bits = simulate_attack(df, **kw)
    monkeypatch.setattr(attack, "_BITSET_BITS", 0)
    assert simulate_attack(df, **kw).per_target.equals(with_bits.per_target)
