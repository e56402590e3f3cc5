"""The standard a text anonymizer is judged against (El Emam & Arbuckle, ch. 8 "Free-Form Text", "Standards
for Recall, and a Risk-Based Approach" and "Standards for Precision"), per PHI type and all or nothing per
document: a direct identifier needs an all-or-nothing recall of 0.95 and a precision of 0.80; an indirect
one a precision of 0.70 and the recall ``r`` that keeps the risk of two indirect identifiers both missed in
a document under the threshold, ``Pr(T) × (1 − r)² ≤ τ``, so ``r ≥ 1 − √(τ / Pr(T))`` under the most likely
attack ``T`` that applies, its probability reckoned as ``deid assess`` reckons it (docs/text_evaluation.md).
"""
from __future__ import annotations

import math
from typing import Mapping

from ..errors import ParameterError, literal
from ..risk.attack import FLOAT_SLACK, attack_probabilities, conditional_threshold
from ..spec import ReleaseSpec
from ..vocabulary import RELEASE_TYPES

#: Direct identifiers (El Emam & Arbuckle, ch. 8, Table 8-1: names, street, email, phone, ID; a URL is contact
#: as an email is, every kind of ID number an ID); the other types are indirect (age, ZIP code, date, health
#: care facility, city, state, country).
DIRECT = ("FIRST_NAME", "MIDDLE_NAME", "LAST_NAME", "STREET", "EMAIL", "URL", "PHONE",
          "MRN", "SSN", "ACCOUNT", "LICENSE", "DEVICE", "ID")
INDIRECT = ("DATE", "AGE", "FACILITY", "CITY", "STATE", "ZIP", "COUNTRY")
#: All-or-nothing recall a direct identifier needs ("Standards for Recall": close to 95 % or higher).
DIRECT_RECALL = 0.95
#: Micro-averaged precision needed ("Standards for Precision": 80 % direct, 70 % indirect).
DIRECT_PRECISION, INDIRECT_PRECISION = 0.80, 0.70
#: Pr(attempt) of a recipient bound by an agreement (El Emam & Arbuckle, ch. 8, "Threat Modeling": 0.4).
PR_ATTEMPT = 0.4


def release(threshold: float = 0.05, release_type: str = "non-public", pr_attempt: float | None = PR_ATTEMPT,
            prevalence: float | None = None) -> ReleaseSpec:
    """The release the notes go to, as ``[release]`` of a spec describes it to ``deid assess``."""
    for name, value in (("threshold", threshold), ("pr_attempt", pr_attempt), ("prevalence", prevalence)):
        if value is not None and not (isinstance(value, (int, float)) and 0 < value <= 1):
            raise ParameterError("{" + name + "} must be in (0, 1], got " + literal(repr(value)), name)
    if release_type not in RELEASE_TYPES:
        raise ParameterError("{release_type} must be one of " + ", ".join(RELEASE_TYPES) + ", got "
                             + literal(repr(release_type)), "release_type")
    return ReleaseSpec(type=release_type, threshold=threshold, pr_attempt=pr_attempt, prevalence=prevalence)


def minimum_recall(threshold: float, pr_attack: float) -> float:
    """``1 − √(τ / Pr(T))`` (0 when the attack's probability is at or under the threshold): El Emam & Arbuckle,
    ch. 8, "Standards for Recall, and a Risk-Based Approach" (τ 0.05, Pr(attempt) 0.4 -> 0.65)."""
    return 1.0 - math.sqrt(conditional_threshold(threshold, pr_attack))


def minima(spec: ReleaseSpec) -> dict:
    """The attacks that apply and their probabilities, the one that sets the indirect recall (the most likely:
    its minimum recall is the largest) and the minima of each kind of identifier."""
    attacks = attack_probabilities(spec)
    attack = max(attacks, key=lambda t: (attacks[t], t))
    return {"threshold": spec.threshold, "release_type": spec.type, "attacks": attacks,
            "attack_min_recall": {t: minimum_recall(spec.threshold, pr) for t, pr in attacks.items()},
            "attack": attack, "pr_attack": attacks[attack],
            "direct": {"recall": DIRECT_RECALL, "precision": DIRECT_PRECISION},
            "indirect": {"recall": minimum_recall(spec.threshold, attacks[attack]),
                         "precision": INDIRECT_PRECISION}}


def judge(rows: Mapping[str, Mapping], leaked: Mapping[str, list[str]], spec: ReleaseSpec) -> dict:
    """Each type with gold spans against its minima (``rows`` and ``leaked`` of
    :func:`deid_core.text.evaluate.score`): per type its kind, minima and the figures that fall short of them;
    the verdict (every type meets its minima) and the ids of the leaked documents, per type and in all. A
    precision is judged where the detector gave the type to some span (else there is none to judge)."""
    m = minima(spec)
    types = {}
    for kind, names in (("direct", DIRECT), ("indirect", INDIRECT)):
        for name in names:
            row = rows.get(name)
            if not row or not row["gold"]:
                continue
            need = m[kind]
            failed = [figure for figure, part, whole, least in (
                ("all_or_nothing_recall", row["documents_found"], row["documents"], need["recall"]),
                ("precision", row["true"], row["predicted"], need["precision"]))
                if whole and part / whole < least - FLOAT_SLACK]
            types[name] = {"kind": kind, "all_or_nothing_recall": row["all_or_nothing_recall"],
                           "min_recall": need["recall"], "precision": row["precision"],
                           "min_precision": need["precision"], "failed": failed, "meets": not failed,
                           "leaked": list(leaked.get(name, []))}
    failing = sorted(name for name, t in types.items() if t["failed"])
    return {**m, "types": dict(sorted(types.items())), "meets": bool(types) and not failing, "failing": failing,
            "leaked_documents": sorted({d for t in types.values() for d in t["leaked"]})}


#: What each judged figure is called in a sentence, and its minimum's key.
FIGURES = {"all_or_nothing_recall": ("all-or-nothing recall", "min_recall"),
           "precision": ("precision", "min_precision")}


def verdict_text(judged: Mapping, documents: int, subject: str = "The detector") -> str:
    """The verdict of :func:`judge` in one sentence: whether ``subject`` meets the standard on these
    ``documents``, and where not, each type's figure that falls short of its minimum."""
    n = len(judged["types"])
    book = f"the standard of El Emam & Arbuckle (ch. 8) on these {documents:,} documents"
    if judged["meets"]:
        return (f"{subject} meets {book}: each of the {n} PHI types in the gold meets its minimum all-or-nothing "
                "recall and precision.")
    short = "; ".join(f"{name}: " + ", ".join(f"{FIGURES[f][0]} {t[f]:.4g} < {t[FIGURES[f][1]]:.4g}"
                                              for f in t["failed"])
                      for name, t in judged["types"].items() if t["failed"])
    return (f"{subject} does NOT meet {book}: {len(judged['failing'])} of the {n} PHI types in the gold fall short "
            f"({short}).")
