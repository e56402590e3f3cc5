"""Matching keys: what each party compares, as one or more key tables.

A *key table* is one exact equality the protocol tests: the identifier in
exact mode, or one conjunction of a fuzzy rule in disjunctive normal form
(:mod:`party_client.matching.term_rules`).  The querier may hold several keys per record in
a table (e.g. birth year - 1, year, year + 1 for the NDI rule) and the same
key for several records (duplicates); the holder has at most one key per row
and table.  Keys are strings; the encoding (:mod:`party_client.crypto.encoding`)
keys them with the session secret under the table's name.  Fuzzy rules with
blocking passes (:mod:`party_client.matching.blocking`) add each side's blocked
data: the passes, their comparison layouts and the keys of every comparison group.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from party_client.matching.fields import KEY_SEPARATOR
from party_client.matching.layout import PairLayout
from party_client.matching.normalize import normalize

__all__ = ["KEY_SEPARATOR", "QuerierTable", "QuerierKeys", "HolderKeys", "PlannedPass", "BlockedQuery",
           "BlockedHolder", "exact_querier_keys", "exact_holder_keys", "exact_spec"]


@dataclass
class PlannedPass:
    """One blocking pass as the querier sends it: ``buckets`` bins of ``capacity`` entries, each entry a
    record or a dummy (docs/protocol.md, "Blocking passes as padded bins")."""

    name: str
    buckets: int                 # bins
    capacity: int                # entries per bin
    records: np.ndarray          # querier record per entry, -1 for a dummy
    keys: list[str]              # the pass's clear key per entry ('' for a dummy): the gate's key
    left_out_records: np.ndarray  # records with a key that the bins have no room for (sorted)

    @property
    def placed(self) -> int:
        return int((self.records >= 0).sum())

    @property
    def left_out(self) -> int:
        return len(self.left_out_records)


@dataclass
class BlockedQuery:
    """The querier's blocked data: the session secret its blocks are keyed with, per pass its layout
    and entries, and per comparison group the querier's key per record ('' missing)."""

    secret: bytes
    layouts: list[PairLayout]
    passes: list[PlannedPass]
    group_keys: dict[str, list[str]]          # per encoding domain (a group label), per record


@dataclass
class BlockedHolder:
    """The holder's blocked data: per pass its layout and clear block keys; per group the keys
    of every variant per row."""

    layouts: list[PairLayout]
    # per group label, per comparison (variant), per row: the key (compared with querier slot 0), or
    # (querier slot, key) where the group has several slots; None or '' missing
    group_keys: dict[str, list[list]]
    block_keys: list[list[str | None]]               # per pass, per row: the clear key


@dataclass
class QuerierTable:
    name: str
    values: list[str]              # distinct keys
    value_index: np.ndarray        # per (key, record) pair: index into ``values``
    record_index: np.ndarray       # per pair: the record

    @classmethod
    def from_pairs(cls, name: str, keys: pd.Series) -> "QuerierTable":
        """``keys``: a key string per (record index label); blank or missing keys dropped."""
        keys = keys[keys.notna() & (keys != "")]
        codes, uniques = pd.factorize(keys)
        return cls(name, [str(v) for v in uniques], np.asarray(codes, dtype=np.int64),
                   np.asarray(keys.index, dtype=np.int64))


@dataclass
class QuerierKeys:
    records: int
    tables: list[QuerierTable]
    spec: str                      # how the keys were derived; the holder must agree
    blocked: BlockedQuery | None = None     # fuzzy rules with blocking passes

    @property
    def blank(self) -> int:
        """Records without any key (they never match)."""
        keyed = set()
        for table in self.tables:
            keyed.update(table.record_index.tolist())
        return self.records - len(keyed)

    def pairs(self) -> pd.DataFrame:
        """All (table, key, record) triples."""
        return pd.concat([pd.DataFrame({"table": t, "value": table.value_index, "record": table.record_index})
                          for t, table in enumerate(self.tables)], ignore_index=True)


@dataclass
class HolderKeys:
    names: list[str]
    values: list[list[str | None]]   # per table, per row: the row's key or None
    spec: str
    blocked: BlockedHolder | None = None      # fuzzy rules with blocking passes

    @property
    def rows(self) -> np.ndarray:
        """Rows with at least one key (rows with none are never compared)."""
        present = np.zeros(len(self.values[0]) if self.values else 0, dtype=bool)
        for column in self.values:
            present |= np.array([v is not None for v in column], dtype=bool)
        return np.flatnonzero(present)

    @property
    def people(self) -> int:
        """The people the keyed rows hold, as far as the keys tell: rows with the same keys in every
        table count once (an insurer's claims and a hospital's visits repeat a person's identifier).
        With blocking passes the keyed rows themselves: their keys are per pass, and a precision
        target's threshold is derived from that count (:meth:`LevelRules.announced_rows`)."""
        rows = self.rows
        if self.blocked is not None or not len(rows):
            return len(rows)
        keyed = pd.DataFrame({i: np.asarray(column, dtype=object)[rows] for i, column in enumerate(self.values)})
        return len(keyed.drop_duplicates())


def exact_spec(field: str, field_type: str) -> str:
    return f"exact/{field}/{field_type}"


def exact_querier_keys(column: pd.Series, field_type: str, field: str = "id") -> QuerierKeys:
    normalized = normalize(column, field_type).reset_index(drop=True)
    return QuerierKeys(len(normalized), [QuerierTable.from_pairs(field, normalized)], exact_spec(field, field_type))


def exact_holder_keys(column: pd.Series, field_type: str, field: str = "id") -> HolderKeys:
    normalized = normalize(column, field_type)
    return HolderKeys([field], [[v if v else None for v in normalized.tolist()]], exact_spec(field, field_type))
