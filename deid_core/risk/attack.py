"""The attack model: attacks T1–T4, their probabilities, thresholds and whether a risk meets one
(El Emam & Arbuckle, Anonymizing Health Data, ch. 2, "Measuring Risk Under Plausible Attacks";
docs/deid.md, "Measures")."""
from __future__ import annotations

import math

from ..errors import DeidInputError
from ..spec import ReleaseSpec

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


def attack_assessment(summary: dict, release: ReleaseSpec) -> dict:
    """Overall risk under each applicable attack and whether it meets the threshold.

    T4 (public) uses the prosecutor max; T1–T3 use the strict average
    (El Emam & Arbuckle, ch. 2, "Probability Metrics") times Pr(T). Threshold semantics: :func:`meets`.
    """
    if not summary["records"]:
        raise DeidInputError("no records to assess: a table without records never meets a threshold")
    attacks = {}
    for t, pr in attack_probabilities(release).items():
        metric = "max" if t == "T4" else "strict_average"
        cond = summary["prosecutor"][metric]
        overall = overall_risk(pr, cond)
        attacks[t] = {
            "pr_t": pr, "metric": f"prosecutor.{metric}", "pr_reid_given_t": cond, "pr_reid": overall,
            "conditional_threshold": conditional_threshold(release.threshold, pr),
            "meets_threshold": meets(overall, release.threshold),
        }
    worst = max(attacks.values(), key=lambda a: a["pr_reid"])
    return {
        "release_type": release.type, "threshold": release.threshold,
        "k_equivalent": k_for_threshold(release.threshold), "attacks": attacks,
        "overall_risk": worst["pr_reid"], "meets_threshold": all(a["meets_threshold"] for a in attacks.values()),
    }
