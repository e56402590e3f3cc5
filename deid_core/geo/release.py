"""Releasing a column of area codes after clustering: each code becomes a random area of its cluster (the
book's release: the original area is shifted to a nearby one, each area of the cluster equally likely) or
the cluster's id (El Emam & Arbuckle, *Anonymizing Health Data*, ch. 9, "Clustering Neighbors";
docs/geography.md, "Release").

Empty cells and the suppression marker pass through unchanged; any other value must be an id of the area
table. The random draw depends only on the cluster, never on the original area inside it, so knowing the
seed tells nothing beyond the cluster. With persons given, one draw per (person, cluster): all records of a
person in one cluster show the same released area (a person does not seem to move between visits).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import DeidInputError
from ..spec import SUPPRESSED
from .areas import Areas
from .cluster import Clustering
from .distance import great_circle

RELEASES = ("random", "cluster")
PASS_THROUGH = ("", SUPPRESSED)


@dataclass(frozen=True, eq=False)
class Released:
    """The released column and what happened to it."""

    values: pd.Categorical
    summary: dict


def _codes(values: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Category code per record (-1 for NaN) and the categories, for a categorical or plain text column."""
    cat = values if isinstance(values.dtype, pd.CategoricalDtype) else values.astype("category")
    return cat.cat.codes.to_numpy().astype(np.int64), pd.Index(cat.cat.categories.astype("str"))


def area_rows(values: pd.Series, areas: Areas, column: str) -> np.ndarray:
    """Row of each record's area in the table; -1 for empty or suppressed cells (one-line error for others)."""
    codes, cats = _codes(values)
    rows = areas.index_of(cats)
    unknown = (rows < 0) & ~cats.isin(PASS_THROUGH)
    if unknown.any():
        n = int(np.isin(codes, np.flatnonzero(unknown)).sum())
        raise DeidInputError(f"column {column!r}: {n:,} record(s) hold a value that is not an id of the area "
                             f"table, e.g. {cats[np.flatnonzero(unknown)[0]]!r}")
    out = np.where(codes >= 0, rows[np.maximum(codes, 0)], -1)
    return out


def _draw_keys(lab: np.ndarray, persons: np.ndarray | None) -> np.ndarray:
    """One key per draw: the record itself, or its (person, cluster) pair (records without a person: alone)."""
    if persons is None:
        return np.arange(lab.size)
    alone = persons < 0
    pairs = np.where(alone, -1 - np.arange(lab.size), persons).astype(np.int64) * (int(lab.max(initial=0)) + 1) + lab
    return pd.factorize(pairs)[0]


def release_areas(values: pd.Series, areas: Areas, clustering: Clustering, release: str = "random",
                  seed: int = 0, column: str = "area", persons: pd.Series | None = None) -> Released:
    """Replace each area code of ``values`` by a random area of its cluster or by the cluster's id.

    ``persons`` (random release): the person of each record; empty cells count as records of their own.
    """
    if release not in RELEASES:
        raise DeidInputError(f"release must be one of {', '.join(RELEASES)}, got {release!r}")
    codes, cats = _codes(values)
    rows = area_rows(values, areas, column)
    has = rows >= 0
    lab = clustering.labels[rows[has]]
    if release == "random":
        order, start = clustering.members()
        who = None
        if persons is not None:
            who = pd.factorize(persons.astype("str").replace("", np.nan))[0][has]
        key = _draw_keys(lab, who)
        first = np.unique(key, return_index=True)[1]
        draws = np.random.default_rng(seed).integers(0, clustering.size[lab[first]])
        pick = start[lab] + draws[key]
        out_rows = order[pick]
        labels = areas.ids
        shift = great_circle(areas.vectors[rows[has]], areas.vectors[out_rows])
    else:
        out_rows = lab
        labels = clustering.names
        shift = great_circle(areas.vectors[rows[has]], clustering.centre[lab])
    # categories: the released labels, then the pass-through texts present in the column
    kept = [c for c in PASS_THROUGH if c in set(cats)]
    categories = pd.Index(list(labels) + kept, dtype=object)
    out = np.full(len(values), -1, dtype=np.int64)
    out[has] = out_rows
    for text in kept:
        out[codes == cats.get_loc(text)] = len(labels) + kept.index(text)
    guess = 1.0 / clustering.size[lab] if lab.size else np.zeros(0)
    q = (lambda a, p: float(np.percentile(a, p)) if a.size else None)
    summary = {"release": release, "seed": seed if release == "random" else None,
               "draws": ("per person and cluster" if persons is not None else "per record") if release == "random"
               else None, "records": len(values),
               "records_released": int(has.sum()), "records_passed_through": int((~has).sum()),
               "clusters_in_data": int(np.unique(lab).size),
               "area_guess_probability": {"max": float(guess.max()) if guess.size else None,
                                          "mean": float(guess.mean()) if guess.size else None},
               "shift_km": {"mean": float(shift.mean()) if shift.size else None, "median": q(shift, 50),
                            "p95": q(shift, 95), "max": float(shift.max()) if shift.size else None},
               "records_changed": int((out[has] != rows[has]).sum()) if release == "random" else int(has.sum())}
    return Released(values=pd.Categorical.from_codes(out, categories=categories), summary=summary)
