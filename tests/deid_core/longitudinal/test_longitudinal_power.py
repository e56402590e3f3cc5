"""Adversary power (El Emam & Arbuckle, ch. 6; El Emam et al. 2012)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from deid_core.longitudinal.power import adversary_power, power_from_ratio


def test_wtc_vector():
    # WTC registry: mean 103.8 events, SD 52.7 -> "max" 209.2; p_max 15; median n = 98 -> p = 8
    scale = 103.8 + 2 * 52.7
    assert scale == pytest.approx(209.2)
    assert int(power_from_ratio(98, scale, 15)) == 8
    # the real max (260) is above the scale: capped at p_max
    assert int(power_from_ratio(260, scale, 15)) == 15
    assert int(power_from_ratio(260, scale, 15, cap=False)) == 19


def test_wtc_vector_from_events():
    # events whose mean + 2 sample SD is exactly 209.2 would need a crafted table; use variability none and an
    # explicit scale: the formula as applied to WTC patient events
    df = pd.DataFrame({"pid": np.repeat(["a", "b"], [98, 2]), "x": "1"})
    p = adversary_power(df, person="pid", level2=["x"], p_max=15, variability="none", scale=209.2)
    assert p["x"].to_dict() == {"a": 8, "b": 2}


def test_simpson_variability_and_max():
    # a: 4 events all different (v = 1, n/v = 4); b: 4 events {x,x,y,y} (v = 1 - 4/12 = 2/3, n/v = 6);
    # c: 3 events one value (v = 0 -> p_max); d: one event (v = 1, n/v = 1)
    df = pd.DataFrame({"pid": list("aaaabbbbcccd"), "dx": list("wxyzxxyyqqqr")})
    p = adversary_power(df, person="pid", level2=["dx"], p_max=5)
    # scale = max finite n/v = 6: a -> ceil(1 + 4*4/6) = 4, b -> 5, c -> 5, d -> ceil(1 + 4/6) = 2
    assert p["dx"].to_dict() == {"a": 4, "b": 5, "c": 5, "d": 2}
    floor = adversary_power(df, person="pid", level2=["dx"], p_max=5, zero_variability="floor")
    # c: v = 2/3, n/v = 4.5; scale still 6 -> ceil(1 + 4*4.5/6) = 4
    assert floor["dx"].to_dict() == {"a": 4, "b": 5, "c": 4, "d": 2}


def test_mean_plus_two_sd_scale():
    df = pd.DataFrame({"pid": np.repeat(list("abcd"), [1, 2, 3, 10]), "x": "1"})
    p = adversary_power(df, person="pid", level2=["x"], p_max=15, variability="none", scale="mean+2sd")
    n = np.array([1, 2, 3, 10.0])
    scale = n.mean() + 2 * n.std(ddof=1)
    assert p["x"].tolist() == [min(15, int(np.ceil(1 + 14 * k / scale))) for k in n]


@pytest.mark.parametrize("kw,msg", [({"p_max": 0}, "below 1"), ({"scale": "median"}, "scale"),
                                    ({"variability": "gini"}, "variability"), ({"level2": ["nope"]}, "level-2")])
def test_bad_arguments(kw, msg):
    df = pd.DataFrame({"pid": ["a"], "x": ["1"]})
    args = {"person": "pid", "level2": ["x"], **kw}
    with pytest.raises(ValueError, match=msg):
        adversary_power(df, **args)


def test_simpson_new_value_can_lower_power():
    # documented counterexample: evening out a person's values lowers n/v
    base = pd.DataFrame({"pid": list("aaaaazz"), "x": list("abbbbqr")})
    more = pd.concat([base, pd.DataFrame({"pid": ["a"], "x": ["a"]})])
    p0 = adversary_power(base, person="pid", level2=["x"], p_max=50, scale=100.0)
    p1 = adversary_power(more, person="pid", level2=["x"], p_max=50, scale=100.0)
    assert p1.loc["a", "x"] < p0.loc["a", "x"]  # 1 + 49*12.5/100 -> 8; 1 + 49*11.25/100 -> 7


claims = st.lists(st.tuples(st.sampled_from("abcdef"), st.sampled_from("uvwxyz")), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(rows=claims, pick=st.integers(0, 10_000), scale=st.sampled_from(["max", "mean+2sd"]))
def test_adding_a_claim_never_lowers_power_without_variability(rows, pick, scale):
    df = pd.DataFrame(rows, columns=["pid", "x"])
    target = df["pid"].iloc[pick % len(df)]
    more = pd.concat([df, pd.DataFrame({"pid": [target], "x": ["new"]})], ignore_index=True)
    kw = dict(person="pid", level2=["x"], p_max=5, variability="none")
    if scale == "max":
        assert adversary_power(more, scale="max", **kw).loc[target, "x"] >= \
            adversary_power(df, scale="max", **kw).loc[target, "x"]
    else:  # a fixed outlier-damped scale (the WTC form): monotone in n
        assert adversary_power(more, scale=7.5, **kw).loc[target, "x"] >= \
            adversary_power(df, scale=7.5, **kw).loc[target, "x"]


@settings(max_examples=150, deadline=None)
@given(rows=claims, pick=st.integers(0, 10_000))
def test_repeating_the_most_frequent_value_never_lowers_simpson_power(rows, pick):
    df = pd.DataFrame(rows, columns=["pid", "x"])
    target = df["pid"].iloc[pick % len(df)]
    mode = df.loc[df.pid == target, "x"].value_counts().index[0]
    more = pd.concat([df, pd.DataFrame({"pid": [target], "x": [mode]})], ignore_index=True)
    kw = dict(person="pid", level2=["x"], p_max=5)
    assert adversary_power(more, **kw).loc[target, "x"] >= adversary_power(df, **kw).loc[target, "x"]
