"""The linking protocol seen from each party (docs/protocol.md).

Querier Q: open a session (K issues a fresh Paillier key), draw the session
secret ``s``, encode and encrypt its distinct keys into one padded cuckoo
table per key table (the identifier, or each term of a fuzzy rule; join,
dedup) or into bucketed entries (lookup), seal the query to the holder, wait
for the round, then open the attachments of the matching rows.

Holder H: fetch the sealed query, order its rows by a permutation fixed per
session from a local secret (a resumed holder resends identical batches),
compute ``h`` blinded comparisons per row and table with a fresh ``r`` each,
attach to every row a sealed attachment (positions + released values, padded
to one length) and stream the batches to K.  H never learns what matched.
"""
from __future__ import annotations

import base64
import bisect
import hashlib
import hmac
import json
import logging
import os
import secrets
import threading
import time
from collections import OrderedDict, defaultdict, deque
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field as dataclass_field
from typing import Callable, Iterator

import numpy as np
import pandas as pd
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

from party_client.blocking import candidate_pairs, holder_pass_blocks
from party_client.cuckoo import EMPTY, CuckooFailure, CuckooParams, bin_count, padded_size, place
from party_client.encoding import SECRET_BYTES, bin_positions, bucket, encode, encoding_bytes
from party_client.encrypt_worker import MIN_ITEMS_FOR_WORKERS, encrypt_in_worker
from party_client.errors import PartyError
from party_client.identity import PartyDir
from party_client.keys import HolderKeys, QuerierKeys
from common.schemes.paillier import (Encryptor, PublicKey, release_gil, blinded_comparison, blinding_factor,
                                   negated_generator_power, worker_pool)
from party_client.progress import bar, tqdm_rows
from party_client.seal import SessionCipher, open_records, seal_records
from party_client.sessions_state import SessionState
from party_client.transport import Connection, ConnectionProblem, KeyHolderRefusal
from party_client.waiting import EVERY, human_seconds
from proto import linkage_pb2 as pb

log = logging.getLogger("party")
MODES = {"join": pb.JOIN, "dedup": pb.DEDUP, "lookup": pb.LOOKUP}
MODE_NAMES = {value: name for name, value in MODES.items()}
CIPHERTEXTS_PER_RECORD = 2048
CUCKOO_ATTEMPTS = 8
LOOKUP_DECLARED = 1 << 16
BUSY_POLL_SECONDS = 1.0     # a busy holder checks for new rounds this often
LOOKUP_INDEX_ROWS = 2_000_000   # rows' encodings kept across the cached lookup indexes (~256 B each)


class HolderTimeout(PartyError):
    """The holder did not serve the round in time (the session and round stay open)."""


def message_context(session_id: str, kind: str) -> bytes:
    return f"securelink/{session_id}/{kind}".encode()


def attachment_cipher(secret: bytes, session_id: str, round_no: int) -> SessionCipher:
    return SessionCipher(secret, session_id, round_no, b"attachment")


def note_cipher(secret: bytes, session_id: str, round_no: int) -> SessionCipher:
    return SessionCipher(secret, session_id, round_no, b"holder-note")


def party_key(connection: Connection, name: str) -> X25519PublicKey:
    info = connection.call("GetParty", pb.GetPartyRequest(name=name))
    return X25519PublicKey.from_public_bytes(info.x25519_public_key)


# ---------------------------------------------------------------------------
# Querier
# ---------------------------------------------------------------------------

@dataclass
class QueryOptions:
    key_bits: int = 2048
    fast_blinding: bool = False
    timeout: float = 3600.0
    cuckoo: CuckooParams = dataclass_field(default_factory=CuckooParams)
    lookup_buckets: int = 0
    progress: bool | None = None


@dataclass
class QueryOutcome:
    """What the querier learned: per matching holder row, the keys it matched and its values."""

    session_id: str
    round: int
    matches: list[tuple[list[tuple[int, int]], list]]   # ([(table, key index)], released values)
    release_columns: list[str]
    blinding: str
    note: str
    facts: dict


@dataclass
class PreparedQuery:
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


def prepare_tables(keys: QuerierKeys, options: QueryOptions, modulus_bits: int,
                   progress) -> tuple[PreparedQuery, list[bytes | None]]:
    """Encode every table's keys under a fresh ``s`` and cuckoo-place them (one table per term)."""
    params = options.cuckoo
    for _ in range(CUCKOO_ATTEMPTS):
        secret = os.urandom(SECRET_BYTES)
        specs, slots, encoded = [], [], []
        try:
            for t, table in enumerate(keys.tables):
                bins = bin_count(len(table.values), params)
                encodings = [encode(secret, table.name, v, modulus_bits)
                             for v in progress(f"encode {table.name}", len(table.values))(table.values)]
                positions = [bin_positions(secret, x, bins, params.hash_functions) for x in encodings]
                placed, stashed = place(positions, bins, params.stash)
                cells = placed + stashed + [EMPTY] * (params.stash - len(stashed))
                slots.extend(None if k == EMPTY else (t, k) for k in cells)
                encoded.append(encodings)
                specs.append(pb.TableSpec(name=table.name, bins=bins, hash_functions=params.hash_functions,
                                          stash=params.stash))
            break
        except CuckooFailure:
            log.info("cuckoo insertion failed; drawing a fresh session secret")
    else:
        raise PartyError("cuckoo table construction failed repeatedly; raise the expansion factor")
    header = pb.QueryHeader(session_secret=secret, key_spec=keys.spec, tables=specs,
                            request_fast_blinding=options.fast_blinding, records_per_chunk=CIPHERTEXTS_PER_RECORD)
    flat = [None if slot is None else encoded[slot[0]][slot[1]] for slot in slots]
    return PreparedQuery(secret, header, slots, []), flat


def prepare_lookup(keys: QuerierKeys, options: QueryOptions, modulus_bits: int, secret: bytes,
                   progress) -> tuple[PreparedQuery, list[bytes]]:
    """Bucketed entries: each distinct key reveals ``PRF_s(X) mod B_L``; padded with dummies."""
    if len(keys.tables) != 1:
        raise PartyError("a lookup compares one identifier; fuzzy rules need join or dedup")
    table = keys.tables[0]
    encodings = [encode(secret, table.name, v, modulus_bits) for v in table.values]
    entries = padded_size(len(encodings)) if len(encodings) > 16 else 1 << max(0, (len(encodings) - 1).bit_length())
    buckets = [bucket(secret, x, options.lookup_buckets) for x in encodings]
    buckets += [secrets.randbelow(options.lookup_buckets) for _ in range(entries - len(encodings))]
    slots = [(0, k) for k in range(len(encodings))] + [None] * (entries - len(encodings))
    header = pb.QueryHeader(session_secret=secret, key_spec=keys.spec, tables=[pb.TableSpec(name=table.name)],
                            lookup_buckets=options.lookup_buckets, entries=entries,
                            request_fast_blinding=options.fast_blinding, records_per_chunk=CIPHERTEXTS_PER_RECORD)
    return PreparedQuery(secret, header, slots, buckets), encodings + [None] * (entries - len(encodings))


def prepare_blocked(keys: QuerierKeys, options: QueryOptions, modulus_bits: int,
                    progress) -> tuple[PreparedQuery, list[bytes | None]]:
    """Blocked rules: per pass, each record's block and one encoded key per comparison group of the pass.

    A record missing a group's key gets a random ciphertext there (it never agrees).
    """
    blocked = keys.blocked
    encodings, blocks, specs = [], [], []
    entry_records, entry_passes, offsets = [], [], [0]
    cache: dict[tuple[str, int], bytes | None] = {}
    for index, (planned, layout) in enumerate(zip(blocked.passes, blocked.layouts)):
        specs.append(pb.BlockingPassSpec(name=planned.name, buckets=planned.buckets, records=len(planned.records)))
        labels = [g.label for g in layout.groups]
        for record in progress(f"encode pass {planned.name}", len(planned.records))(planned.records.tolist()):
            for label in labels:
                if (label, record) not in cache:
                    value = blocked.group_keys[label][record]
                    cache[label, record] = (encode(blocked.secret, f"pair/{label}", value, modulus_bits)
                                            if value else None)
                encodings.append(cache[label, record])
            entry_records.append(record)
            entry_passes.append(index)
            offsets.append(len(encodings))
        blocks.extend(planned.blocks)
    header = pb.QueryHeader(session_secret=blocked.secret, key_spec=keys.spec, passes=specs,
                            pair_layout=";".join(layout.name for layout in blocked.layouts),
                            request_fast_blinding=options.fast_blinding, records_per_chunk=CIPHERTEXTS_PER_RECORD)
    return PreparedQuery(blocked.secret, header, [], [], blocks, entry_records, entry_passes, offsets), encodings


def declared_ciphertexts(mode: str, keys: QuerierKeys, options: QueryOptions) -> int:
    """At least the ciphertexts of the query that ``prepare_*`` will build (a lookup session is reused,
    so it declares at least ``LOOKUP_DECLARED``)."""
    if mode == "lookup":
        return max(LOOKUP_DECLARED, padded_size(len(keys.tables[0].values)))
    if keys.blocked is not None:
        return sum(len(p.records) * len(layout.groups) for p, layout in zip(keys.blocked.passes, keys.blocked.layouts))
    return sum(bin_count(len(t.values), options.cuckoo) + options.cuckoo.stash for t in keys.tables)


def encrypt_slots(key: PublicKey, encodings: list[bytes | None], progress) -> list[bytes]:
    """Encrypt every slot: real keys as ``E(X)``, padding as ``E(random)``.

    Large tables are shared with worker processes (raw bytes over pipes, see
    :mod:`party_client.encrypt_worker`): gmpy2 holds the GIL for the comb's multiplications, so
    threads do not help.
    """
    encryptor = Encryptor(key)
    cores = os.cpu_count() or 1
    jobs, mine = [], encodings
    if cores > 1 and len(encodings) >= MIN_ITEMS_FOR_WORKERS:
        share = -(-len(encodings) // cores)
        mine = encodings[:share]
        jobs = [encrypt_in_worker(key, encodings[i:i + share], encoding_bytes(key.bits))
                for i in range(share, len(encodings), share)]
    ciphertexts = [key.to_bytes(encryptor.encrypt_random() if x is None else encryptor.encrypt(int.from_bytes(x, "big")))
                   for x in progress("encrypt", len(mine))(mine)]
    for job in jobs:
        ciphertexts.extend(job.result())
    return ciphertexts


def query_records(prepared: PreparedQuery, ciphertexts: list[bytes]) -> Iterator[bytes]:
    """The header, then chunks of about ``CIPHERTEXTS_PER_RECORD`` ciphertexts (blocked rules: whole entries)."""
    yield prepared.header.SerializeToString()
    offsets = prepared.entry_offsets
    if offsets:
        first = 0
        while first < len(offsets) - 1:
            last = max(first + 1, bisect.bisect_right(offsets, offsets[first] + CIPHERTEXTS_PER_RECORD) - 1)
            yield pb.CiphertextChunk(ciphertexts=b"".join(ciphertexts[offsets[first]:offsets[last]]),
                                     blocks=prepared.blocks[first:last]).SerializeToString()
            first = last
        return
    for start in range(0, len(ciphertexts), CIPHERTEXTS_PER_RECORD):
        chunk = pb.CiphertextChunk(ciphertexts=b"".join(ciphertexts[start:start + CIPHERTEXTS_PER_RECORD]))
        if prepared.buckets:
            chunk.buckets.extend(prepared.buckets[start:start + CIPHERTEXTS_PER_RECORD])
        yield chunk.SerializeToString()


Results = list[tuple[pb.RowAttachment, list[int]]]


def table_matches(prepared: PreparedQuery, results: Results) -> list[tuple[list[tuple[int, int]], list]]:
    """Cuckoo tables and lookups: the zero comparisons' table positions name the querier's keys."""
    matches = []
    for attachment, indices in results:
        if any(i >= len(attachment.positions) for i in indices):
            raise PartyError("a result does not fit its attachment")
        hits = {prepared.slots[p] for p in (attachment.positions[i] for i in indices)
                if p < len(prepared.slots) and prepared.slots[p] is not None}
        if hits:
            matches.append((sorted(hits), [json.loads(v) for v in attachment.values]))
    return matches


def blocked_matches(prepared: PreparedQuery, results: Results,
                    layouts: list) -> list[tuple[list[tuple[int, int]], list]]:
    """Blocked rules: each result is a pair (its first position names our entry) and its pass's terms that held.

    The same holder row found in several passes (same row tag) is one match.
    """
    by_row: dict[bytes, tuple[set, list]] = {}
    offsets = prepared.entry_offsets
    for attachment, fired in results:
        position = attachment.positions[0] if attachment.positions else offsets[-1]
        entry = bisect.bisect_right(offsets, position) - 1
        if not 0 <= entry < len(prepared.entry_records):
            raise PartyError("a result does not fit its attachment")
        term_ids = layouts[prepared.entry_passes[entry]].term_ids
        if not fired or max(fired) >= len(term_ids):
            raise PartyError("a result does not fit its attachment")
        record = prepared.entry_records[entry]
        hits, _ = by_row.setdefault(attachment.row_tag, (set(), [json.loads(v) for v in attachment.values]))
        hits.update((term_ids[t], record) for t in fired)
    return [(sorted(hits), values) for hits, values in by_row.values()]


class Querier:
    """Runs rounds as the querier of a session."""

    def __init__(self, connection: Connection, party: PartyDir) -> None:
        self.connection = connection
        self.party = party
        self.notice = connection.notice

    def _progress(self, options: QueryOptions):
        def wrap(phase: str, total: int):
            def iterate(items):
                with bar(total, f"{self.party.name}: {phase}", options.progress) as progress:
                    for item in items:
                        yield item
                        progress.update()
            return iterate
        return wrap

    def open_session(self, mode: str, holder: str, options: QueryOptions, ttl: float = 0,
                     keys: QuerierKeys | None = None) -> pb.SessionInfo:
        """Open a session; with ``keys`` it declares its query's size (K refuses longer queries)."""
        return self.connection.call("OpenSession", pb.OpenSessionRequest(
            mode=MODES[mode], holder=holder, key_bits=options.key_bits, ttl_seconds=int(ttl),
            query_ciphertexts=declared_ciphertexts(mode, keys, options) if keys is not None else 0))

    def run(self, session: pb.SessionInfo, keys: QuerierKeys, options: QueryOptions,
            lookup_secret: bytes | None = None, state: SessionState | None = None,
            save: Callable[[SessionState], None] = lambda state: None) -> QueryOutcome:
        """One round: prepare, encrypt, seal, relay, wait, fetch and open the matches.

        With a ``state`` whose query was already relayed (a re-run after a crash), the round is
        picked up where it stands: nothing is encrypted or compared again.  ``save`` keeps the
        state (before the relay, and once the round is known).
        """
        timings: dict[str, float] = {}
        started = time.perf_counter()
        if state is not None and not state.round and state.prepared and session.rounds > state.rounds_before:
            state.round = state.rounds_before + 1          # our query went through before we stopped
            save(state)
        if state is not None and state.round:
            prepared, round_no, resumed = PreparedQuery.from_state(state.prepared), state.round, True
            self.notice.now(f"resuming session {session.session_id} round {round_no} "
                            "(query already relayed: no new comparisons)")
        else:
            prepared, round_no = self._relay(session, keys, options, lookup_secret, timings, state, save)
            resumed = False
        mark = time.perf_counter()
        info = self.wait(session.session_id, round_no, options.timeout, session.holder)
        timings["wait_for_holder"] = time.perf_counter() - mark
        if info.status == pb.ABORTED:
            raise PartyError(f"holder '{session.holder}' refused the query: {info.reason}")
        mark = time.perf_counter()
        secret = prepared.secret
        note = pb.HolderNote.FromString(
            note_cipher(secret, session.session_id, round_no).open(info.holder_note))
        cipher = attachment_cipher(secret, session.session_id, round_no)
        matches_found = self.connection.stream("FetchResults", pb.RoundRef(session_id=session.session_id,
                                                                           round=round_no),
                                               split=lambda page: page.matches)
        results = [(pb.RowAttachment.FromString(cipher.open(match.attachment)), list(match.match_indices))
                   for match in matches_found]
        matches = (blocked_matches(prepared, results, keys.blocked.layouts) if keys.blocked is not None
                   else table_matches(prepared, results))
        timings["fetch"] = time.perf_counter() - mark
        timings["total"] = time.perf_counter() - started
        facts = {"records": keys.records, "blank_identifiers": keys.blank,
                 "distinct_keys": [len(t.values) for t in keys.tables], "table_slots": len(prepared.slots),
                 "matched_holder_rows": len(matches), "seconds": {k: round(v, 3) for k, v in timings.items()}}
        if keys.blocked is not None:     # candidate pairs: the holder's count, never told to the querier
            passes = [{"fields": p.name, "buckets": p.buckets or "clear", "records": len(p.records), "risk": p.risk,
                       "terms": [keys.tables[t].name for t in layout.term_ids], "layout": layout.kind,
                       "comparisons_per_pair": layout.comparisons}
                      for p, layout in zip(keys.blocked.passes, keys.blocked.layouts)]
            facts.update(passes=passes, encryptions=prepared.encryptions)
        elif session.mode != pb.LOOKUP:
            facts.update(tables=[t.name for t in prepared.header.tables],
                         cuckoo_bins=[int(t.bins) for t in prepared.header.tables],
                         hash_functions=options.cuckoo.hash_functions,
                         padded_to=[padded_size(len(t.values)) for t in keys.tables])
        facts["resumed"] = resumed
        return QueryOutcome(session.session_id, round_no, matches, list(note.release_columns),
                            note.blinding, note.refused_fast_blinding, facts)

    def _relay(self, session: pb.SessionInfo, keys: QuerierKeys, options: QueryOptions,
               lookup_secret: bytes | None, timings: dict, state: SessionState | None,
               save: Callable[[SessionState], None]) -> tuple[PreparedQuery, int]:
        """Prepare, encrypt and seal the query, keep the state, relay it; returns the round it opened."""
        started = time.perf_counter()
        key = PublicKey(session.modulus)
        progress = self._progress(options)
        holder_key = party_key(self.connection, session.holder)
        if session.mode == pb.LOOKUP:
            prepared, encodings = prepare_lookup(keys, options, key.bits, lookup_secret, progress)
        elif keys.blocked is not None:
            prepared, encodings = prepare_blocked(keys, options, key.bits, progress)
        else:
            prepared, encodings = prepare_tables(keys, options, key.bits, progress)
        prepared.header.mode = session.mode
        prepared.header.key_bits = session.key_bits
        prepared.encryptions = len(encodings)
        timings["encode"] = time.perf_counter() - started
        mark = time.perf_counter()
        ciphertexts = encrypt_slots(key, encodings, progress)
        timings["encrypt"] = time.perf_counter() - mark
        mark = time.perf_counter()
        context = message_context(session.session_id, "query")
        if state is not None:
            state.prepared, state.rounds_before, state.round = prepared.to_state(), session.rounds, 0
            save(state)

        def upload():
            yield pb.MessageChunk(header=pb.MessageHeader(session_id=session.session_id, kind="query",
                                                          recipient=session.holder))
            for frame in seal_records(query_records(prepared, ciphertexts), self.party.private_key,
                                      holder_key, context):
                yield pb.MessageChunk(data=frame)

        def settled() -> pb.MessageInfo | None:
            """After a lost reply: did K keep the query (the session has one more round)?"""
            current = self.connection.call("GetSession", pb.SessionRef(session_id=session.session_id))
            return pb.MessageInfo(round=session.rounds + 1) if current.rounds > session.rounds else None
        message = self.connection.upload("PutMessage", upload, settled=settled)
        if state is not None:
            state.round = message.round
            save(state)
        timings["relay"] = time.perf_counter() - mark
        return prepared, message.round

    def wait(self, session_id: str, round_no: int, timeout: float, holder: str = "") -> pb.RoundInfo:
        """Long-poll until the holder has served the round; says so after ~2 s and every ~10 s."""
        started = time.monotonic()
        deadline = started + timeout
        poll = 2.0
        while True:
            remaining = deadline - time.monotonic()
            wait_seconds = max(0.0, min(poll, remaining))
            info = self.connection.call("WaitRound", pb.WaitRoundRequest(
                session_id=session_id, round=round_no, wait_seconds=wait_seconds), timeout=wait_seconds + 60.0)
            if info.status != pb.PENDING:
                return info
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise HolderTimeout(f"holder '{holder}' did not serve round {round_no} within {timeout:g} s")
            self.notice.say("holder", started, lambda: (
                f"waiting for holder '{holder}' to serve round {round_no} (up to {human_seconds(remaining)} "
                "more; it may run `party hold --once` later)"))
            poll = EVERY

    def close(self, session_id: str, patient: bool = True) -> None:
        """End the session at K (its private key is destroyed); a session already ended is fine."""
        try:
            self.connection.call("CloseSession", pb.SessionRef(session_id=session_id), timeout=10.0,
                                 patient=patient)
        except KeyHolderRefusal as refusal:
            if refusal.code not in ("NOT_FOUND", "FAILED_PRECONDITION"):
                raise


# ---------------------------------------------------------------------------
# Holder
# ---------------------------------------------------------------------------

@dataclass
class HolderOptions:
    release_columns: list[str] = dataclass_field(default_factory=list)
    allow_fast_blinding: bool = False
    allowed_queriers: list[str] | None = None
    batch_rows: int = 256
    progress: bool | None = None


@dataclass
class RoundPlan:
    """What the holder compares in one round: units (row, [(query position, encoding)]), and for
    blocked rules the pair rule K applies and the candidate pairs per pass."""

    units: list[tuple[int, list[tuple[int, bytes]]]]
    segments: list[tuple[int, int, pb.PairRule]] | None = None   # blocked: (start, end, rule) per pass
    pass_pairs: list[int] = dataclass_field(default_factory=list)


class HolderData:
    """The holder's table prepared once: its matching keys and JSON payloads per row."""

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
        self._bucket_cache: OrderedDict[str, tuple[int, dict[int, list[int]], dict[int, bytes]]] = OrderedDict()
        self._bucket_lock = threading.Lock()
        self._bucket_sessions = 1

    def keep_lookup_indexes(self, sessions: int) -> None:
        """Cache the lookup indexes of up to ``sessions`` sessions (rounds served at once), within
        ``LOOKUP_INDEX_ROWS`` rows in all (a million-row holder keeps two)."""
        self._bucket_sessions = max(1, min(sessions, LOOKUP_INDEX_ROWS // max(1, len(self.rows))))

    def bucket_index(self, session_id: str, secret: bytes, buckets: int,
                     modulus_bits: int) -> tuple[dict[int, list[int]], dict[int, bytes]]:
        """Rows per lookup bucket for this session's secret, cached across its rounds (least
        recently used sessions dropped first; one build at a time)."""
        with self._bucket_lock:
            return self._bucket_index(session_id, secret, buckets, modulus_bits)

    def _bucket_index(self, session_id: str, secret: bytes, buckets: int,
                      modulus_bits: int) -> tuple[dict[int, list[int]], dict[int, bytes]]:
        cached = self._bucket_cache.get(session_id)
        if cached is None or cached[0] != buckets:
            index: dict[int, list[int]] = defaultdict(list)
            encodings = {}
            name, values = self.keys.names[0], self.keys.values[0]
            with bar(len(self.rows), "holder: build lookup index", self.progress, unit="row") as progress:
                for row in self.rows:
                    x = encode(secret, name, values[row], modulus_bits)
                    encodings[int(row)] = x
                    index[bucket(secret, x, buckets)].append(int(row))
                    progress.update()
            cached = (buckets, index, encodings)
            self._bucket_cache[session_id] = cached
        self._bucket_cache.move_to_end(session_id)
        while len(self._bucket_cache) > self._bucket_sessions:
            self._bucket_cache.popitem(last=False)
        return cached[1], cached[2]


class _Inline:
    """An executor that runs each task at once in the caller's thread (a lookup's few batches)."""

    @staticmethod
    def submit(function: Callable, *args) -> Future:
        future: Future = Future()
        future.set_result(function(*args))
        return future


def _plain(value):
    """numpy/pandas scalars to JSON-able Python values."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


class Holder:
    """Serves the rounds addressed to this party."""

    def __init__(self, connection: Connection, party: PartyDir, data: HolderData,
                 options: HolderOptions) -> None:
        self.connection = connection
        self.party = party
        self.data = data
        self.options = options
        self._stopping = threading.Event()

    def pending(self, wait_seconds: float = 0.0) -> list[pb.WorkItem]:
        return list(self.connection.call("ListWork", pb.ListWorkRequest(wait_seconds=wait_seconds),
                                         timeout=wait_seconds + 60).items)

    def serve(self, once: bool, poll_seconds: float = 20.0,
              stop: Callable[[], bool] = lambda: False,
              on_served: Callable[[dict], None] | None = None,
              concurrency: int | None = None) -> list[dict]:
        """Process pending rounds; with ``once`` until none is left, else until ``stop()``.

        Up to ``concurrency`` rounds (default: one per core) are served at once.  Lookup rounds
        have a lane of their own of the same width, so a lookup never queues behind a join's
        comparisons: join and dedup rounds share the process-wide comparison pool (one thread per
        core, :func:`common.schemes.paillier.worker_pool`), a lookup compares its few rows in its
        own lane thread.  A round is taken once per call (K lists a round as pending until it
        is finished, so the rounds in flight are remembered).

        Returns what each served round cost (:meth:`process`), for the holder's eyes only;
        ``on_served`` receives each summary as soon as its round is served (one call at a time).
        """
        width = (os.cpu_count() or 1) if concurrency is None else concurrency
        if width < 1:
            raise PartyError("--concurrency must be at least 1")
        self.data.keep_lookup_indexes(width)
        self._stopping.clear()
        served: list[dict] = []
        taken: set[tuple[str, int]] = set()          # in flight or done in this call: never taken again
        lock = threading.Lock()
        finished = threading.Event()
        lanes = {name: ThreadPoolExecutor(max_workers=width, thread_name_prefix=f"holder-{name}",
                                          initializer=release_gil) for name in ("round", "lookup")}
        running: dict[Future, str] = {}

        def serve_one(item: pb.WorkItem) -> None:
            log.info("serving session %s round %d (%s)", item.session.session_id, item.round,
                     MODE_NAMES.get(item.session.mode, "?"))
            try:
                summary = self.process(item)
            except ConnectionProblem:
                raise
            except PartyError as error:  # e.g. the querier closed or the session expired meanwhile
                log.warning("session %s round %d not served: %s", item.session.session_id, item.round, error)
                return
            with lock:
                served.append(summary)
                if on_served is not None:
                    on_served(summary)

        def reap() -> None:
            for future in [f for f in running if f.done()]:
                del running[future]
                future.result()                      # a lost key holder ends the serve loop

        try:
            while not stop():
                reap()
                busy = bool(running)
                # K lists the rounds in flight as pending, so a long-poll would return at once: poll briefly.
                items = self.pending(0.0 if once or busy else poll_seconds)
                new = sorted((i for i in items if (i.session.session_id, i.round) not in taken),
                             key=lambda i: i.session.mode != pb.LOOKUP)
                started = 0
                for item in new:
                    lane = "lookup" if item.session.mode == pb.LOOKUP else "round"
                    if sum(1 for name in running.values() if name == lane) >= width:
                        continue                     # left pending: taken at a later poll
                    taken.add((item.session.session_id, item.round))
                    future = lanes[lane].submit(serve_one, item)
                    future.add_done_callback(lambda _: finished.set())
                    running[future] = lane
                    started += 1
                if once and not started and not running:
                    break
                if running and (started == 0 or len(new) > started):
                    finished.wait(BUSY_POLL_SECONDS if not once else None)
                    finished.clear()
            while running:                           # stopped: let the rounds in flight end
                wait(list(running))
                reap()
        except BaseException:                        # Ctrl-C or a lost key holder: rounds in flight stop at
            self._stopping.set()                     # their next batch; K keeps the batches it has
            raise
        finally:
            for lane in lanes.values():
                lane.shutdown(wait=True, cancel_futures=True)
        return served

    def _abort(self, item: pb.WorkItem, reason: str) -> dict:
        log.warning("refusing session %s round %d: %s", item.session.session_id, item.round, reason)
        self.connection.call("AbortRound", pb.AbortRoundRequest(
            session_id=item.session.session_id, round=item.round, reason=reason))
        return {"session_id": item.session.session_id, "round": item.round, "refused": reason}

    def process(self, item: pb.WorkItem) -> dict:
        """Serve one round: open the query, compare, submit, finish."""
        session = item.session
        if self.options.allowed_queriers is not None and item.querier not in self.options.allowed_queriers:
            return self._abort(item, f"querier '{item.querier}' is not on the holder's allow-list")
        key = PublicKey(session.modulus)
        chunks = self.connection.stream("GetMessage", pb.MessageRef(message_id=item.message_id),
                                        split=lambda message: [message.data], length=len)
        try:
            records = open_records(chunks, self.party.private_key, party_key(self.connection, item.querier),
                                   message_context(session.session_id, "query"))
            header = pb.QueryHeader.FromString(next(records))
            ciphertexts, buckets, blocks = [], [], []
            for record in records:
                chunk = pb.CiphertextChunk.FromString(record)
                ciphertexts.extend(key.from_bytes(chunk.ciphertexts))
                buckets.extend(chunk.buckets)
                blocks.extend(chunk.blocks)
            plan = self._plan(session, header, ciphertexts, buckets, blocks)
        except (ValueError, PartyError) as error:
            return self._abort(item, f"malformed query: {error}")
        if isinstance(plan, str):
            return self._abort(item, plan)
        return self._compare(item, key, header, ciphertexts, plan)

    def _plan(self, session: pb.SessionInfo, header: pb.QueryHeader, ciphertexts: list,
              buckets: list[int], blocks: list[str]) -> RoundPlan | str:
        """The comparison units (row, [(table position, the row's encoding)]) or a refusal reason.

        A row without a key in some table is still compared there, against random bins with a
        random value, so K sees the same number of comparisons for every row.
        """
        keys = self.data.keys
        if header.mode != session.mode or header.key_bits != session.key_bits:
            return "the query does not match the session (mode or key size)"
        if len(header.session_secret) != SECRET_BYTES:
            return "bad session secret"
        if header.key_spec != keys.spec or ([t.name for t in header.tables] != keys.names and not header.passes):
            return (f"the parties' matching keys differ (querier: {header.key_spec}, holder: {keys.spec}); "
                    "field names, encoders, rule and blocking must agree")
        key_length = encoding_bytes(PublicKey(session.modulus).bits)
        modulus_bits = PublicKey(session.modulus).bits
        secret = header.session_secret
        if session.mode == pb.LOOKUP:
            if header.lookup_buckets < 1 or len(ciphertexts) != header.entries or len(buckets) != header.entries:
                return "lookup entries do not match the header"
            if any(b >= header.lookup_buckets for b in buckets):
                return "a lookup bucket is out of range"
            index, encodings = self.data.bucket_index(session.session_id, secret, header.lookup_buckets,
                                                      modulus_bits)
            rank = self._rank(session.session_id)     # only the queried buckets' rows: O(bucket) per lookup
            return RoundPlan([(row, [(entry, encodings[row])]) for entry, b in enumerate(buckets)
                              for row in sorted(index.get(b, []), key=rank)])
        if header.passes:
            return self._plan_blocked(session, header, ciphertexts, blocks)
        sizes = [t.bins + t.stash for t in header.tables]
        if any(t.hash_functions < 1 or t.bins < 1 for t in header.tables) or len(ciphertexts) != sum(sizes):
            return "the cuckoo tables do not match their header"
        offsets = np.cumsum([0] + sizes)
        order = self._shuffle(session.session_id, self.data.rows)
        units = []
        for row in tqdm_rows(order, "holder: encode rows", self.options.progress):
            comparisons = []
            for t, table in enumerate(header.tables):
                value = keys.values[t][row]
                if value is None:
                    x = os.urandom(key_length)
                    positions = [secrets.randbelow(table.bins) for _ in range(table.hash_functions)]
                else:
                    x = encode(secret, table.name, value, modulus_bits)
                    positions = bin_positions(secret, x, table.bins, table.hash_functions)
                positions += list(range(table.bins, table.bins + table.stash))
                comparisons.extend((int(offsets[t]) + p, x) for p in positions)
            units.append((int(row), comparisons))
        return RoundPlan(units)

    def _plan_blocked(self, session: pb.SessionInfo, header: pb.QueryHeader, ciphertexts: list,
                      blocks: list[str]) -> RoundPlan | str:
        """Blocked rules: per pass, the candidate pairs (our rows in each querier entry's block), in a keyed order.

        A pair compares each group of its pass with every variant of our key for it (a random
        value where we have none), so K sees the same number of comparisons for every pair of a pass.
        """
        blocked = self.data.keys.blocked
        if blocked is None:
            return "the querier uses blocking passes, the holder's rules have none"
        layouts = blocked.layouts
        if header.pair_layout != ";".join(layout.name for layout in layouts) or len(header.passes) != len(layouts):
            return "the parties' blocking passes or comparison layouts differ"
        widths = [len(layout.groups) for layout in layouts]
        if len(blocks) != sum(p.records for p in header.passes) or \
                len(ciphertexts) != sum(p.records * w for p, w in zip(header.passes, widths)):
            return "the blocked entries do not match their header"
        if any((p.buckets == 0) != clear for p, clear in zip(header.passes, blocked.clear)):
            return "a blocking pass is bucketed on one side and clear on the other"
        secret, modulus_bits = header.session_secret, PublicKey(session.modulus).bits
        key_length = encoding_bytes(modulus_bits)
        encoded: dict[tuple[str, int], list[bytes]] = {}

        def variants(label: str, row: int) -> list[bytes]:
            """Our encodings of one group for one row: every variant (random where we have no key)."""
            if (label, row) not in encoded:
                encoded[label, row] = [encode(secret, f"pair/{label}", v[row], modulus_bits) if v[row]
                                       else os.urandom(key_length) for v in blocked.group_keys[label]]
            return encoded[label, row]
        plan = RoundPlan([], segments=[])
        entry, position = 0, 0
        for index, (spec, layout) in enumerate(zip(header.passes, layouts)):
            query = pd.Series(blocks[entry:entry + spec.records], index=range(spec.records))
            pairs = candidate_pairs(query, holder_pass_blocks(blocked, secret, index, spec.buckets))
            order = self._shuffle(f"{session.session_id}/{index}", np.arange(len(pairs)))
            entries, rows = pairs["entry"].to_numpy(), pairs["row"].to_numpy()
            labels = [g.label for g in layout.groups]
            start = len(plan.units)
            for i in tqdm_rows(order, f"holder: encode pairs of pass {index + 1}", self.options.progress):
                row, base = int(rows[i]), position + int(entries[i]) * len(labels)
                plan.units.append((row, [(base + g, x) for g, label in enumerate(labels)
                                         for x in variants(label, row)]))
            rule = pb.PairRule(group_sizes=layout.group_sizes,
                               terms=[pb.Conjunction(groups=list(term)) for term in layout.terms])
            plan.segments.append((start, len(plan.units), rule))
            plan.pass_pairs.append(len(pairs))
            entry += spec.records
            position += spec.records * len(labels)
        return plan

    def _rank(self, session_id: str) -> Callable[[int], bytes]:
        """A keyed, per-session order of rows (a resumed holder orders them the same way)."""
        key = hmac.digest(self.party.local_secret, b"rank/" + session_id.encode(), hashlib.sha256)
        return lambda row: hmac.digest(key, row.to_bytes(8, "big"), hashlib.sha256)

    def _shuffle(self, session_id: str, rows: np.ndarray) -> list[int]:
        """A permutation of the holder's rows, fixed per session from a local secret."""
        seed = hmac.digest(self.party.local_secret, b"shuffle/" + session_id.encode(), hashlib.sha256)
        generator = np.random.default_rng(int.from_bytes(seed, "big"))
        return [int(r) for r in generator.permutation(rows)]

    def _row_tag(self, session_id: str, row: int) -> bytes:
        """Names a holder row within a session (blocked rules: the same row found by several passes)."""
        return hmac.digest(self.party.local_secret, f"row/{session_id}/{row}".encode(), hashlib.sha256)[:16]

    def _compare(self, item: pb.WorkItem, key: PublicKey, header: pb.QueryHeader, ciphertexts: list,
                 plan: RoundPlan) -> dict:
        session = item.session
        units = plan.units
        secret = header.session_secret
        fast = header.request_fast_blinding and self.options.allow_fast_blinding
        refused = ("the holder does not allow fast blinding; full blinding was used"
                   if header.request_fast_blinding and not fast else "")
        releasing = session.mode == pb.JOIN and self.data.payloads is not None   # dedup, lookup: no payload
        release_columns = self.data.release_columns if releasing else []
        cipher = attachment_cipher(secret, session.session_id, item.round)
        blocked = plan.segments is not None
        positions_bound = max((len(c) for _, c in units), default=1) * 5 + 4 + (18 if blocked else 0)
        width = SessionCipher.padded_width((self.data.longest_payload if releasing else 0) + positions_bound)

        def batch(seq: int, chunk: list[tuple[int, list[tuple[int, bytes]]]],
                  rule: pb.PairRule | None) -> pb.ComparisonBatch:
            out = bytearray()
            counts, attachments = [], []
            for row, comparisons in chunk:
                last, negated = None, None
                for position, encoding in comparisons:
                    if encoding is not last:
                        last, negated = encoding, negated_generator_power(key, int.from_bytes(encoding, "big"))
                    out += key.to_bytes(blinded_comparison(key, ciphertexts[position], negated,
                                                           blinding_factor(key, fast)))
                counts.append(len(comparisons))
                attachment = pb.RowAttachment(positions=[p for p, _ in comparisons],
                                              values=self.data.payloads[row] if releasing else [],
                                              row_tag=self._row_tag(session.session_id, row) if blocked else b"")
                attachments.append(cipher.seal(attachment.SerializeToString(), width))
            return pb.ComparisonBatch(session_id=session.session_id, round=item.round, seq=seq,
                                      ciphertexts=bytes(out), row_comparisons=counts, attachments=attachments,
                                      rule=rule)

        # Batches are the unit of parallel work: small inputs get small batches so every core helps.
        size = max(16, min(self.options.batch_rows, -(-len(units) // (4 * (os.cpu_count() or 2)))))
        segments = plan.segments if blocked else [(0, len(units), None)]      # a batch never spans two passes
        chunks = [(units[i:min(i + size, end)], rule) for start, end, rule in segments for i in range(start, end, size)]
        skip = set(item.received_seqs)
        todo = [(seq, chunk, rule) for seq, (chunk, rule) in enumerate(chunks) if seq not in skip]
        started = time.perf_counter()
        # Lookups (a few rows) compare in their own lane thread, never queued behind a join's batches.
        pool = _Inline() if session.mode == pb.LOOKUP else worker_pool()
        comparisons = 0
        with bar(sum(len(c) for _, c, _ in todo), f"{self.party.name}: compare", self.options.progress,
                 unit="row") as progress:
            window: deque = deque()
            pending = iter(todo)
            for seq, chunk, rule in pending:
                window.append((len(chunk), pool.submit(batch, seq, chunk, rule)))
                if len(window) >= 2 * (os.cpu_count() or 2):
                    break
            while window:
                if self._stopping.is_set():
                    for _, future in window:
                        future.cancel()
                    raise ConnectionProblem(f"holder stopped while serving session {session.session_id} "
                                            f"round {item.round}; the key holder keeps the batches it has")
                rows, future = window.popleft()
                message = future.result()
                self.connection.call("SubmitComparisons", message, timeout=600)
                comparisons += sum(message.row_comparisons)
                progress.update(rows)
                following = next(pending, None)
                if following is not None:
                    window.append((len(following[1]), pool.submit(batch, *following)))
        note = pb.HolderNote(release_columns=release_columns, blinding="fast" if fast else "full",
                             refused_fast_blinding=refused)
        sealed_note = note_cipher(secret, session.session_id, item.round).seal(
            note.SerializeToString(), SessionCipher.padded_width(len(note.SerializeToString())))
        # Acknowledge (K deletes the spooled query) before finishing: once the round is finished the
        # querier may close the session at any moment.
        try:
            self.connection.call("AckMessage", pb.MessageRef(message_id=item.message_id))
        except KeyHolderRefusal as refusal:   # already acknowledged: a retried call had gone through
            if refusal.code != "FAILED_PRECONDITION":
                raise
        self.connection.call("FinishRound", pb.FinishRoundRequest(
            session_id=session.session_id, round=item.round, batches=len(chunks), holder_note=sealed_note))
        elapsed = time.perf_counter() - started
        log.info("session %s round %d: %d rows compared (%d comparisons) in %.1f s", session.session_id,
                 item.round, len(units), comparisons, elapsed)
        served = {"session_id": session.session_id, "round": item.round, "rows": len(units),
                  "comparisons": comparisons, "blinding": "fast" if fast else "full", "seconds": round(elapsed, 3)}
        if blocked:
            served["candidate_pairs"] = plan.pass_pairs          # per pass
        return served
