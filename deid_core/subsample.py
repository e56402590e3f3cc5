"""Subsampling: release a random sample, measured against the full data as its population (El Emam &
Arbuckle, *Anonymizing Health Data*, ch. 7, "The Subsampling Limbo"; docs/subsampling.md).

* Units: rows, or with ``[longitudinal]`` persons (all the rows of a sampled person go together, so the
  sampling fraction is a fraction of patients, as the book asks).
* Size: ``⌊N × fraction⌋`` units, computed exactly on the decimal fraction (at least 1): the book's
  919,710 × 0.30 = 275,913 and × 0.35 = 321,898 (321,898.5 is printed rounded down).
* Risk: the journalist risk of the sample with the full data as the population — each sampled unit's
  population class size F is its class size in the full data (in distinct persons with
  ``[longitudinal]``) — through the same :func:`~deid_core.risk.summary.summarize` as ``deid assess``.
  Since F is at least the unit's class size in the full data, the sample's journalist max never exceeds
  the full data's prosecutor max. The book's *average* risk of a sample is the one that falls with the
  fraction (its Figure 7-1): the adversary's target is anyone of the population, who may not be in the
  sample ("you don't know if A. Herring is included"), and is re-identified only if sampled and then
  picked among the f matching records: ``(1/N) Σ_{sampled units} 1/f`` = the sample's prosecutor average
  × n/N (``journalist.average_over_population``). The record average of 1/F (``journalist.average``,
  the target known to be in the sample) does not fall with the fraction: its expectation is the full
  data's prosecutor average at every fraction.
* Draws: draw ``i`` of seed ``s`` takes the first units of one permutation (``numpy`` PCG64 seeded with
  ``[s, i]``), so the samples of one draw are nested across fractions (common random numbers: a larger
  fraction adds units, never swaps them).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import numpy as np
import pandas as pd

from .errors import DeidInputError, ParameterError
from .longitudinal.person_classes import person_classes
from .longitudinal.persons import person_level1, persons_per_class
from .spec import Spec
from .risk.attack import meets
from .risk.equivalence_classes import Classes
from .risk.encoding import encode_table
from .risk.summary import summarize

#: Below this many units the statistical power of classical tests drops (El Emam & Arbuckle, ch. 7, "How
#: Low Can We Go?", after Cohen 1988).
MIN_POWERED_UNITS = 3000
MEASURES = ("max", "average")


def sample_size(n: int, fraction: float) -> int:
    """``⌊n × fraction⌋`` on the exact decimal value of ``fraction`` (0.3 is 3/10, not the binary float
    0.29999…), at least 1; ``fraction`` must lie in (0, 1]."""
    if not (isinstance(fraction, (int, float)) and 0 < fraction <= 1):
        raise DeidInputError(f"fraction {fraction} is outside (0, 1]")
    return max(1, math.floor(n * Fraction(repr(float(fraction)))))


@dataclass
class Subsampler:
    """The full data prepared once: its classes (the population of every sample) and its units."""

    spec: Spec
    n_rows: int
    pcode: np.ndarray | None       # row -> person index ([longitudinal]), None: a unit is a row
    n_units: int
    keep: np.ndarray               # rows with some QI value (fully missing rows take no part)
    ec_of_row: np.ndarray          # full-data class per row (-1 when fully missing)
    F_row: np.ndarray              # full-data class size per row, in units
    full: dict                     # the full data's summary (prosecutor risk of the population itself)

    @property
    def units(self) -> str:
        return "records" if self.pcode is None else "persons"

    def permutation(self, seed: int, draw: int) -> np.ndarray:
        """The units in the order draw ``draw`` of ``seed`` samples them."""
        return np.random.default_rng([seed, draw]).permutation(self.n_units)

    def rows(self, units: np.ndarray) -> np.ndarray:
        """Sorted row indices of the sampled ``units``."""
        if self.pcode is None:
            return np.sort(units)
        chosen = np.zeros(self.n_units, dtype=bool)
        chosen[units] = True
        return np.flatnonzero(chosen[self.pcode])

    def draw(self, fraction: float, seed: int, draw: int = 0) -> np.ndarray:
        """Row indices of draw ``draw`` at ``fraction``: the first ⌊N × fraction⌋ units of its permutation."""
        return self.rows(self.permutation(seed, draw)[:sample_size(self.n_units, fraction)])

    def measure(self, rows: np.ndarray) -> dict:
        """Every measure of the sample ``rows`` (:func:`~deid_core.risk.summary.summarize`): prosecutor within
        the sample, journalist and the other population measures with the full data as the population."""
        cl = self.classes(rows)
        out = summarize(cl, self.spec.release.strict_cut, self.spec.gamma)
        kept = int(cl.keep.sum())
        out["journalist"]["average_over_population"] = out["prosecutor"]["average"] * kept / self.n_units
        if self.pcode is not None:
            out = {"persons": int(len(cl.keep)), "events": int(len(rows)), **out}
        return out

    def classes(self, rows: np.ndarray) -> Classes:
        """Classes of the sample: f counted in the sample, F = the full data's class size (per unit)."""
        keep = self.keep[rows]
        kept = rows[keep]
        ec, _ = pd.factorize(self.ec_of_row[kept])
        sizes = np.bincount(ec).astype(np.int64) if len(ec) else np.zeros(0, np.int64)
        cl = Classes(keep=keep, ec=ec.astype(np.int64), ec_sizes=sizes, f=sizes[ec], F=self.F_row[kept])
        if self.pcode is None:
            return cl
        pc, uniq = pd.factorize(self.pcode[rows])
        return person_classes(cl, pc.astype(np.int64), len(uniq))


def prepare(df: pd.DataFrame, spec: Spec) -> Subsampler:
    """Encode the full data once (its classes on the QIs as released, no generalization)."""
    if spec.missing == "match_any":
        raise DeidInputError('deid subsample counts classes on own-class values: [risk] missing = "match_any" '
                             "is not supported")
    lg = spec.longitudinal
    pcode = person_level1(df, lg.person, lg.level1)[1] if lg is not None else None
    table = encode_table(df, spec)
    cl = table.classes()
    ec_of_row = np.full(len(df), -1, dtype=np.int64)
    ec_of_row[cl.keep] = cl.ec
    F = np.zeros(len(df))
    if pcode is None:
        F[cl.keep] = cl.f
        n_units, full_cl = len(df), cl
    else:
        F[cl.keep] = persons_per_class(cl.ec, pcode[cl.keep])
        n_units = int(pcode.max()) + 1
        full_cl = person_classes(cl, pcode, n_units)
    full = summarize(full_cl, spec.release.strict_cut, spec.gamma)
    return Subsampler(spec, len(df), pcode, n_units, cl.keep, ec_of_row, F, full)


def measure_key(measure: str) -> str:
    """Where the checked risk sits in a sample's summary: ``max`` (max 1/F) or ``average`` (the book's
    average risk of a sample, ``average_over_population``; module docstring)."""
    return "journalist.max" if measure == "max" else "journalist.average_over_population"


def risk_of(summary: dict, measure: str) -> float:
    """The journalist risk a threshold is checked on (:func:`measure_key`)."""
    return float(summary["journalist"][measure_key(measure).split(".")[1]])


def find_fraction(sub: Subsampler, threshold: float, measure: str = "average", draws: int = 100, seed: int = 0,
                  step: float = 0.01, quantile: float = 0.95,
                  progress: Callable[[int], None] | None = None) -> dict:
    """The largest fraction on the grid ``step, 2·step, …, 1`` whose ``quantile`` of the journalist risk
    over ``draws`` draws meets ``threshold`` (:func:`~deid_core.risk.attack.meets`), by bisection on the
    grid (the risk grows with the fraction; each draw's samples are nested). Every probed fraction is
    reported with the distribution over the draws: mean, median, 5th/95th percentile, and the share of
    draws that meet the threshold. ``progress(draws done)`` is called after every draw."""
    if measure not in MEASURES:
        raise DeidInputError(f"measure must be one of {', '.join(MEASURES)}, got {measure!r}")
    if not 0 < threshold <= 1:
        raise DeidInputError(f"threshold {threshold} is outside (0, 1]")
    if draws < 1:
        raise ParameterError(f"{{draws}} must be at least 1, got {draws}", "draws")
    if not 0 < step <= 1:
        raise ParameterError(f"{{step}} {step} is outside (0, 1]", "step")
    if not 0 <= quantile <= 1:
        raise ParameterError(f"{{quantile}} {quantile} is outside [0, 1]", "quantile")
    grid = [float(Fraction(repr(step)) * i) for i in range(1, int(Fraction(1) / Fraction(repr(step))) + 1)]
    if grid[-1] < 1:
        grid.append(1.0)
    perms = None if draws * sub.n_units > 10_000_000 else [sub.permutation(seed, i) for i in range(draws)]
    probes: dict[int, dict] = {}
    done = 0

    def probe(j: int) -> dict:
        nonlocal done
        if j not in probes:
            m = sample_size(sub.n_units, grid[j])
            risks = np.empty(draws)
            for i in range(draws):
                perm = perms[i] if perms is not None else sub.permutation(seed, i)
                risks[i] = risk_of(sub.measure(sub.rows(perm[:m])), measure)
                done += 1
                if progress:
                    progress(done)
            ok = meets(risks, threshold)  # elementwise on an array
            stat = float(np.quantile(risks, quantile))
            probes[j] = {"fraction": grid[j], "units": m, "mean": float(risks.mean()), "median": float(np.median(risks)),
                         "p5": float(np.quantile(risks, 0.05)), "p95": float(np.quantile(risks, 0.95)),
                         "quantile_risk": stat, "share_meeting": float(ok.mean()), "meets": bool(meets(stat, threshold))}
        return probes[j]

    lo, hi = -1, len(grid) - 1  # invariant: grid[lo] meets (lo = -1: none known), grid[hi + 1:] fail
    if probe(hi)["meets"]:
        lo = hi
    elif probe(0)["meets"]:
        lo, hi = 0, hi - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if probe(mid)["meets"]:
                lo = mid
            else:
                hi = mid - 1
    best = probes[lo] if lo >= 0 else None
    return {"threshold": threshold, "measure": measure_key(measure), "draws": draws, "seed": seed, "step": step,
            "quantile": quantile, "fraction": best["fraction"] if best else None, "units": best["units"] if best else 0,
            "at_fraction": best, "probes": [probes[j] for j in sorted(probes)], "grid_points": len(grid),
            "probes_evaluated": len(probes)}

