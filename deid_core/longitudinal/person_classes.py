"""Row equivalence classes re-counted in distinct persons (El Emam & Arbuckle, ch. 4, "Don't Treat It Like
Cross-Sectional Data"; docs/longitudinal.md, "Patient-level assessment").

A row class (one combination of the quasi-identifiers) holding three claims
of one patient is a class of *one person*: its prosecutor risk is 1, not 1/3.
:func:`person_classes` turns the row classes of :mod:`deid_core.risk` into
one entry per person so every existing measure (prosecutor, journalist,
marketer, population risk, instance disclosure) runs on persons:

* a class's size is the number of distinct persons with a row in it;
* a person's class is the one of their rows with the fewest persons (the
  adversary who knows one of the target's events picks the most revealing
  one); ties go to the smaller population count, then the first row;
* a person all of whose rows are fully missing (suppressed) carries no QI
  information and is left out, as a fully missing record is.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..risk.equivalence_classes import Classes
from .integer_codes import factorize


def person_classes(cl: Classes, pcode: np.ndarray, n_persons: int) -> Classes:
    """The per-person view of row classes ``cl`` (``pcode``: row -> person index 0..n_persons-1)."""
    pk = pcode[cl.keep]
    n_ec = len(cl.ec_sizes)
    pairs = pd.unique(cl.ec.astype(np.int64) * n_persons + pk)  # hash-based: faster than np.unique here
    persons_per_class = np.bincount(pairs // n_persons, minlength=n_ec)
    f_row = persons_per_class[cl.ec]
    F_row = cl.F if cl.F is not None else np.zeros(len(pk))
    order = np.lexsort((np.arange(len(pk)), F_row, f_row, pk))  # per person: fewest persons first
    first = order[np.append(True, pk[order][1:] != pk[order][:-1])] if len(pk) else order
    keep = np.zeros(n_persons, dtype=bool)
    keep[pk[first]] = True
    rep = np.empty(n_persons, dtype=np.int64)
    rep[pk[first]] = first
    rep = rep[keep]
    ec, _ = factorize(cl.ec[rep])
    f = f_row[rep].astype(np.int64)
    F = None if cl.F is None else np.maximum(cl.F[rep], f).astype(float)
    return Classes(keep=keep, ec=ec, ec_sizes=np.bincount(ec).astype(np.int64) if len(ec) else np.zeros(0, np.int64),
                   f=f, F=F, clamped=cl.clamped)
