"""Adversary power per person and level-2 QI (El Emam & Arbuckle, ch. 6, "Adversary Power"; El Emam et al. 2012).

For person i and level-2 QI h::

    p_ih = ceil(1 + (p_max - 1) * (n_i / v_ih) / scale_h),   capped at p_max

with n_i the person's number of events and v_ih the variability of their
values of h: "a probability derived from the Simpson index" ranging from 0
(the value never changes) to 1 (it always changes) — here the probability that
two of the person's events drawn without replacement differ,
``v = 1 - sum_j c_j (c_j - 1) / (n (n - 1))`` (1 when all values differ, 0 when
all are equal). ``scale_h`` is ``max_i(n_i / v_ih)`` (ch. 6, "Power in
Practice") or, to damp outliers, the mean plus two standard deviations (the
WTC registry example, ch. 6: ``ceil(1 + 14 n / 209.2)``, n = 98 -> 8).

Choices the sources leave open (defaults first):

* one event (n = 1): v is undefined (0/0); it is taken as 1 (nothing repeats).
* v = 0 (several events, one value): ``zero_variability="pmax"`` gives p_max
  (the ratio is infinite; such persons are left out of the scale);
  ``"floor"`` uses v = 2/n, the smallest positive variability n events can have.
* ``scale="max"`` (the formula as printed); ``"mean+2sd"`` (the WTC choice,
  sample standard deviation) or a number. With ``"mean+2sd"`` persons above
  the scale would exceed p_max; ``cap=True`` (default) caps them.
* ``variability="none"`` drops v (v = 1, as the WTC example does).

Power grows with the number of events only at fixed variability: under the
Simpson variability an added claim that evens out a person's values can lower
n/v (a,b,b,b,b: n/v = 12.5; adding a: 11.25). Adding a claim that repeats the
person's most frequent value never lowers their power.
"""
from __future__ import annotations

from typing import Literal, Sequence

import numpy as np
import pandas as pd

from ..errors import DeidInputError
from .integer_codes import factorize, require_columns
from .persons import person_codes


def power_from_ratio(ratio: np.ndarray | float, scale: float, p_max: int, cap: bool = True) -> np.ndarray:
    """``ceil(1 + (p_max - 1) * ratio / scale)`` (capped at ``p_max``); infinite ratios give ``p_max``."""
    if p_max < 1:
        raise DeidInputError(f"adversary power {p_max} is below 1")
    if not scale > 0:
        raise DeidInputError(f"adversary power scale {scale} is not positive")
    r = np.asarray(ratio, dtype=float)
    with np.errstate(invalid="ignore"):
        p = np.ceil(1.0 + (p_max - 1) * r / scale)
    p = np.where(np.isinf(r), p_max, p)
    if cap:
        p = np.minimum(p, p_max)
    return p.astype(np.int64)


def simpson_variability(pcode: np.ndarray, values: np.ndarray, n_persons: int) -> tuple[np.ndarray, np.ndarray]:
    """Per person: number of events n and ``v = 1 - sum c(c-1) / (n(n-1))`` (1 when n = 1)."""
    vcode, uniq = factorize(values)
    pair = pcode * max(len(uniq), 1) + vcode
    keys, counts = np.unique(pair, return_counts=True)
    owner = keys // max(len(uniq), 1)
    same = np.bincount(owner, weights=counts * (counts - 1.0), minlength=n_persons)
    n = np.bincount(pcode, minlength=n_persons).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        v = np.where(n > 1, 1.0 - same / (n * (n - 1.0)), 1.0)
    return n, np.clip(v, 0.0, 1.0)


def _scale(ratio: np.ndarray, scale: str | float) -> float:
    finite = ratio[np.isfinite(ratio)]
    if not isinstance(scale, str):
        return float(scale)
    if finite.size == 0:
        return 1.0
    if scale == "max":
        return float(finite.max())
    if scale == "mean+2sd":
        sd = float(finite.std(ddof=1)) if finite.size > 1 else 0.0
        return float(finite.mean() + 2.0 * sd)
    raise DeidInputError(f"adversary power scale {scale!r} is not 'max', 'mean+2sd' or a number")


def adversary_power(df: pd.DataFrame, *, person: str, level2: Sequence[str], p_max: int = 5,
                    variability: Literal["simpson", "none"] = "simpson", scale: str | float = "max",
                    zero_variability: Literal["pmax", "floor"] = "pmax", cap: bool = True) -> pd.DataFrame:
    """Power per person (index, in order of first appearance) and level-2 QI (columns), ints in 1..p_max."""
    if p_max < 1:
        raise DeidInputError(f"adversary power {p_max} is below 1")
    if variability not in ("simpson", "none"):
        raise DeidInputError(f"variability {variability!r} is not 'simpson' or 'none'")
    if zero_variability not in ("pmax", "floor"):
        raise DeidInputError(f"zero_variability {zero_variability!r} is not 'pmax' or 'floor'")
    pcode, pids = person_codes(df, person)
    require_columns(df, level2, "level-2")
    out = {}
    for h in level2:
        n, v = simpson_variability(pcode, df[h].to_numpy(), len(pids))
        if variability == "none":
            v = np.ones_like(n)
        if zero_variability == "floor":
            v = np.where(v > 0, v, 2.0 / n)
        with np.errstate(divide="ignore"):
            ratio = np.where(v > 0, n / np.where(v > 0, v, 1.0), np.inf)
        out[h] = power_from_ratio(ratio, _scale(ratio, scale), p_max, cap=cap)
    return pd.DataFrame(out, index=pd.Index(pids, name=person))
