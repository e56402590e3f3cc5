"""A longitudinal release, assessed: the simulated attack with per-person adversary power, its JSON
summary, the attack and the complete-knowledge classes of a release beside its source (what ``deid assess
--attack`` and ``--complete-knowledge`` report), and the check for repeated person ids in a table assessed
row by row (docs/longitudinal.md, "From the command line"; El Emam et al. 2012, "Empirical Evaluation"; El
Emam & Arbuckle, ch. 4, 6).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import DeidInputError
from ..metric import is_marker
from ..spec import LongitudinalSpec, Spec
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


@dataclass(frozen=True)
class AttackOptions:
    """How the simulated attack on a release runs (:func:`attack_release`'s parameters): ``p_max`` values
    per level-2 QI at the most (default ``[longitudinal] adversary_power``), the power ``model`` and its
    ``scale``, ``iterations`` attacks from ``seed``, or every combination of every person (``exact``)."""

    p_max: int | None = None
    model: str = "simpson"
    scale: str = "max"
    iterations: int = 10_000
    seed: int = 0
    exact: bool = False


def _with_persons(source: pd.DataFrame, output: pd.DataFrame, spec: Spec) -> tuple[pd.DataFrame, LongitudinalSpec]:
    """The release with the person column put back from ``source`` (same rows, same order)."""
    lg = spec.longitudinal
    if lg is None:
        raise DeidInputError("a longitudinal assessment needs a [longitudinal] section in the spec")
    released = output.copy()
    released.insert(0, lg.person, source[lg.person].to_numpy())
    return released, lg


def release_attack(source: pd.DataFrame, output: pd.DataFrame, spec: Spec, options: AttackOptions) -> dict:
    """The simulated attack on the release ``output`` of ``source``, knowledge drawn from the source's values:
    the ``longitudinal`` object of ``deid assess --attack`` (:meth:`LongitudinalAttack.assess_entry`)."""
    released, lg = _with_persons(source, output, spec)
    qis = [q for q in spec.quasi if q in released.columns]
    gone = np.ones(len(released), dtype=bool) if qis else np.zeros(len(released), dtype=bool)
    for q in qis:
        gone &= is_marker(released[q]) | released[q].isna().to_numpy()
    if gone.all():
        raise DeidInputError("every record is suppressed: nothing is released to attack")
    # suppressed rows carry no values: left out of the release and of the adversary's source (as in deid attack)
    released, original = released.loc[~gone], source.loc[~gone]
    att = attack_release(released, lg, threshold=spec.release.threshold, original=original, p_max=options.p_max,
                         model=options.model, scale=options.scale, iterations=options.iterations, seed=options.seed,
                         exact=options.exact)
    return att.assess_entry()


def release_complete_knowledge(source: pd.DataFrame, output: pd.DataFrame, spec: Spec, variant: str) -> dict:
    """Classes of persons flattened to all their events in the release ``output`` of ``source`` (El Emam &
    Arbuckle, ch. 4), ``variant`` ``approximate`` or ``exact`` (which values share an event)."""
    from .persons import complete_knowledge

    released, lg = _with_persons(source, output, spec)
    level2 = [c for c in lg.level2 if c in released.columns]
    ck = complete_knowledge(released, person=lg.person, level1=list(lg.level1), level2=level2,
                            exact=variant == "exact", threshold=spec.release.threshold)
    return {"variant": variant, **ck.summary()}


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
