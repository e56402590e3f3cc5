"""The risk measures of docs/deid.md, "Measures": prosecutor, journalist, marketer, population risk
and instance disclosure, each a pure function of class sizes."""
from __future__ import annotations

import numpy as np


def prosecutor(f: np.ndarray, strict_cut: float = 0.33) -> dict:
    """Prosecutor risk from data class sizes f_j (El Emam & Arbuckle, ch. 2, "Probability Metrics",
    "Meeting Thresholds").

    * ``max`` = max_j 1/f_j — the book prints max(k_i) (ch. 2, "Meeting Thresholds"): erratum,
      fixed to max(1/k_i) (docs/deid.md, "Errata applied");
    * ``average`` = (1/N) Σ_records 1/f_j = #ECs/N under ``own_class``
      (the book prints average(k_i): same erratum);
    * ``strict_average`` = max if max > ``strict_cut`` (0.33, or 0.5) else average.
    """
    if len(f) == 0:
        return {"max": 0.0, "average": 0.0, "strict_average": 0.0}
    r = 1.0 / f
    mx, avg = float(r.max()), float(r.mean())
    return {"max": mx, "average": avg, "strict_average": float(strict_average(mx, avg, strict_cut))}


def strict_average(maximum, average, strict_cut: float = 0.33):
    """The strict average risk: the maximum when it is above ``strict_cut``, else the average (El Emam &
    Arbuckle, ch. 2, "Probability Metrics"); element-wise on arrays."""
    return np.where(np.asarray(maximum) > strict_cut, maximum, average)


def journalist(F: np.ndarray) -> dict:
    """Journalist risk from population class sizes F_j (docs/deid.md, "Measures" and "Errata applied"): max 1/F_j and record average of 1/F_j."""
    if len(F) == 0:
        return {"max": 0.0, "average": 0.0}
    r = 1.0 / F
    return {"max": float(r.max()), "average": float(r.mean())}


def marketer(ec_sizes: np.ndarray, F_classes: np.ndarray) -> float:
    """``(1/N) Σ_j f_j/F_j`` over classes j (El Emam & Arbuckle, ch. 2, "Probability Metrics").

    With a known population this equals the record-averaged journalist risk
    (each of the f_j records of class j contributes 1/F_j), so it is ≤ the
    journalist max; with F = f it is #ECs/N (the prosecutor average).
    """
    n = float(np.sum(ec_sizes))
    return float(np.sum(ec_sizes / F_classes) / n) if n else 0.0


def population_risk(F: np.ndarray, gamma: float = 1.0) -> dict:
    """Benitez, Loukides & Malin 2010 eq. (1): ``risk(D,P) = Σ_{d∈D} (1/g(d))^γ`` and normalized by |D| (range (0,1])."""
    s = float(np.sum((1.0 / F) ** gamma)) if len(F) else 0.0
    return {"sum": s, "normalized": s / len(F) if len(F) else 0.0, "gamma": gamma}


def instance_disclosure(f: np.ndarray, F: np.ndarray) -> dict:
    """Liu et al. 2016 §3.2: ``r_i = n_i/N_i``, ``q_i = 1/N_i``, ``R = (1/|D|) Σ_i n_i r_i``, ``Q = (1/|D|) Σ_i n_i q_i``.

    Per record, R and Q are the means of r and q. Proposition 1: r_i ≥ q_i.
    """
    if len(f) == 0:
        return {"R": 0.0, "Q": 0.0, "max_r": 0.0, "max_q": 0.0}
    r, q = f / F, 1.0 / F
    return {"R": float(r.mean()), "Q": float(q.mean()), "max_r": float(r.max()), "max_q": float(q.max())}
