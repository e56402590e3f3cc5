"""Population class sizes: the population table (Benitez, Loukides & Malin 2010 §2.3) and class sizes
of a released table re-counted in the released population (docs/deid.md, "Measures")."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import DeidInputError
from .equivalence_classes import Classes


@dataclass
class EncodedPopulation:
    """Aggregate population counts (Benitez, Loukides & Malin 2010 §2.3): leaf codes per QI + ``count``."""

    codes: dict[str, np.ndarray]
    counts: np.ndarray


def validate_population(pop: pd.DataFrame, qis: Sequence[str]) -> pd.DataFrame:
    """Check a population table: every QI column plus a non-negative numeric ``count``."""
    missing = [c for c in list(qis) + ["count"] if c not in pop.columns]
    if missing:
        raise DeidInputError(f"malformed population table: missing column(s) {', '.join(missing)}")
    raw = pop["count"].astype(object)
    cnt = pd.to_numeric(raw, errors="coerce")
    bad = cnt.isna() | (cnt < 0) | ~np.isfinite(cnt.astype(float))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise DeidInputError(f"malformed population table: count {raw.iloc[i]!r} on data row {i + 1} is not a non-negative number")
    out = pop[list(qis)].copy()
    out["count"] = cnt.astype(float).to_numpy()
    return out


def release_classes(out: pd.DataFrame, pop_out: pd.DataFrame | None, qis: Sequence[str]) -> Classes:
    """From scratch on released values: the classes of every record, f in the data and F in the released
    population (grouped on the same values; raised to f when smaller, as in :meth:`EncodedTable.classes`;
    None without a population)."""
    qis = list(qis)
    key = out[qis].astype(str)
    grp = key.groupby(qis, sort=False, observed=True, dropna=False)[qis[0]]  # a missing value is a value
    ec = grp.ngroup().to_numpy().astype(np.int64)
    sizes = np.bincount(ec, minlength=int(grp.ngroups)).astype(np.int64)
    f = sizes[ec]
    F = None
    if pop_out is not None:
        pc = pop_out[qis].astype(str).assign(count=pop_out["count"].to_numpy(dtype=float))
        agg = pc.groupby(qis, sort=False, observed=True)["count"].sum().rename("g").reset_index()
        g = key.merge(agg, on=qis, how="left")["g"].fillna(0).to_numpy(dtype=float)
        F = np.maximum(g, f)
    return Classes(keep=np.ones(len(out), dtype=bool), ec=ec, ec_sizes=sizes, f=f, F=F,
                   clamped=0 if F is None else int((g < f).sum()))


def release_class_sizes(out: pd.DataFrame, pop_out: pd.DataFrame | None, qis: Sequence[str]) -> tuple[np.ndarray, np.ndarray, int]:
    """Per record its class size f in the data and g in the released population (:func:`release_classes`;
    g = f without a population), and the number of classes."""
    cl = release_classes(out, pop_out, qis)
    f = cl.f.astype(float)
    return f, (f if cl.F is None else cl.F), len(cl.ec_sizes)


def population_risk_of_release(out: pd.DataFrame, pop_out: pd.DataFrame | None, qis: Sequence[str],
                               gamma: float = 1.0) -> float:
    """Normalized ``Σ (1/g(d))^γ / |D|`` (Benitez, Loukides & Malin 2010 eq. 1) of a released table, from scratch."""
    _, g, _ = release_class_sizes(out, pop_out, qis)
    return float(np.sum((1.0 / g) ** gamma) / len(g)) if len(g) else 0.0
