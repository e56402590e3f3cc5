"""The linking protocol seen from each party (PROTOCOL.md).

Querier Q: open a session (K issues a fresh Paillier key), draw the session
secret ``s``, encode and encrypt its distinct identifiers into a padded cuckoo
table (join, dedup) or bucketed entries (lookup), seal it to the holder, wait
for the round, then open the attachments of the matching rows.

Holder H: fetch the sealed query, shuffle its rows (deterministically per
round from a local secret, so a resumed holder resends identical batches),
compute ``h`` blinded comparisons per row with a fresh ``r`` each, attach to
every row a sealed attachment (positions + released values, padded to one
length) and stream the batches to K.  H never learns what matched.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field as dataclass_field
from typing import Callable, Iterator

import numpy as np
import pandas as pd
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

from party_client.cuckoo import EMPTY, CuckooFailure, CuckooParams, bin_count, padded_size, place
from party_client.encoding import SECRET_BYTES, bin_positions, bucket, encode
from party_client.errors import PartyError
from party_client.identity import PartyDir
from party_client.normalize import normalize
from party_client.paillier import (Encryptor, PublicKey, blinded_comparison, blinding_factor,
                                   negated_generator_power, worker_pool)
from party_client.progress import bar
from party_client.seal import SessionCipher, open_records, seal_records
from party_client.transport import Connection, KeyHolderUnavailable
from proto import linkage_pb2 as pb

log = logging.getLogger("party")
MODES = {"join": pb.JOIN, "dedup": pb.DEDUP, "lookup": pb.LOOKUP}
MODE_NAMES = {value: name for name, value in MODES.items()}
CIPHERTEXTS_PER_RECORD = 2048
CUCKOO_ATTEMPTS = 8


def message_context(session_id: str, kind: str) -> bytes:
    return f"securelink/{session_id}/{kind}".encode()


def attachment_cipher(secret: bytes, session_id: str, round_no: int) -> SessionCipher:
    return SessionCipher(secret, session_id, round_no, b"attachment")


def note_cipher(secret: bytes, session_id: str, round_no: int) -> SessionCipher:
    return SessionCipher(secret, session_id, round_no, b"holder-note")


def party_key(connection: Connection, name: str) -> X25519PublicKey:
    info = connection.call("GetParty", pb.GetPartyRequest(name=name))
    return X25519PublicKey.from_public_bytes(info.x25519_public_key)


@dataclass
class Keys:
    """The querier's identifiers reduced to distinct normalized values."""

    codes: np.ndarray          # per input row: index into ``values``, -1 when blank
    values: list[str]

    @classmethod
    def from_column(cls, column: pd.Series, field_type: str) -> "Keys":
        normalized = normalize(column, field_type)
        codes, uniques = pd.factorize(normalized.where(normalized != "", None))
        return cls(codes=np.asarray(codes), values=[str(v) for v in uniques])

    @property
    def blank(self) -> int:
        return int((self.codes < 0).sum())


# ---------------------------------------------------------------------------
# Querier
# ---------------------------------------------------------------------------

@dataclass
class QueryOptions:
    field: str = "id"
    field_type: str = "identifier"
    key_bits: int = 2048
    fast_blinding: bool = False
    timeout: float = 3600.0
    cuckoo: CuckooParams = dataclass_field(default_factory=CuckooParams)
    lookup_buckets: int = 0
    progress: bool | None = None


@dataclass
class QueryOutcome:
    """What the querier learned: matches per distinct key, and the run's facts."""

    session_id: str
    round: int
    matches: list[tuple[int, list]]       # (key index, released values)
    release_columns: list[str]
    blinding: str
    note: str
    facts: dict


@dataclass
class PreparedQuery:
    secret: bytes
    header: pb.QueryHeader
    slot_keys: list[int]                   # per table position: key index or EMPTY
    buckets: list[int]                     # lookup only


def prepare_table(keys: Keys, options: QueryOptions, modulus_bits: int,
                  progress: Callable[[str, int], object]) -> tuple[PreparedQuery, list[bytes]]:
    """Encode the distinct keys under a fresh ``s`` and cuckoo-place them."""
    params = options.cuckoo
    bins = bin_count(len(keys.values), params)
    for _ in range(CUCKOO_ATTEMPTS):
        secret = os.urandom(SECRET_BYTES)
        encodings = [encode(secret, options.field, v, modulus_bits)
                     for v in progress("encode", len(keys.values))(keys.values)]
        positions = [bin_positions(secret, x, bins, params.hash_functions) for x in encodings]
        try:
            table, stashed = place(positions, bins, params.stash)
            break
        except CuckooFailure:
            log.info("cuckoo insertion failed; drawing a fresh session secret")
    else:
        raise PartyError("cuckoo table construction failed repeatedly; raise the expansion factor")
    slot_keys = table + stashed + [EMPTY] * (params.stash - len(stashed))
    header = pb.QueryHeader(session_secret=secret, field=options.field, field_type=options.field_type,
                            hash_functions=params.hash_functions, bins=bins, stash=params.stash,
                            request_fast_blinding=options.fast_blinding,
                            records_per_chunk=CIPHERTEXTS_PER_RECORD)
    return PreparedQuery(secret, header, slot_keys, []), encodings


def prepare_lookup(keys: Keys, options: QueryOptions, modulus_bits: int, secret: bytes,
                   progress) -> tuple[PreparedQuery, list[bytes]]:
    """Bucketed entries: each distinct key reveals ``PRF_s(X) mod B_L``; padded with dummies."""
    encodings = [encode(secret, options.field, v, modulus_bits) for v in keys.values]
    entries = padded_size(len(encodings)) if len(encodings) > 16 else 1 << max(0, (len(encodings) - 1).bit_length())
    buckets = [bucket(secret, x, options.lookup_buckets) for x in encodings]
    buckets += [secrets.randbelow(options.lookup_buckets) for _ in range(entries - len(encodings))]
    slot_keys = list(range(len(encodings))) + [EMPTY] * (entries - len(encodings))
    header = pb.QueryHeader(session_secret=secret, field=options.field, field_type=options.field_type,
                            lookup_buckets=options.lookup_buckets, entries=entries,
                            request_fast_blinding=options.fast_blinding,
                            records_per_chunk=CIPHERTEXTS_PER_RECORD)
    return PreparedQuery(secret, header, slot_keys, buckets), encodings


def encrypt_slots(key: PublicKey, slot_keys: list[int], encodings: list[bytes], progress) -> list[bytes]:
    """Encrypt every slot: real keys as ``E(X)``, empty slots as ``E(random)`` (on every core)."""
    encryptor = Encryptor(key)

    def chunk(slots: list[int]) -> list[bytes]:
        return [key.to_bytes(encryptor.encrypt_random() if slot == EMPTY else
                             encryptor.encrypt(int.from_bytes(encodings[slot], "big"))) for slot in slots]
    step = 512
    parts = [slot_keys[i:i + step] for i in range(0, len(slot_keys), step)]
    ciphertexts: list[bytes] = []
    for part in progress("encrypt", len(parts))(worker_pool().map(chunk, parts)):
        ciphertexts.extend(part)
    return ciphertexts


def query_records(prepared: PreparedQuery, ciphertexts: list[bytes]) -> Iterator[bytes]:
    yield prepared.header.SerializeToString()
    for start in range(0, len(ciphertexts), CIPHERTEXTS_PER_RECORD):
        chunk = pb.CiphertextChunk(ciphertexts=b"".join(ciphertexts[start:start + CIPHERTEXTS_PER_RECORD]))
        if prepared.buckets:
            chunk.buckets.extend(prepared.buckets[start:start + CIPHERTEXTS_PER_RECORD])
        yield chunk.SerializeToString()


class Querier:
    """Runs rounds as the querier of a session."""

    def __init__(self, connection: Connection, party: PartyDir) -> None:
        self.connection = connection
        self.party = party

    def _progress(self, options: QueryOptions):
        def wrap(phase: str, total: int):
            def iterate(items):
                with bar(total, f"{self.party.name}: {phase}", options.progress) as progress:
                    for item in items:
                        yield item
                        progress.update()
            return iterate
        return wrap

    def open_session(self, mode: str, holder: str, options: QueryOptions, ttl: float = 0) -> pb.SessionInfo:
        return self.connection.call("OpenSession", pb.OpenSessionRequest(
            mode=MODES[mode], holder=holder, key_bits=options.key_bits, ttl_seconds=int(ttl)))

    def run(self, session: pb.SessionInfo, keys: Keys, options: QueryOptions,
            lookup_secret: bytes | None = None) -> QueryOutcome:
        """One round: prepare, encrypt, seal, relay, wait, fetch and open the matches."""
        timings: dict[str, float] = {}
        started = time.perf_counter()
        key = PublicKey(session.modulus)
        progress = self._progress(options)
        holder_key = party_key(self.connection, session.holder)
        if session.mode == pb.LOOKUP:
            prepared, encodings = prepare_lookup(keys, options, key.bits, lookup_secret, progress)
        else:
            prepared, encodings = prepare_table(keys, options, key.bits, progress)
        prepared.header.mode = session.mode
        prepared.header.key_bits = session.key_bits
        timings["encode"] = time.perf_counter() - started
        mark = time.perf_counter()
        ciphertexts = encrypt_slots(key, prepared.slot_keys, encodings, progress)
        timings["encrypt"] = time.perf_counter() - mark
        mark = time.perf_counter()
        context = message_context(session.session_id, "query")

        def upload():
            yield pb.MessageChunk(header=pb.MessageHeader(session_id=session.session_id, kind="query",
                                                          recipient=session.holder))
            for frame in seal_records(query_records(prepared, ciphertexts), self.party.private_key,
                                      holder_key, context):
                yield pb.MessageChunk(data=frame)
        message = self.connection.upload("PutMessage", upload)
        timings["relay"] = time.perf_counter() - mark
        mark = time.perf_counter()
        info = self.wait(session.session_id, message.round, options.timeout)
        timings["wait_for_holder"] = time.perf_counter() - mark
        if info.status == pb.ABORTED:
            raise PartyError(f"holder '{session.holder}' refused the query: {info.reason}")
        mark = time.perf_counter()
        secret = prepared.secret
        note = pb.HolderNote.FromString(
            note_cipher(secret, session.session_id, message.round).open(info.holder_note))
        cipher = attachment_cipher(secret, session.session_id, message.round)
        matches: list[tuple[int, list]] = []
        for page in self.connection.stream("FetchResults", pb.RoundRef(session_id=session.session_id,
                                                                       round=message.round)):
            for match in page.matches:
                attachment = pb.RowAttachment.FromString(cipher.open(match.attachment))
                if match.match_index >= len(attachment.positions):
                    raise PartyError("a result does not fit its attachment")
                slot = attachment.positions[match.match_index]
                key_index = prepared.slot_keys[slot] if slot < len(prepared.slot_keys) else EMPTY
                if key_index != EMPTY:
                    matches.append((key_index, [json.loads(v) for v in attachment.values]))
        timings["fetch"] = time.perf_counter() - mark
        timings["total"] = time.perf_counter() - started
        facts = {"records": int(len(keys.codes)), "blank_identifiers": keys.blank,
                 "distinct_identifiers": len(keys.values), "table_slots": len(prepared.slot_keys),
                 "matched_holder_rows": len(matches), "seconds": {k: round(v, 3) for k, v in timings.items()}}
        if session.mode != pb.LOOKUP:
            facts.update(cuckoo_bins=int(prepared.header.bins), hash_functions=int(prepared.header.hash_functions),
                         padded_to=padded_size(len(keys.values)))
        return QueryOutcome(session.session_id, message.round, matches, list(note.release_columns),
                            note.blinding, note.refused_fast_blinding, facts)

    def wait(self, session_id: str, round_no: int, timeout: float) -> pb.RoundInfo:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            info = self.connection.call("WaitRound", pb.WaitRoundRequest(
                session_id=session_id, round=round_no, wait_seconds=max(0.0, min(25.0, remaining))),
                timeout=60.0)
            if info.status != pb.PENDING:
                return info
            if remaining <= 0:
                raise PartyError(f"the holder did not answer within {timeout:g} s "
                                 f"(session {session_id} round {round_no} stays open until it expires)")

    def close(self, session_id: str) -> None:
        self.connection.call("CloseSession", pb.SessionRef(session_id=session_id))


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


class HolderData:
    """The holder's table prepared once: normalized ids and JSON payloads per row."""

    def __init__(self, frame: pd.DataFrame, id_column: str, release_columns: list[str],
                 field_type: str = "identifier") -> None:
        normalized = normalize(frame[id_column], field_type)
        self.field_type = field_type
        self.values = normalized.tolist()
        self.rows = np.flatnonzero((normalized != "").to_numpy())
        self.blank = len(self.values) - len(self.rows)
        self.release_columns = list(release_columns)
        released = frame[self.release_columns].astype(object).where(frame[self.release_columns].notna(), None)
        self.payloads = [[json.dumps(_plain(v), ensure_ascii=False) for v in row]
                         for row in released.itertuples(index=False, name=None)] if release_columns else None
        self._bucket_cache: dict[str, tuple[int, dict[int, list[int]], list[bytes]]] = {}

    def bucket_index(self, session_id: str, secret: bytes, field_name: str, buckets: int,
                     modulus_bits: int) -> tuple[dict[int, list[int]], dict[int, bytes]]:
        """Rows per lookup bucket for this session's secret, cached across its rounds."""
        cached = self._bucket_cache.get(session_id)
        if cached is None or cached[0] != buckets:
            index: dict[int, list[int]] = defaultdict(list)
            encodings = {}
            for row in self.rows:
                x = encode(secret, field_name, self.values[row], modulus_bits)
                encodings[int(row)] = x
                index[bucket(secret, x, buckets)].append(int(row))
            cached = (buckets, index, encodings)
            self._bucket_cache = {session_id: cached}
        return cached[1], cached[2]


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

    def pending(self, wait_seconds: float = 0.0) -> list[pb.WorkItem]:
        return list(self.connection.call("ListWork", pb.ListWorkRequest(wait_seconds=wait_seconds),
                                         timeout=wait_seconds + 60).items)

    def serve(self, once: bool, poll_seconds: float = 20.0, stop: Callable[[], bool] = lambda: False) -> int:
        """Process pending rounds; with ``once`` until none is left, else until ``stop()``."""
        served = 0
        tried: set[tuple[str, int]] = set()
        while not stop():
            items = [i for i in self.pending(0.0 if once else poll_seconds)
                     if (i.session.session_id, i.round) not in tried]
            for item in items:
                tried.add((item.session.session_id, item.round))
                try:
                    self.process(item)
                    served += 1
                except KeyHolderUnavailable:
                    raise
                except PartyError as error:  # e.g. the querier closed or the session expired meanwhile
                    log.warning("session %s round %d not served: %s", item.session.session_id, item.round, error)
            if once and not items:
                break
        return served

    def _abort(self, item: pb.WorkItem, reason: str) -> None:
        log.warning("refusing session %s round %d: %s", item.session.session_id, item.round, reason)
        self.connection.call("AbortRound", pb.AbortRoundRequest(
            session_id=item.session.session_id, round=item.round, reason=reason))

    def process(self, item: pb.WorkItem) -> dict:
        """Serve one round: open the query, compare, submit, finish."""
        session = item.session
        if self.options.allowed_queriers is not None and item.querier not in self.options.allowed_queriers:
            self._abort(item, f"querier '{item.querier}' is not on the holder's allow-list")
            return {}
        key = PublicKey(session.modulus)
        chunks = (c.data for c in self.connection.stream("GetMessage", pb.MessageRef(message_id=item.message_id)))
        try:
            records = open_records(chunks, self.party.private_key, party_key(self.connection, item.querier),
                                   message_context(session.session_id, "query"))
            header = pb.QueryHeader.FromString(next(records))
            ciphertexts, buckets = [], []
            for record in records:
                chunk = pb.CiphertextChunk.FromString(record)
                ciphertexts.extend(key.from_bytes(chunk.ciphertexts))
                buckets.extend(chunk.buckets)
            plan = self._plan(session, header, ciphertexts, buckets)
        except (ValueError, PartyError) as error:
            self._abort(item, f"malformed query: {error}")
            return {}
        if isinstance(plan, str):
            self._abort(item, plan)
            return {}
        return self._compare(item, key, header, ciphertexts, plan)

    def _plan(self, session: pb.SessionInfo, header: pb.QueryHeader, ciphertexts: list,
              buckets: list[int]) -> list[tuple[int, list[int], bytes]] | str:
        """The comparison units (holder row, table positions, its encoding) or a refusal reason."""
        if header.mode != session.mode or header.key_bits != session.key_bits:
            return "the query does not match the session (mode or key size)"
        if len(header.session_secret) != SECRET_BYTES:
            return "bad session secret"
        if header.field_type != self.data.field_type:
            return f"field type '{header.field_type}' differs from the holder's '{self.data.field_type}'"
        modulus_bits = PublicKey(session.modulus).bits
        secret = header.session_secret
        order = self._shuffle(session.session_id, header, self.data.rows)
        if session.mode == pb.LOOKUP:
            if header.lookup_buckets < 1 or len(ciphertexts) != header.entries or len(buckets) != header.entries:
                return "lookup entries do not match the header"
            if any(b >= header.lookup_buckets for b in buckets):
                return "a lookup bucket is out of range"
            index, encodings = self.data.bucket_index(session.session_id, secret, header.field,
                                                      header.lookup_buckets, modulus_bits)
            rank = {row: i for i, row in enumerate(order)}
            return [(row, [entry], encodings[row]) for entry, b in enumerate(buckets)
                    for row in sorted(index.get(b, []), key=rank.__getitem__)]
        if header.hash_functions < 1 or header.bins < 1 or len(ciphertexts) != header.bins + header.stash:
            return "the cuckoo table does not match its header"
        stash = list(range(header.bins, header.bins + header.stash))
        units = []
        for row in order:
            x = encode(secret, header.field, self.data.values[row], modulus_bits)
            units.append((int(row), bin_positions(secret, x, header.bins, header.hash_functions) + stash, x))
        return units

    def _shuffle(self, session_id: str, header: pb.QueryHeader, rows: np.ndarray) -> list[int]:
        """A permutation of the holder's rows, fixed per session from a local secret."""
        seed = hmac.digest(self.party.local_secret, b"shuffle/" + session_id.encode(), hashlib.sha256)
        generator = np.random.default_rng(int.from_bytes(seed, "big"))
        return [int(r) for r in generator.permutation(rows)]

    def _compare(self, item: pb.WorkItem, key: PublicKey, header: pb.QueryHeader, ciphertexts: list,
                 units: list[tuple[int, list[int], bytes]]) -> dict:
        session = item.session
        secret = header.session_secret
        fast = header.request_fast_blinding and self.options.allow_fast_blinding
        refused = ("the holder does not allow fast blinding; full blinding was used"
                   if header.request_fast_blinding and not fast else "")
        releasing = session.mode != pb.DEDUP and self.data.payloads is not None
        release_columns = self.data.release_columns if releasing else []
        cipher = attachment_cipher(secret, session.session_id, item.round)
        positions_bound = max((len(p) for _, p, _ in units), default=1) * 5 + 4
        longest = max((len(pb.RowAttachment(values=v).SerializeToString()) for v in self.data.payloads),
                      default=0) if releasing else 0
        width = SessionCipher.padded_width(longest + positions_bound)

        def batch(seq: int, chunk: list[tuple[int, list[int], bytes]]) -> pb.ComparisonBatch:
            out = bytearray()
            counts, attachments = [], []
            for row, positions, encoding in chunk:
                negated = negated_generator_power(key, int.from_bytes(encoding, "big"))
                for position in positions:
                    out += key.to_bytes(blinded_comparison(key, ciphertexts[position], negated,
                                                           blinding_factor(key, fast)))
                counts.append(len(positions))
                attachment = pb.RowAttachment(positions=positions,
                                              values=self.data.payloads[row] if releasing else [])
                attachments.append(cipher.seal(attachment.SerializeToString(), width))
            return pb.ComparisonBatch(session_id=session.session_id, round=item.round, seq=seq,
                                      ciphertexts=bytes(out), row_comparisons=counts, attachments=attachments)

        # Batches are the unit of parallel work: small inputs get small batches so every core helps.
        size = max(16, min(self.options.batch_rows, -(-len(units) // (4 * (os.cpu_count() or 2)))))
        chunks = [units[i:i + size] for i in range(0, len(units), size)]
        skip = set(item.received_seqs)
        todo = [(seq, chunk) for seq, chunk in enumerate(chunks) if seq not in skip]
        started = time.perf_counter()
        pool = worker_pool()
        comparisons = 0
        with bar(sum(len(c) for _, c in todo), f"{self.party.name}: compare", self.options.progress,
                 unit="row") as progress:
            window: deque = deque()
            pending = iter(todo)
            for seq, chunk in pending:
                window.append((len(chunk), pool.submit(batch, seq, chunk)))
                if len(window) >= 2 * (os.cpu_count() or 2):
                    break
            while window:
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
        self.connection.call("AckMessage", pb.MessageRef(message_id=item.message_id))
        self.connection.call("FinishRound", pb.FinishRoundRequest(
            session_id=session.session_id, round=item.round, batches=len(chunks), holder_note=sealed_note))
        elapsed = time.perf_counter() - started
        log.info("session %s round %d: %d rows compared (%d comparisons) in %.1f s", session.session_id,
                 item.round, len(units), comparisons, elapsed)
        return {"session_id": session.session_id, "round": item.round, "rows": len(units),
                "comparisons": comparisons, "blinding": "fast" if fast else "full", "seconds": elapsed}
