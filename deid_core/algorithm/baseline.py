"""The Safe Harbor baseline of the searches (Benitez, Loukides & Malin 2010 §2.1): Safe Harbor applied
to the data and the population, and its normalized population risk — the default threshold of
BPS / Directed and the comparison reported next to partitioning."""
from __future__ import annotations

import pandas as pd

from ..risk.population import population_risk_of_release
from ..spec import Spec
from ..transform.safe_harbor import safe_harbor_policy


def safe_harbor_release(df: pd.DataFrame, pop: pd.DataFrame | None, spec: Spec) -> tuple[pd.DataFrame, pd.DataFrame | None, list[str]]:
    """Safe Harbor applied to the QIs of the data and of the population table; the QIs that remain."""
    qis = spec.quasi
    policy, _ = safe_harbor_policy(spec, qis)
    out, _ = policy.apply(df[qis])
    pop_out = policy.apply(pop[qis + ["count"]])[0] if pop is not None else None
    return out, pop_out, [q for q in qis if q in out.columns]


def safe_harbor_risk(df: pd.DataFrame, pop: pd.DataFrame | None, spec: Spec) -> float:
    """Benitez, Loukides & Malin 2010 §2.1: the threshold = the normalized population risk of the Safe Harbor release of the same data."""
    out, pop_out, kept = safe_harbor_release(df, pop, spec)
    if not kept:
        total = float(pop["count"].sum()) if pop is not None else float(len(df))
        return 1.0 / max(total, len(df))
    return population_risk_of_release(out, pop_out, kept, spec.gamma)
