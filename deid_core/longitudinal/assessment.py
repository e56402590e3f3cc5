"""A longitudinal release, assessed: the simulated attack with per-person adversary power, its JSON
summary, and the check for repeated person ids in a table assessed row by row (docs/longitudinal.md,
"From the command line"; El Emam et al. 2012, "Empirical Evaluation"; El Emam & Arbuckle, ch. 4, 6).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import DeidInputError
from ..spec import LongitudinalSpec
from .attack import AttackResult, simulate_attack
from .power import adversary_power

#: How per-person power is set: Simpson variability (the book's formula), no variability (v = 1,
#: the WTC example), or every person knowing ``p_max`` values of each level-2 QI.
POWER_MODELS = ("simpson", "none", "fixed")
#: Prefix of the background columns holding original values (never a name a table could use by accident).
_ORIGINAL = "\x00original "


@dataclass(frozen=True)
class LongitudinalAttack:
    """An attack result and the adversary power it used."""

    result: AttackResult
    power: dict  # :func:`power_distribution`
    seed: int

    def summary(self) -> dict:
        """The ``deid attack`` JSON: the attack summary plus the power distribution and the seed."""
        return {**self.result.summary(), "seed": self.seed, "adversary_power": self.power}

    def assess_entry(self) -> dict:
        """The ``longitudinal`` object of ``deid assess --attack``."""
        r = self.result
        return {"adversary_power": self.power,
                "attack": {"average": r.average_risk, "high_risk_persons": r.high_risk_proportion,
                           "ci95": list(r.ci95), "threshold": r.threshold, "persons": r.persons,
                           "iterations": r.iterations, "exact": r.exact, "seed": self.seed}}


def power_distribution(power: pd.DataFrame | None, p_max: int, model: str, scale: str, persons: int) -> dict:
    """Persons per power value for each level-2 QI, with mean and median (``power`` None: fixed at p_max)."""
    out: dict = {"p_max": p_max, "model": model, "scale": scale if model != "fixed" else None, "by_qi": {}}
    if power is None:
        return {**out, "fixed": True, "persons": persons}
    for h in power.columns:
        v = power[h].to_numpy()
        vals, counts = np.unique(v, return_counts=True)
        out["by_qi"][h] = {"distribution": {str(int(a)): int(c) for a, c in zip(vals, counts)},
                           "mean": float(v.mean()), "median": float(np.median(v))}
    return {**out, "fixed": False, "persons": int(len(power))}


def _with_originals(background: pd.DataFrame, original: pd.DataFrame, person: str,
                    level2: Sequence[str]) -> tuple[pd.DataFrame, dict[str, str]]:
    """The background table with each level-2 QI's original values alongside (rows paired by position)."""
    if len(original) != len(background):
        raise DeidInputError(f"the original table has {len(original):,} rows and the generalized one "
                             f"{len(background):,}: they must hold the same rows in the same order")
    a = original[person].astype(str).to_numpy()
    b = background[person].astype(str).to_numpy()
    differ = np.flatnonzero(a != b)
    if differ.size:
        i = int(differ[0])
        raise DeidInputError(f"row {i + 1}: person {a[i]!r} in the original table but {b[i]!r} in the "
                             "generalized one: they must hold the same rows in the same order")
    missing = [h for h in level2 if h not in original.columns]
    if missing:
        raise DeidInputError(f"level-2 column {missing[0]!r} is not in the original table")
    bg = background.copy()
    for h in level2:
        bg[_ORIGINAL + h] = original[h].to_numpy()
    return bg, {h: _ORIGINAL + h for h in level2}


def attack_release(released: pd.DataFrame, lg: LongitudinalSpec, *, threshold: float,
                   background: pd.DataFrame | None = None, original: pd.DataFrame | None = None,
                   p_max: int | None = None, model: str = "simpson", scale: str = "max",
                   iterations: int = 10_000, seed: int = 0, exact: bool = False) -> LongitudinalAttack:
    """Simulated attack on ``released`` (El Emam et al. 2012, Attack 1).

    ``background``: the adversary's source (all claims, generalized as the release; default the release).
    ``original``: the background's rows with their original values; the adversary then knows original
    values and matches on their released form. Power per person and level-2 QI comes from the most
    detailed table given (``original``, else ``background``, else the release).
    """
    p_max = lg.adversary_power if p_max is None else p_max
    if p_max < 1:
        raise DeidInputError(f"adversary power {p_max} is below 1")
    if iterations < 1:
        raise DeidInputError(f"iterations {iterations} is below 1")
    if model not in POWER_MODELS:
        raise DeidInputError(f"power model {model!r} is not one of {', '.join(POWER_MODELS)}")
    if not lg.level2:
        raise DeidInputError("[longitudinal] level2 is empty: the attack needs at least one level-2 QI")
    bg = released if background is None else background
    draw: dict[str, str] = {}
    if original is not None:
        bg, draw = _with_originals(bg, original, lg.person, lg.level2)
    source = original if original is not None else bg
    if model == "fixed":
        power: int | pd.DataFrame = p_max
        table = None
    else:
        table = adversary_power(source, person=lg.person, level2=list(lg.level2), p_max=p_max,
                                variability=model, scale=scale)
        power = table
    result = simulate_attack(released, person=lg.person, level1=list(lg.level1), level2=list(lg.level2),
                             power=power, background=None if bg is released else bg, background_values=draw,
                             iterations=iterations, seed=seed, threshold=threshold, exact=exact)
    persons = int(source[lg.person].nunique())
    return LongitudinalAttack(result, power_distribution(table, p_max, model, scale, persons), seed)


def repeated_ids(df: pd.DataFrame, columns: Sequence[str]) -> dict[str, int]:
    """For each of ``columns`` with a non-empty value on more than one row: the number of such rows.

    The rule behind the ``deid assess`` warning: a direct identifier that repeats suggests one person
    with several rows, whose risk a row count understates (El Emam & Arbuckle, ch. 4).
    """
    out = {}
    for c in columns:
        s = df[c].dropna()
        n = int(s.duplicated(keep=False).sum())
        if n:
            out[c] = n
    return out
