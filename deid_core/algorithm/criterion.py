"""What a full-domain node must meet — k-anonymity, or a maximum or average risk threshold — with a
suppression limit (El Emam et al. 2009, with suppression; El Emam & Arbuckle, ch. 2, "Probability
Metrics"), and the re-assessment of a released table against it.

Acceptability: the records that violate the criterion — in classes smaller
than k (``--k``, or k(threshold) for a maximum risk), or in the smallest
classes that must go for the average risk of the rest to meet the threshold —
are suppressed, and the node is acceptable when they fit within the
suppression limit ``floor(P × N)``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import DeidInputError
from ..longitudinal.persons import person_class_size
from ..metric.missingness import missing_mask
from ..risk.attack import attack_probabilities, k_for_threshold, meets
from ..risk.equivalence_classes import ec_sizes_of
from ..spec import ReleaseSpec


@dataclass(frozen=True)
class Criterion:
    """What a node must meet: ``kind`` = ``k`` | ``max`` | ``average``, with a suppression limit in records."""

    kind: str
    k: int = 1
    threshold: float | None = None
    max_suppressed: int = 0

    @classmethod
    def build(cls, n: int, k: int | None = None, threshold: float | None = None, measure: str = "max",
              max_suppression: float = 0.0) -> "Criterion":
        if not 0 <= max_suppression <= 1:
            raise DeidInputError(f"--max-suppression {max_suppression} is outside [0, 1]")
        limit = int(math.floor(max_suppression * n + 1e-9))
        if k is not None:
            if k < 1:
                raise DeidInputError(f"--k must be a positive integer, got {k}")
            return cls("k", k=int(k), max_suppressed=limit)
        if threshold is None or not 0 < threshold <= 1:
            raise DeidInputError(f"threshold {threshold} is outside (0, 1]")
        if measure == "average":
            return cls("average", threshold=threshold, max_suppressed=limit)
        return cls("max", k=k_for_threshold(threshold), threshold=threshold, max_suppressed=limit)

    @classmethod
    def for_release(cls, n: int, release: ReleaseSpec, threshold: float, max_suppression: float = 0.0) -> "Criterion":
        """The criterion whose releases meet ``threshold`` under the attack model (El Emam & Arbuckle, ch. 2,
        "Measuring Risk Under Plausible Attacks" and "Probability Metrics").

        The re-assessment uses the prosecutor max for a public release and the strict average × Pr(T)
        otherwise, so every class must hold at least k = k(t / Pr(T)) records, and for a non-public
        release also keep the max risk under the strict-average cut.
        """
        conditional = threshold / max(attack_probabilities(release).values())
        bound = conditional if release.type == "public" else min(conditional, release.strict_cut)
        return cls.build(n, threshold=min(bound, 1.0), measure="max", max_suppression=max_suppression)

    def cutoff(self, f: np.ndarray) -> tuple[int, int, float]:
        """(suppression k', suppressed records, risk of the rest) from per-record class sizes ``f``.

        k / max: k' = k. average: the smallest k' (a class size) such that the
        record-average risk ``mean(1/f)`` of the records in classes ≥ k' meets
        the threshold (:func:`deid_core.risk.meets`); suppressing whole size
        levels keeps the policy re-appliable as ``suppress_records k'``.
        """
        if self.kind != "average":
            kept = f[f >= self.k]
            return self.k, int(len(f) - len(kept)), (1.0 / kept.min()) if len(kept) else 0.0
        r = np.bincount(f)  # r[s] = records whose class has size s
        s = np.flatnonzero(r)
        recs = r[s]
        supp = np.concatenate([[0], np.cumsum(recs)[:-1]])
        inv_left = (recs / s)[::-1].cumsum()[::-1]  # Σ 1/f over records in classes of size ≥ s
        risk = inv_left / np.maximum(len(f) - supp, 1)
        ok = np.flatnonzero(meets(risk, self.threshold))
        if not len(ok):
            return int(s[-1]) + 1, int(len(f)), 0.0
        i = int(ok[0])
        return int(s[i]), int(supp[i]), float(risk[i])


def criterion_dict(c: Criterion) -> dict:
    return {"kind": c.kind, "k": c.k if c.kind != "average" else None, "threshold": c.threshold,
            "max_suppressed_records": c.max_suppressed}


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
    if criterion.kind == "average":
        risk = float(np.mean(1.0 / f)) if len(f) else 0.0
        ok = meets(risk, criterion.threshold)
    else:
        risk = float(1.0 / f.min()) if len(f) else 0.0
        ok = bool(len(f) == 0 or f.min() >= criterion.k)
    out_d = {"risk": risk, "suppressed_records": int(supp.sum()), "k_min": int(f.min()) if len(f) else 0,
             "meets": bool(ok and n_supp <= criterion.max_suppressed)}
    if persons is not None:
        out_d["suppressed_persons"] = n_supp
    return out_d
