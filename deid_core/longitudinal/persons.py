"""Patient-level equivalence classes and risk (El Emam & Arbuckle, *Anonymizing Health Data*, ch. 4).

Cross-sectional k-anonymity counts rows; in longitudinal data a person has
many rows, so a "class of 3" may be one patient with three claims and their
risk is 1, not 1/3 (ch. 4, "Don't Treat It Like Cross-Sectional Data").
Here class sizes count distinct persons:

* :func:`patient_risk` — classes of the level-1 QIs (fixed per person),
  prosecutor risk ``1/|class in persons|`` per person.
* :func:`complete_knowledge` — the adversary knows all of a person's events
  (ch. 4, "De-Identifying Under Complete Knowledge"); each person is flattened
  to one signature: level-1 values plus, *exact*, the sorted multiset of
  level-2 tuples (values of one event kept together) or, *approximate*, one
  sorted multiset per level-2 QI (which value went with which event unknown).
  Sorting integer codes stands in for the book's consistently ordered hashes;
  grouping by the multiset also groups by the number of events, as the book's
  one flat table per visit count does.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import DeidInputError
from .integer_codes import factorize, joint_codes, require_columns, require_rows


@dataclass(frozen=True)
class PatientRisk:
    """Per-person risk and its summary (persons and events counted separately)."""

    per_person: pd.DataFrame  # index: person id; columns: events, class_id, class_size, risk
    threshold: float
    persons: int = field(init=False)
    events: int = field(init=False)
    max_risk: float = field(init=False)
    average_risk: float = field(init=False)
    high_risk_proportion: float = field(init=False)
    k: int = field(init=False)

    def __post_init__(self) -> None:
        pp = self.per_person
        risk = pp["risk"].to_numpy()
        object.__setattr__(self, "persons", int(len(pp)))
        object.__setattr__(self, "events", int(pp["events"].sum()))
        object.__setattr__(self, "max_risk", float(risk.max()))
        object.__setattr__(self, "average_risk", float(risk.mean()))
        object.__setattr__(self, "high_risk_proportion", float((risk > self.threshold).mean()))
        object.__setattr__(self, "k", int(pp["class_size"].min()))

    def summary(self) -> dict:
        """JSON-ready numbers: persons, events, max/average risk, proportion above the threshold, k."""
        return {"persons": self.persons, "events": self.events, "max_risk": self.max_risk,
                "average_risk": self.average_risk, "high_risk_proportion": self.high_risk_proportion,
                "threshold": self.threshold, "k": self.k}


def person_codes(df: pd.DataFrame, person: str) -> tuple[np.ndarray, pd.Index]:
    """Row -> person index (0..P-1, in order of first appearance) and the person ids."""
    require_columns(df, [person], "person")
    require_rows(df)
    if df[person].isna().any():
        raise DeidInputError(f"person column {person!r} has empty values")
    return factorize(df[person])


def level1_table(df: pd.DataFrame, *, person: str, level1: Sequence[str]) -> pd.DataFrame:
    """One row per person: their level-1 values and their number of events.

    Raises :class:`~deid_core.errors.DeidInputError` (a ``ValueError``) naming
    the first person whose level-1 values differ across their rows.
    """
    return person_level1(df, person, level1)[0]


def person_level1(df: pd.DataFrame, person: str, level1: Sequence[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """:func:`level1_table` and the row -> person index it is built on."""
    pcode, pids = person_codes(df, person)
    require_columns(df, level1, "level-1")
    first = np.full(len(pids), -1, dtype=np.int64)
    # first row of each person (rows scanned backwards so the earliest wins)
    first[pcode[::-1]] = np.arange(len(df))[::-1]
    for c in level1:
        codes, _ = factorize(df[c])
        differs = codes != codes[first[pcode]]
        if differs.any():
            row = int(np.flatnonzero(differs)[0])
            pid = pids[pcode[row]]
            raise DeidInputError(f"person {pid!r} has different level-1 values in column {c!r} "
                                 f"({df[c].iloc[first[pcode[row]]]!r} and {df[c].iloc[row]!r})")
    out = df.iloc[first][list(level1)].copy()
    out.index = pd.Index(pids, name=person)
    out["events"] = np.bincount(pcode, minlength=len(pids))
    return out, pcode


def persons_per_class(cls: np.ndarray, pcode: np.ndarray) -> np.ndarray:
    """Per row: how many distinct persons have a row in its class (``cls``: any integer class id per row)."""
    inv = pd.factorize(cls)[0]
    n_persons = int(pcode.max()) + 1 if len(pcode) else 1
    pairs = pd.unique(inv.astype(np.int64) * n_persons + pcode)  # hash-based: faster than np.unique here
    return np.bincount(pairs // n_persons, minlength=int(inv.max()) + 1 if len(inv) else 0)[inv]


def person_class_size(cls: np.ndarray, pcode: np.ndarray, n_persons: int, keep: np.ndarray | None = None,
                      ) -> np.ndarray:
    """Per person: the smallest class, in distinct persons, among their rows (their prosecutor risk is 1 / it).

    Rows outside ``keep`` (e.g. fully suppressed) are left out; a person with no kept row gets 0.
    """
    if keep is not None:
        cls, pcode = cls[keep], pcode[keep]
    out = np.full(n_persons, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(out, pcode, persons_per_class(cls, pcode))
    out[out == np.iinfo(np.int64).max] = 0
    return out


def persons_to_suppress(cls: np.ndarray, pcode: np.ndarray, n_persons: int, k: int,
                        keep: np.ndarray | None = None) -> np.ndarray:
    """Per person: suppressed (all their rows) so that every class holds at least ``k`` of the persons kept.

    A person is suppressed when one of their rows is in a class of fewer than
    ``k`` distinct persons (:func:`person_class_size`). Suppressing a person
    also removes their rows from their other classes, which can leave a class
    below k that was not before; the pass is repeated until no class of the
    persons kept is below k. The result is the largest set of persons whose
    classes all hold k of them (unique; it only grows when classes merge, so
    more generalization never suppresses more persons). Rows outside ``keep``
    (fully missing) take no part; a person with no such row is never suppressed.
    """
    gone = np.zeros(n_persons, dtype=bool)
    if keep is not None:
        cls, pcode = cls[keep], pcode[keep]
    if not len(pcode):
        return gone
    # the distinct (class, person) pairs, grouped by person, once; each pass is then a bincount
    c = pd.factorize(cls)[0].astype(np.int64)
    pair = pd.unique(c * n_persons + pcode)
    pc, pp = pair // n_persons, pair % n_persons
    order = np.argsort(pp, kind="stable")
    pc, pp = pc[order], pp[order]
    starts = np.flatnonzero(np.append(True, pp[1:] != pp[:-1]))
    present = pp[starts]
    alive = np.ones(len(pc), dtype=bool)
    while True:
        size = np.bincount(pc[alive], minlength=int(c.max()) + 1)   # persons kept per class
        smallest = np.minimum.reduceat(size[pc], starts)           # per person: their smallest class
        new = (smallest < k) & ~gone[present]
        if not new.any():
            return gone
        gone[present[new]] = True
        alive = ~gone[pp]


def person_index(frame: pd.DataFrame, person: str | None, level1: Sequence[str] = ()) -> np.ndarray | None:
    """Row -> person index when a person column is given (level-1 values checked per person), else None."""
    return None if person is None else person_level1(frame, person, level1)[1]


def _class_sizes(cid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense class id and class size (in persons) per person."""
    cid = factorize(cid)[0]
    return cid, np.bincount(cid)[cid]


def _result(table: pd.DataFrame, key: np.ndarray, threshold: float) -> PatientRisk:
    cid, size = _class_sizes(key)
    pp = pd.DataFrame({"events": table["events"].to_numpy(), "class_id": cid, "class_size": size,
                       "risk": 1.0 / size}, index=table.index)
    return PatientRisk(pp, threshold=threshold)


def patient_risk(df: pd.DataFrame, *, person: str, level1: Sequence[str], threshold: float = 0.05) -> PatientRisk:
    """Prosecutor risk per person on the level-1 QIs, classes counted in distinct persons."""
    table = level1_table(df, person=person, level1=level1)
    return _result(table, joint_codes(table, list(level1)), threshold)


def refine_by_multiset(cid: np.ndarray, pcode: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Split per-person classes ``cid`` so that persons in one class also share the multiset of ``value``.

    The person's values are sorted; the class is refined by the r-th smallest
    value for r = 0, 1, ... (only persons with more than r values take part
    in step r), so the work is one pass over the rows and memory is O(persons).
    """
    order = np.lexsort((value, pcode))
    v = value[order]
    count = np.bincount(pcode, minlength=len(cid))
    start = np.cumsum(count) - count
    cid = factorize(cid)[0]
    width = int(value.max()) + 2 if len(value) else 1
    for r in range(int(count.max()) if len(count) else 0):
        sub = np.flatnonzero(count > r)
        pair = cid[sub] * width + v[start[sub] + r] + 1
        new, _ = factorize(pair)
        cid = cid.copy()
        cid[sub] = int(cid.max()) + 1 + new  # persons with <= r values keep their class, the others split off
        cid = factorize(cid)[0] if r % 64 == 63 else cid
    return cid


def complete_knowledge(df: pd.DataFrame, *, person: str, level1: Sequence[str], level2: Sequence[str],
                       exact: bool = False, threshold: float = 0.05) -> PatientRisk:
    """Patient-level classes under complete knowledge of all events (El Emam & Arbuckle, ch. 4).

    ``exact=True``: the adversary knows which values belong to the same event
    (each event is one tuple of the level-2 values; ch. 4 "Exact Complete
    Knowledge"). ``exact=False`` (default, the book's "probably more
    practical" approximate variant): each level-2 QI's values are an
    independent multiset per person.
    """
    table, pcode = person_level1(df, person, level1)
    require_columns(df, level2, "level-2")
    cid = joint_codes(table, list(level1))
    if exact:
        cid = refine_by_multiset(cid, pcode, joint_codes(df, list(level2)))
    else:
        for c in level2:
            cid = refine_by_multiset(cid, pcode, factorize(df[c])[0])
    return _result(table, cid, threshold)


def complete_knowledge_k(df: pd.DataFrame, *, person: str, level1: Sequence[str], level2: Sequence[str],
                         exact: bool = False) -> int:
    """Smallest class size, in persons, under complete knowledge (see :func:`complete_knowledge`)."""
    return complete_knowledge(df, person=person, level1=level1, level2=level2, exact=exact).k
