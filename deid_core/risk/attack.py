"""The attack model: attacks T1–T4, their probabilities, thresholds and whether a risk meets one
(El Emam & Arbuckle, Anonymizing Health Data, ch. 2, "Measuring Risk Under Plausible Attacks";
docs/deid.md, "Measures")."""
from __future__ import annotations

import math

import numpy as np

from ..errors import DeidInputError
from ..spec import ReleaseSpec
from .measures import strict_average

#: Pr(breach): ~27% of providers have a reportable breach per year (El Emam & Arbuckle, ch. 2, "T3: Data Breach").
PR_BREACH = 0.27
#: Threshold ranges and metric per attack (El Emam & Arbuckle, ch. 2, "Risk Thresholds", Table 2-1).
THRESHOLD_TABLE = {
    "T1": {"metric": "average", "range": (0.1, 0.05), "probability": "Pr(attempt)"},
    "T2": {"metric": "average", "range": (0.1, 0.05), "probability": "Pr(acquaintance)"},
    "T3": {"metric": "average", "range": (0.1, 0.05), "probability": "Pr(breach)"},
    "T4": {"metric": "max", "range": (0.09, 0.05), "probability": "1 (public)"},
}


def pr_acquaintance(prevalence: float, friends: float = 150.0, divisor: float = 2.0) -> float:
    """``1 − (1 − ρ)^(friends/divisor)`` (Dunbar number 150, El Emam & Arbuckle ch. 2, "T2: Inadvertent
    Attempt at Re-Identification"; 0.027 -> 0.8716, ch. 3, "Threat Modeling")."""
    if not 0 <= prevalence <= 1:
        raise DeidInputError(f"prevalence {prevalence} outside [0, 1]")
    return 1.0 - (1.0 - prevalence) ** (friends / divisor)


def overall_risk(pr_t: float, conditional: float) -> float:
    """``Pr(re-id, T) = Pr(T) × Pr(re-id | T)`` (El Emam & Arbuckle, ch. 2, "Measuring Risk Under Plausible Attacks")."""
    return pr_t * conditional


def conditional_threshold(threshold: float, pr_t: float) -> float:
    """Threshold on ``Pr(re-id | T)`` so that the overall risk meets ``threshold`` (El Emam & Arbuckle ch. 2, "Choosing Thresholds":
    0.1/0.3 = 0.33), capped at 1."""
    if pr_t <= 0:
        return 1.0
    return min(1.0, threshold / pr_t)


#: Threshold comparisons allow only floating-point rounding (an absolute 1e-15, a hundred units in the
#: last place of a risk near 0.05), never a share of the threshold: a risk above it does not meet it.
FLOAT_SLACK = 1e-15


def meets(risk: float, threshold: float) -> bool:
    """``risk ≤ threshold``: the risk must be at or below the threshold (El Emam & Arbuckle, ch. 2, "Risk
    Thresholds"). The book's thresholds 0.09 and 0.33 are 1/11 and 1/3 rounded down, so 1/11 = 0.0909
    does not meet 0.09: a custodian who means k = 11 states the threshold 0.091 (docs/deid.md, "Measures").
    """
    return risk <= threshold + FLOAT_SLACK


def k_for_threshold(threshold: float) -> int:
    """Smallest k with ``meets(1/k, threshold)`` = ⌈1/t⌉: 0.5→2, 0.33→4, 0.2→5, 0.1→10, 0.09→12, 0.05→20."""
    if not 0 < threshold <= 1:
        raise DeidInputError(f"threshold {threshold} is outside (0, 1]")
    k = max(1, math.floor(1 / threshold) - 1)
    while not meets(1 / k, threshold):
        k += 1
    return k


def attack_probabilities(release: ReleaseSpec) -> dict[str, float]:
    """Pr(T) for the attacks that apply: T4 for public releases, else T1–T3 (those with parameters)."""
    if release.type == "public":
        return {"T4": 1.0}
    out: dict[str, float] = {"T3": PR_BREACH}
    if release.pr_attempt is not None:
        out["T1"] = release.pr_attempt
    if release.prevalence is not None:
        out["T2"] = pr_acquaintance(release.prevalence, release.friends, release.friends_divisor)
    return dict(sorted(out.items()))


def release_conditional_threshold(release: ReleaseSpec) -> float:
    """The release's threshold on ``Pr(re-id | attack)``: ``[release] threshold`` over the largest attack
    probability (El Emam & Arbuckle, ch. 2, "Measuring Risk Under Plausible Attacks")."""
    return conditional_threshold(release.threshold, max(attack_probabilities(release).values()))


def conditional_risk(attack: str, maximum, average, strict_cut: float = 0.33):
    """``Pr(re-id | T)`` of a release whose prosecutor risk is ``maximum`` / ``average``: the maximum under
    T4 (public), the strict average under T1–T3 (El Emam & Arbuckle, ch. 2, "Probability Metrics")."""
    return maximum if attack == "T4" else strict_average(maximum, average, strict_cut)


def release_verdict(maximum, average, release: ReleaseSpec):
    """The release verdict: (overall risk, meets) of a release whose prosecutor risk is ``maximum`` /
    ``average``, the largest ``Pr(T) × Pr(re-id | T)`` over the attacks that apply, against
    ``[release] threshold`` (:func:`meets`). Element-wise on arrays (a search's candidate cut-offs).

    Every verdict of the package goes through it: ``deid assess``, ``deid apply --html``, ``deid search``
    (its criterion, :class:`deid_core.algorithm.criterion.Criterion`), the workbench and every report page
    (docs/deid.md, "One verdict")."""
    risk = None
    for attack, pr in attack_probabilities(release).items():
        r = overall_risk(pr, conditional_risk(attack, maximum, average, release.strict_cut))
        risk = r if risk is None else np.maximum(risk, r)
    return risk, meets(risk, release.threshold)


def release_measure(release: ReleaseSpec) -> str:
    """What :func:`release_verdict` measures, in words."""
    return "maximum risk (T4, public)" if release.type == "public" else "strict average risk x Pr(T) (T1-T3)"


def release_k(release: ReleaseSpec) -> int:
    """The smallest class a release that meets its threshold can hold (:func:`release_verdict`): k(T) for
    a public release; otherwise k of the larger of the conditional threshold and the strict-average cut
    (a maximum above the cut is the risk itself, at or under it the average is)."""
    cond = release_conditional_threshold(release)
    return k_for_threshold(cond if release.type == "public" else max(cond, release.strict_cut))


def release_average_cap(release: ReleaseSpec) -> float | None:
    """The average risk a non-public release must also keep to (the conditional threshold), when it binds
    beyond :func:`release_k`; None otherwise."""
    cond = release_conditional_threshold(release)
    return cond if release.type != "public" and cond < 1.0 / release_k(release) else None


def attack_assessment(summary: dict, release: ReleaseSpec) -> dict:
    """Overall risk under each applicable attack and whether it meets the threshold.

    T4 (public) uses the prosecutor max; T1–T3 use the strict average
    (El Emam & Arbuckle, ch. 2, "Probability Metrics") times Pr(T); the overall verdict is
    :func:`release_verdict`'s. Threshold semantics: :func:`meets`.
    """
    if not summary["records"]:
        raise DeidInputError("no records to assess: a table without records never meets a threshold")
    p = summary["prosecutor"]
    attacks = {}
    for t, pr in attack_probabilities(release).items():
        cond = float(conditional_risk(t, p["max"], p["average"], release.strict_cut))
        overall = overall_risk(pr, cond)
        attacks[t] = {
            "pr_t": pr, "metric": f"prosecutor.{'max' if t == 'T4' else 'strict_average'}", "pr_reid_given_t": cond,
            "pr_reid": overall, "conditional_threshold": conditional_threshold(release.threshold, pr),
            "meets_threshold": bool(meets(overall, release.threshold)),
        }
    risk, ok = release_verdict(p["max"], p["average"], release)
    return {
        "release_type": release.type, "threshold": release.threshold,
        "k_equivalent": release_k(release), "average_at_most": release_average_cap(release), "attacks": attacks,
        "overall_risk": float(risk), "meets_threshold": bool(ok),
    }
