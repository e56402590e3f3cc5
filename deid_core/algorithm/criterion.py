"""What a full-domain node must meet — k-anonymity, a maximum or average risk threshold, or the release
verdict under the attack model — with a suppression limit (El Emam et al. 2009, with suppression; El Emam &
Arbuckle, ch. 2, "Probability Metrics" and "Measuring Risk Under Plausible Attacks"), and the re-assessment
of a released table against it.

Acceptability: the records that violate the criterion — in classes smaller
than k (``--k``, or k(threshold) for a maximum risk), or in the smallest
classes that must go for the risk of the rest to meet the threshold (average;
attack: :func:`deid_core.risk.attack.release_verdict`, the verdict of ``deid assess`` and
``deid apply``) — are suppressed, and the node is acceptable when they fit within the
suppression limit ``floor(P × N)``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import DeidInputError, ParameterError
from ..longitudinal.persons import person_class_size
from ..metric.missingness import missing_mask
from ..risk.attack import k_for_threshold, meets, release_k, release_measure, release_verdict
from ..risk.equivalence_classes import ec_sizes_of
from ..spec import ReleaseSpec


@dataclass(frozen=True)
class Criterion:
    """What a node must meet: ``kind`` = ``k`` | ``max`` | ``average`` | ``attack`` (the release verdict of
    :attr:`release`), with a suppression limit in records (or persons)."""

    kind: str
    k: int = 1
    threshold: float | None = None
    max_suppressed: int = 0
    release: ReleaseSpec | None = None

    @classmethod
    def build(cls, n: int, k: int | None = None, threshold: float | None = None, measure: str = "max",
              max_suppression: float = 0.0) -> "Criterion":
        if not 0 <= max_suppression <= 1:
            raise ParameterError(f"{{max_suppression}} {max_suppression} is outside [0, 1]", "max_suppression")
        limit = int(math.floor(max_suppression * n + 1e-9))
        if k is not None:
            if k < 1:
                raise ParameterError(f"{{k}} must be a positive integer, got {k}", "k")
            return cls("k", k=int(k), max_suppressed=limit)
        if threshold is None or not 0 < threshold <= 1:
            raise DeidInputError(f"threshold {threshold} is outside (0, 1]")
        if measure == "average":
            return cls("average", threshold=threshold, max_suppressed=limit)
        return cls("max", k=k_for_threshold(threshold), threshold=threshold, max_suppressed=limit)

    @classmethod
    def for_release(cls, n: int, release: ReleaseSpec, threshold: float | None = None,
                    max_suppression: float = 0.0) -> "Criterion":
        """The release verdict itself (:func:`~deid_core.risk.attack.release_verdict`, El Emam & Arbuckle,
        ch. 2, "Measuring Risk Under Plausible Attacks"): the prosecutor max for a public release, the strict
        average × Pr(T) otherwise, against ``threshold`` (default ``[release] threshold``). A node meets it
        exactly when ``deid assess`` / ``deid apply`` say its release meets the threshold. ``k`` is the
        smallest class such a release can hold (:func:`~deid_core.risk.attack.release_k`)."""
        thr = release.threshold if threshold is None else threshold
        if not 0 < thr <= 1:
            raise DeidInputError(f"threshold {thr} is outside (0, 1]")
        release = replace(release, threshold=thr)
        base = cls.build(n, threshold=thr, measure="max", max_suppression=max_suppression)
        return cls("attack", k=release_k(release), threshold=thr, max_suppressed=base.max_suppressed, release=release)

    def cutoff(self, f: np.ndarray) -> tuple[int, int, float]:
        """(suppression k', suppressed records, risk of the rest) from per-record class sizes ``f``.

        k / max: k' = k. average / attack: the smallest k' (a class size) such that the records in
        classes ≥ k' meet the criterion — the record-average risk ``mean(1/f)`` (:func:`deid_core.risk.meets`),
        or :func:`~deid_core.risk.attack.release_verdict` of their maximum and average (its risk is the
        overall risk); suppressing whole size levels keeps the policy re-appliable as ``suppress_records k'``.
        """
        if self.kind not in ("average", "attack"):
            kept = f[f >= self.k]
            return self.k, int(len(f) - len(kept)), (1.0 / kept.min()) if len(kept) else 0.0
        r = np.bincount(f)  # r[s] = records whose class has size s
        s = np.flatnonzero(r)
        recs = r[s]
        supp = np.concatenate([[0], np.cumsum(recs)[:-1]])
        inv_left = (recs / s)[::-1].cumsum()[::-1]  # Σ 1/f over records in classes of size ≥ s
        risk = inv_left / np.maximum(len(f) - supp, 1)
        if self.kind == "attack":
            risk, ok = release_verdict(1.0 / s, risk, self.release)
            ok = np.flatnonzero(ok)
        else:
            ok = np.flatnonzero(meets(risk, self.threshold))
        if not len(ok):
            return int(s[-1]) + 1, int(len(f)), 0.0
        i = int(ok[0])
        if self.kind == "attack":  # the least cut-off that suppresses the same records here: k at least, so
            # that the policy re-applied to another batch suppresses no class the verdict allows
            return max(self.k, int(s[i - 1]) + 1 if i else 1), int(supp[i]), float(risk[i])
        return int(s[i]), int(supp[i]), float(risk[i])

    def judge(self, f: np.ndarray) -> tuple[float, bool]:
        """(risk, meets) of a release whose kept units have class sizes ``f`` (suppression not counted)."""
        if not len(f):
            return 0.0, True
        if self.kind == "average":
            risk = float(np.mean(1.0 / f))
            return risk, bool(meets(risk, self.threshold))
        if self.kind == "attack":
            risk, ok = release_verdict(float(1.0 / f.min()), float(np.mean(1.0 / f)), self.release)
            return float(risk), bool(ok)
        return float(1.0 / f.min()), bool(f.min() >= self.k)


def criterion_dict(c: Criterion) -> dict:
    out = {"kind": c.kind, "k": c.k if c.kind != "average" else None, "threshold": c.threshold,
           "max_suppressed_records": c.max_suppressed}
    if c.kind == "attack":
        out["risk_measure"] = release_measure(c.release)
    return out


def reassess(out: pd.DataFrame, qis: Sequence[str], criterion: Criterion, persons: np.ndarray | None = None) -> dict:
    """Risk of a released table from scratch (its own values, no encoding reused) against ``criterion``.

    Records whose QIs are all missing or suppressed are the suppressed ones. ``persons`` (row -> person
    index, rows as in ``out``): class sizes in distinct persons, a person's class is the smallest among
    their records, and suppression is counted in persons with no record left (El Emam & Arbuckle, ch. 4).
    """
    supp = missing_mask(out, list(qis)).all(axis=1)
    kept = out.loc[~supp, list(qis)]
    if persons is not None:
        cls = out[list(qis)].groupby(list(qis), dropna=False, observed=True, sort=False).ngroup().to_numpy()
        sizes = person_class_size(cls, persons, int(persons.max()) + 1, keep=~np.asarray(supp))
        f, n_supp = sizes[sizes > 0], int((sizes == 0).sum())
    else:
        f = ec_sizes_of(kept, list(qis)) if len(kept) else np.zeros(0, dtype=np.int64)
        n_supp = int(supp.sum())
    risk, ok = criterion.judge(f)
    out_d = {"risk": risk, "suppressed_records": int(supp.sum()), "k_min": int(f.min()) if len(f) else 0,
             "meets": bool(ok and n_supp <= criterion.max_suppressed)}
    if persons is not None:
        out_d["suppressed_persons"] = n_supp
    return out_d
