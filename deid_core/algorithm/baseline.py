"""The Safe Harbor baseline of the searches (Benitez, Loukides & Malin 2010 §2.1): Safe Harbor applied
to the data and the population, and its normalized population risk — the default threshold of
BPS / Directed and the comparison reported next to partitioning."""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np
import pandas as pd

from ..spec import Spec
from ..transform.safe_harbor import safe_harbor_policy
from .subtree import release_risk


def safe_harbor_release(df: pd.DataFrame, pop: pd.DataFrame | None, spec: Spec) -> tuple[pd.DataFrame, pd.DataFrame | None, list[str]]:
    """Safe Harbor applied to the QIs of the data and of the population table; the QIs that remain."""
    qis = spec.quasi
    # the policy of the QI columns alone (the spec's other columns, e.g. a person id, are not part of it)
    policy, _ = safe_harbor_policy(replace(spec, columns={q: spec.columns[q] for q in qis}), qis)
    out, _ = policy.apply(df[qis])
    pop_out = policy.apply(pop[qis + ["count"]])[0] if pop is not None else None
    return out, pop_out, [q for q in qis if q in out.columns]


def safe_harbor_risk(df: pd.DataFrame, pop: pd.DataFrame | None, spec: Spec, persons: np.ndarray | None = None,
                     blocks: Sequence[Sequence[str]] | None = None) -> float:
    """Benitez, Loukides & Malin 2010 §2.1: the threshold = the normalized population risk of the Safe Harbor
    release of the same data (over persons with ``persons``, row -> person index, as the search counts).
    With ``blocks`` (an adversary who knows m of the QIs, :mod:`deid_core.risk.known_subsets`) the largest risk over
    the blocks, each on its QIs that Safe Harbor keeps."""
    out, pop_out, kept = safe_harbor_release(df, pop, spec)
    views = [kept] if blocks is None else [[q for q in b if q in kept] for b in blocks]
    views = [v for v in views if v]
    if not views:
        n = len(df) if persons is None else int(persons.max()) + 1
        total = float(pop["count"].sum()) if pop is not None else float(n)
        return 1.0 / max(total, n)
    return max(release_risk(out, pop_out, v, spec.gamma, persons) for v in views)
