"""The comparison-engine interface and the round model both halves share.

An engine is one way to lay out a round (docs/protocol.md: "Exact matching at
scale", "Lookup", "Fuzzy, multi-field matching"): the querier *prepares* its
encodings and what it needs to read the results, the holder *plans* the
comparison units (row, [(query position, encoding)]) from the received query,
and the querier reads the *matches* from the opened attachments.  Engines see
the scheme only through the encoding length and never compute on ciphertexts.
"""
from __future__ import annotations

import base64
import json
import threading
from dataclasses import dataclass, field as dataclass_field
from typing import Any, Callable, Iterable, Iterator, Protocol

import numpy as np
import pandas as pd

from common.schemes import Scheme, get_scheme
from party_client.crypto.cuckoo import CuckooParams
from party_client.crypto.encoding import lookup_words
from party_client.matching.keys import HolderKeys, QuerierKeys
from party_client.protocol.engines.session_indexes import SessionIndexes
from proto import linkage_pb2 as pb

CIPHERTEXTS_PER_RECORD = 2048

Progress = Callable[[str, int], Callable[[Iterable], Iterator]]
Unit = tuple[int, list[tuple[int, bytes]]]                      # (holder row, [(query position, encoding)])
Results = list[tuple[pb.RowAttachment, list[int]]]              # (opened attachment, zero comparisons or terms)
Matches = list[tuple[list[tuple[int, int]], list]]              # ([(table, key index)], released values)


@dataclass
class QueryOptions:
    key_bits: int = 0                   # 0: the scheme's default size (Paillier: 2048 bits)
    scheme: Scheme = dataclass_field(default_factory=get_scheme)     # the default scheme unless named
    timeout: float = 3600.0
    cuckoo: CuckooParams = dataclass_field(default_factory=CuckooParams)
    lookup_buckets: int = 0
    progress: bool | None = None
    cluster: Any = None                 # a common.distributed.Cluster: the encryption runs on the querier's Dask workers


@dataclass
class PreparedQuery:
    """What the querier sends (header) and keeps to read the results."""

    secret: bytes
    header: pb.QueryHeader
    slots: list[tuple[int, int] | None]     # per ciphertext: (table, key index), or None for padding
    buckets: list[int]                      # lookup only
    # Blocked rules: per entry (a record in a pass) its block, record and pass, and where its
    # ciphertexts (one per comparison group of the pass) start; offsets end with the total.
    blocks: list[str] = dataclass_field(default_factory=list)
    entry_records: list[int] = dataclass_field(default_factory=list)
    entry_passes: list[int] = dataclass_field(default_factory=list)
    entry_offsets: list[int] = dataclass_field(default_factory=list)
    encryptions: int = 0
    # weighted (level) rules: per (match index, querier record) the labels of the levels K reported
    decided: dict[tuple, list[str]] = dataclass_field(default_factory=dict)

    def to_state(self) -> dict:
        """What opening and placing the results needs (kept, sealed, in the querier's session state)."""
        return {"header": base64.b64encode(self.header.SerializeToString()).decode(),
                "slots": [list(slot) if slot is not None else None for slot in self.slots],
                "entry_records": [int(r) for r in self.entry_records], "entry_passes": list(self.entry_passes),
                "entry_offsets": list(self.entry_offsets), "encryptions": self.encryptions}

    @classmethod
    def from_state(cls, saved: dict) -> "PreparedQuery":
        header = pb.QueryHeader.FromString(base64.b64decode(saved["header"]))
        return cls(header.session_secret, header, [tuple(slot) if slot is not None else None for slot in saved["slots"]],
                   [], [], saved["entry_records"], saved["entry_passes"], saved["entry_offsets"],
                   saved.get("encryptions", 0))


@dataclass
class ReceivedQuery:
    """The holder's view of an opened query: its header, how many ciphertexts it holds, and the
    clear parts of its chunks (lookup buckets, blocks of blocked entries)."""

    header: pb.QueryHeader
    ciphertexts: int
    buckets: list[int]
    blocks: list[str]


@dataclass
class RoundPlan:
    """What the holder compares in one round: units (row, [(query position, encoding)]), and for
    blocked rules the pair rule K applies and the candidate pairs per pass."""

    units: list[Unit]
    segments: list[tuple[int, int, pb.PairRule]] | None = None   # blocked: (start, end, rule) per pass
    pass_pairs: list[int] = dataclass_field(default_factory=list)


class HolderData:
    """The holder's table prepared once: its matching keys and JSON payloads per row, the digests
    lookups bucket (computed once), and per-session indexes an engine derives from them (kept
    across a session's rounds, :class:`SessionIndexes`)."""

    def __init__(self, frame: pd.DataFrame, keys: HolderKeys, release_columns: list[str],
                 progress: bool | None = None) -> None:
        self.keys = keys
        self.progress = progress
        self.rows = keys.rows
        self.release_columns = list(release_columns)
        released = frame[self.release_columns].astype(object).where(frame[self.release_columns].notna(), None)
        self.payloads = [[json.dumps(_plain(v), ensure_ascii=False) for v in row]
                         for row in released.itertuples(index=False, name=None)] if release_columns else None
        self.longest_payload = max((len(pb.RowAttachment(values=v).SerializeToString()) for v in self.payloads),
                                   default=0) if self.payloads else 0
        self.indexes = SessionIndexes()
        self._words: np.ndarray | None = None
        self._words_lock = threading.Lock()

    def keep_lookup_indexes(self, budget_bytes: int) -> None:
        """Keep the per-session indexes within ``budget_bytes`` (``party hold --lookup-memory``)."""
        self.indexes.budget_bytes = budget_bytes

    def session_index(self, session_id: str, parameters: Any, build: Callable[[], Any],
                      expires_at: float = 0.0) -> Any:
        """``build()`` for this session and parameters, built once and kept while the session lives."""
        return self.indexes.get(session_id, parameters, build, expires_at)

    def lookup_words(self) -> np.ndarray:
        """The unkeyed digests of the keyed rows' first key (:func:`lookup_words`), computed once."""
        with self._words_lock:
            if self._words is None:
                values = self.keys.values[0]
                self._words = lookup_words(self.keys.names[0], [values[row] for row in self.rows])
            return self._words


def _plain(value):
    """numpy/pandas scalars to JSON-able Python values."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


@dataclass
class HolderContext:
    """What an engine's holder half needs besides the query: the session, the holder's data, the
    scheme's encoding length, and the holder's keyed orders (fixed per session from a local secret)."""

    session_id: str
    data: HolderData
    scheme: Scheme
    encoding_length: int
    shuffle: Callable[[str, np.ndarray], list[int]]      # a permutation, fixed per (session, purpose)
    rank: Callable[[str], Callable[[int], bytes]]        # a sort key of rows, fixed per session
    progress: bool | None
    expires_at: float = 0.0                              # when the session's key expires (its indexes go)


class Engine(Protocol):
    """Both halves of one comparison engine."""

    def declared(self, keys: QuerierKeys, options: QueryOptions) -> int:
        """At least the ciphertexts of the query :meth:`prepare` will build (declared when opening)."""

    def prepare(self, keys: QuerierKeys, options: QueryOptions, length: int, lookup_secret: bytes | None,
                progress: Progress) -> tuple[PreparedQuery, list[bytes | None]]:
        """Querier: the query header and what to keep, and the encodings to encrypt (None: padding)."""

    def planned_from_header(self, header: pb.QueryHeader) -> int | None:
        """Holder: when :meth:`plan` needs only the header, the ciphertexts the query must carry (the
        holder then plans while the rest streams in and checks the count at the end); else None."""

    def plan(self, context: HolderContext, query: ReceivedQuery) -> RoundPlan | str:
        """Holder: the comparison units of the round, or the reason to refuse the query."""

    def matches(self, prepared: PreparedQuery, results: Results, keys: QuerierKeys) -> Matches:
        """Querier: the matching holder rows, each with the querier keys it matched and its values."""

    def facts(self, keys: QuerierKeys, prepared: PreparedQuery, options: QueryOptions) -> dict:
        """Querier: what the round's report says about the engine's layout."""
