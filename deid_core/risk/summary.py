"""Every applicable measure of one class computation, as a summary and per record
(the core of ``deid assess``; docs/deid.md, "Measures")."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .equivalence_classes import Classes
from .measures import instance_disclosure, journalist, marketer, population_risk, prosecutor


def summarize(cl: Classes, strict_cut: float = 0.33, gamma: float = 1.0) -> dict:
    """All applicable summary measures of a class computation (the ``assess`` JSON core)."""
    f = cl.f
    out: dict = {
        "records": int(len(cl.keep)),
        "fully_missing_records": int((~cl.keep).sum()),
        "equivalence_classes": int(len(cl.ec_sizes)),
        "k_min": int(f.min()) if len(f) else 0,
        "prosecutor": prosecutor(f, strict_cut),
    }
    if cl.F is not None:
        out["journalist"] = journalist(cl.F)
        Fj = np.full(len(cl.ec_sizes), np.inf)
        np.minimum.at(Fj, cl.ec, cl.F)  # constant within a class under own_class; min under match_any
        out["marketer"] = marketer(cl.ec_sizes, Fj)
        out["population_risk"] = population_risk(cl.F, gamma)
        out["instance_disclosure"] = instance_disclosure(f, cl.F)
        out["population_inconsistent_records"] = cl.clamped
    return out


def per_record(cl: Classes) -> pd.DataFrame:
    """Per-record risks (NaN for fully missing records): prosecutor, and journalist r/q if a population is set."""
    n = len(cl.keep)
    cols = {"class_size": np.full(n, np.nan), "prosecutor": np.full(n, np.nan)}
    cols["class_size"][cl.keep] = cl.f
    cols["prosecutor"][cl.keep] = 1.0 / cl.f
    if cl.F is not None:
        for name, val in (("population_size", cl.F), ("journalist", 1.0 / cl.F), ("instance_disclosure", cl.f / cl.F)):
            cols[name] = np.full(n, np.nan)
            cols[name][cl.keep] = val
    return pd.DataFrame(cols)
