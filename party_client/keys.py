"""Matching keys: what each party compares, as one or more key tables.

A *key table* is one exact equality the protocol tests: the identifier in
exact mode, or one conjunction of a fuzzy rule in disjunctive normal form
(:mod:`party_client.rules`).  The querier may hold several keys per record in
a table (e.g. birth year - 1, year, year + 1 for the NDI rule) and the same
key for several records (duplicates); the holder has at most one key per row
and table.  Keys are strings; the encoding (:mod:`party_client.encoding`)
keys them with the session secret under the table's name.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from party_client.normalize import normalize

KEY_SEPARATOR = "\x1f"        # joins a conjunction's parts; normalized parts never contain it


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
    blocked: object | None = None  # fuzzy rules with blocking: a party_client.blocking.BlockedQuery

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
    blocked: object | None = None    # fuzzy rules with blocking: a party_client.blocking.BlockedHolder

    @property
    def rows(self) -> np.ndarray:
        """Rows with at least one key (rows with none are never compared)."""
        present = np.zeros(len(self.values[0]) if self.values else 0, dtype=bool)
        for column in self.values:
            present |= np.array([v is not None for v in column], dtype=bool)
        return np.flatnonzero(present)


def exact_spec(field: str, field_type: str) -> str:
    return f"exact/{field}/{field_type}"


def exact_querier_keys(column: pd.Series, field_type: str, field: str = "id") -> QuerierKeys:
    normalized = normalize(column, field_type).reset_index(drop=True)
    return QuerierKeys(len(normalized), [QuerierTable.from_pairs(field, normalized)], exact_spec(field, field_type))


def exact_holder_keys(column: pd.Series, field_type: str, field: str = "id") -> HolderKeys:
    normalized = normalize(column, field_type)
    return HolderKeys([field], [[v if v else None for v in normalized.tolist()]], exact_spec(field, field_type))
