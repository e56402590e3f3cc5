"""A match threshold from a precision target: the lowest weight whose estimated precision reaches it.

Fellegi & Sunter, "A theory for record linkage", JASA 64 (1969): with fields independent given the match
status, a pair's weight has one exact distribution among matches (under m) and one among non-matches
(under u), sums over the fields' levels (missing left out).  At a threshold t the model expects recall
R(t) = P(weight >= t | match) and false-match rate F(t) = P(weight >= t | non-match), hence precision
prior R / (prior R + (1 - prior) F) for a match prior per pair (splink's documentation, "The
Fellegi-Sunter model": the posterior match probability is the prior odds times the Bayes factor).

The threshold must be fixed before anything is compared (the key holder forwards a pair only when its
weight reaches it, docs/protocol.md, "Comparison levels"), and both parties must derive the same one: the
prior uses only what both hold before a session, the holder's table size as it announces it (its keyed
rows, rounded down to a public step of sqrt(2), docs/protocol.md, "Lookup") and an assumed overlap:
``ASSUMED_OVERLAP`` of the querier's records have a match among the holder's rows, each pair of a querier
record with one of the holder's rows equally likely, so prior = overlap / holder rows (a querier table
larger than the holder's has a smaller prior than this; docs/linking.md, "A precision target").
"""
from __future__ import annotations

import math
from bisect import bisect_left
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from party_client.errors import ParameterError, PartyError
from party_client.matching.fellegi_sunter import ELSE_LEVEL, SCALE, LevelModel

#: The share of the querier's records assumed to have a match among the holder's rows (chosen before any
#: measurement: half, between a small registry found in a large one and two censuses of one population).
ASSUMED_OVERLAP = 0.5


@dataclass(frozen=True)
class CurvePoint:
    """The model's estimate at one threshold (bits): precision, recall, false-match rate per pair."""

    threshold: float
    precision: float
    recall: float
    false_match_rate: float


def weight_distribution(model: LevelModel, probabilities: dict[str, dict[str, float]]) -> dict[int, float]:
    """P(weight = w) in thousandths of a bit under m (or u), fields independent."""
    scaled, otherwise, _ = model.scaled()
    total: dict[int, float] = {0: 1.0}
    for index, f in enumerate(model.fields):
        weights = {level.name: scaled[index][i] for i, level in enumerate(f.levels)}
        weights[ELSE_LEVEL] = otherwise[index]
        step: dict[int, float] = defaultdict(float)
        for w0, p0 in total.items():
            for name, p in probabilities[f.name].items():
                step[w0 + weights[name]] += p0 * p
        total = dict(step)
    return total


def match_prior(holder_rows: int, overlap: float = ASSUMED_OVERLAP) -> float:
    """The prior probability that a querier record and one of the holder's ``holder_rows`` rows match."""
    return min(overlap / max(holder_rows, 1), 1.0)


def precision_at(prior: float, recall: float, false_match_rate: float) -> float:
    """Precision from the prior, recall and false-match rate (0 when nothing is accepted)."""
    accepted = prior * recall + (1 - prior) * false_match_rate
    return prior * recall / accepted if accepted > 0 else 0.0


def precision_curve(model: LevelModel, prior: float) -> list[CurvePoint]:
    """The estimate at every weight a pair can reach (lightest first), each as a threshold."""
    if not model.m or not model.u:
        raise PartyError("a precision target needs the model's m and u (a rules file's [rule.levels] m and u)")
    under_m, under_u = weight_distribution(model, model.m), weight_distribution(model, model.u)
    weights = np.array(sorted(set(under_m) | set(under_u)), dtype=np.int64)
    recall = np.cumsum([under_m.get(int(w), 0.0) for w in weights[::-1]])[::-1]
    false = np.cumsum([under_u.get(int(w), 0.0) for w in weights[::-1]])[::-1]
    return [CurvePoint(int(w) / SCALE, precision_at(prior, float(r), float(f)), min(float(r), 1.0), float(f))
            for w, r, f in zip(weights, recall, false)]


def check_precision(precision: float) -> float:
    """``precision`` as a number in (0, 1), or a :class:`ParameterError` naming the parameter."""
    try:
        value = float(precision)
    except (TypeError, ValueError):
        raise ParameterError("precision", f"{{name}} must be a number between 0 and 1, not {precision!r}") from None
    if not 0 < value < 1:
        raise ParameterError("precision", f"{{name}} must lie strictly between 0 and 1 (got {value:g})")
    return value


def threshold_for_precision(model: LevelModel, precision: float, prior: float) -> float:
    """The lowest threshold (bits) at which the estimated precision reaches ``precision`` and stays there
    for every higher one: the weight of the lightest pattern then accepted."""
    precision = check_precision(precision)
    curve = precision_curve(model, prior)
    floor = sum(model.scaled()[1])                     # a pair agreeing on nothing must stay below it
    chosen = None
    for point in reversed(curve):                      # heaviest first
        if point.precision < precision:
            break
        if round(point.threshold * SCALE) > floor:
            chosen = point
    if chosen is None:
        best = max(curve, key=lambda p: p.precision)
        raise ParameterError("precision", f"{{name}} {precision:g} cannot be reached: the model's best estimated "
                                          f"precision is {best.precision:.6f} (at {best.threshold:g} bits, prior "
                                          f"{prior:.3g}); lower it or give a threshold")
    return chosen.threshold


def point_at(curve: list[CurvePoint], threshold: float) -> CurvePoint:
    """The estimate at any ``threshold`` (bits): that of the lightest attainable weight reaching it."""
    index = bisect_left([p.threshold for p in curve], threshold)
    if index == len(curve):
        return CurvePoint(threshold, 0.0, 0.0, 0.0)
    return CurvePoint(threshold, curve[index].precision, curve[index].recall, curve[index].false_match_rate)


def curve_rows(curve: list[CurvePoint], threshold: float, around: int = 4) -> list[CurvePoint]:
    """A short table of the curve: ``threshold`` itself and the whole bits ``around`` either side of it."""
    whole = [float(b) for b in range(math.floor(threshold) - around + 1, math.floor(threshold) + around + 1)
             if b != threshold]
    return sorted([point_at(curve, b) for b in whole] + [point_at(curve, threshold)], key=lambda p: p.threshold)


def curve_text(curve: list[CurvePoint], threshold: float) -> list[str]:
    """:func:`curve_rows` as lines for the terminal, the chosen threshold marked."""
    lines = [f"{'threshold (bits)':>17} {'est. precision':>15} {'est. recall':>12}"]
    for p in curve_rows(curve, threshold):
        mark = "  <- the threshold" if p.threshold == threshold else ""
        lines.append(f"{p.threshold:>17g} {p.precision:>15.4f} {p.recall:>12.4f}{mark}")
    return lines
