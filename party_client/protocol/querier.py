"""The querier's driver (docs/protocol.md, "Session"): open a session (K issues a
fresh key pair of the comparison scheme), prepare the round with its engine
(:mod:`party_client.protocol.engines.choice`), encrypt the encodings through the
scheme, seal the query to the holder and relay it (a large query streams: it is
sent while it is encrypted, :mod:`party_client.protocol.encryption`), wait for the
round, then open the attachments of the matching rows.  A re-run after a crash resumes a round
whose query was already relayed.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field as dataclass_field
from typing import Callable

from party_client.crypto.seal import seal_records
from party_client.errors import PartyError
from party_client.identity import PartyDir
from party_client.matching.keys import QuerierKeys
from party_client.progress import bar
from party_client.protocol.engines.choice import engine_for
from party_client.protocol.encryption import SlotEncryption
from party_client.protocol.engines.interface import PreparedQuery, QueryOptions
from party_client.protocol.wire import (MODES, attachment_cipher, message_context, note_cipher, party_key,
                                        query_records, session_scheme)
from party_client.sessions_state import SessionState
from party_client.transport import Connection, KeyHolderRefusal
from party_client.waiting import EVERY, TimeLeft, human_seconds
from proto import linkage_pb2 as pb

PROGRESS_POLL = 5.0            # s between a waiting querier's looks at its round (long-polls that end when it is done)
UPLOAD_CHUNK_BYTES = 1 << 20   # sealed query bytes per PutMessage chunk (small frames are gathered)
#: Queries of at least this many slots are streamed: sent while they are encrypted, the header
#: first (docs/protocol.md, "Streaming the query"); smaller ones (a lookup) are encrypted, then sent
#: as one gRPC message.
STREAM_MIN_SLOTS = 4096
log = logging.getLogger("party")


class HolderTimeout(PartyError):
    """The holder did not serve the round in time (the session and round stay open)."""


@dataclass
class QueryOutcome:
    """What the querier learned: per matching holder row, the keys it matched and its values."""

    session_id: str
    round: int
    matches: list[tuple[list[tuple[int, int]], list]]   # ([(table, key index)], released values)
    release_columns: list[str]
    facts: dict
    levels: dict = dataclass_field(default_factory=dict)   # comparison levels: (match, record) -> levels K reported



def declared_ciphertexts(mode: str, keys: QuerierKeys, options: QueryOptions) -> int:
    """At least the ciphertexts of the query the round's engine will build."""
    return engine_for(MODES[mode], keys.blocked is not None).declared(keys, options)


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
            query_ciphertexts=declared_ciphertexts(mode, keys, options) if keys is not None else 0,
            scheme=options.scheme.name))

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
        # K says how many holder rows matched (the querier learns it anyway): none, nothing to fetch.
        matches_found = self.connection.stream("FetchResults", pb.RoundRef(session_id=session.session_id,
                                                                           round=round_no),
                                               split=lambda page: page.matches) if info.matched_rows else []
        results = [(pb.RowAttachment.FromString(cipher.open(match.attachment)), list(match.match_indices))
                   for match in matches_found]
        engine = engine_for(session.mode, keys.blocked is not None)
        matches = engine.matches(prepared, results, keys)
        timings["fetch"] = time.perf_counter() - mark
        timings["total"] = time.perf_counter() - started
        facts = {"records": keys.records, "blank_identifiers": keys.blank,
                 "distinct_keys": [len(t.values) for t in keys.tables], "table_slots": len(prepared.slots),
                 "matched_holder_rows": len(matches), "seconds": {k: round(v, 3) for k, v in timings.items()}}
        facts.update(engine.facts(keys, prepared, options))
        facts["resumed"] = resumed
        return QueryOutcome(session.session_id, round_no, matches, list(note.release_columns),
                            facts, prepared.decided)

    def _relay(self, session: pb.SessionInfo, keys: QuerierKeys, options: QueryOptions,
               lookup_secret: bytes | None, timings: dict, state: SessionState | None,
               save: Callable[[SessionState], None]) -> tuple[PreparedQuery, int]:
        """Prepare, encrypt and seal the query, keep the state, relay it; returns the round it opened."""
        started = time.perf_counter()
        scheme = session_scheme(session)
        progress = self._progress(options)
        holder_key = party_key(self.connection, session.holder, session.holder_x25519_public_key)
        engine = engine_for(session.mode, keys.blocked is not None)
        prepared, encodings = engine.prepare(keys, options, scheme.encoding_bytes(session.public_key), lookup_secret,
                                             progress)
        prepared.header.mode = session.mode
        prepared.header.key_bits = session.key_bits
        prepared.header.scheme = scheme.name
        prepared.encryptions = len(encodings)
        timings["encode"] = time.perf_counter() - started
        mark = time.perf_counter()
        streamed = len(encodings) >= STREAM_MIN_SLOTS
        # here or on the querier's cluster (party join|dedup --dask); a streamed query is encrypted in
        # the background while the upload reads it, a small one first
        encryption = SlotEncryption(scheme, session.public_key, encodings, progress, options.cluster,
                                    self.notice.now)
        ciphertexts = encryption if streamed else encryption.all()
        encrypted = [time.perf_counter()]     # streamed: set again when the upload has read the last slot
        context = message_context(session.session_id, "query")
        if state is not None:
            state.prepared, state.rounds_before, state.round = prepared.to_state(), session.rounds, 0
            save(state)

        def upload():
            """The header, and the sealed frames gathered into chunks of about ``UPLOAD_CHUNK_BYTES``:
            a streamed query's header goes alone, at once (the holder starts on it); a small query's
            rides with its frames (a lookup's query is one gRPC message, not four)."""
            chunk = pb.MessageChunk(header=pb.MessageHeader(session_id=session.session_id, kind="query",
                                                            recipient=session.holder, stream=streamed))
            frames: list[bytes] = []
            size = 0
            for index, frame in enumerate(seal_records(query_records(prepared, ciphertexts),
                                                       self.party.private_key, holder_key, context)):
                frames.append(frame)
                size += len(frame)
                if size >= UPLOAD_CHUNK_BYTES or (streamed and index == 1):   # 0: the seal's, 1: the header
                    chunk.data = b"".join(frames)
                    yield chunk
                    chunk, frames, size = pb.MessageChunk(), [], 0
            if streamed:
                encrypted[0] = time.perf_counter()
            chunk.data, chunk.last = b"".join(frames), True      # K keeps only a stream marked complete
            yield chunk

        def settled() -> pb.MessageInfo | None:
            """After a lost reply: did K keep the query (the session has one more round)?"""
            current = self.connection.call("GetSession", pb.SessionRef(session_id=session.session_id))
            return pb.MessageInfo(round=session.rounds + 1) if current.rounds > session.rounds else None
        try:
            message = self.connection.upload("PutMessage", upload, settled=settled)
        finally:
            encryption.close()
        if state is not None:
            state.round = message.round
            save(state)
        # streamed, encryption and upload overlap: "relay" is then the upload's tail after the last slot
        timings["encrypt"], timings["relay"] = encrypted[0] - mark, time.perf_counter() - encrypted[0]
        return prepared, message.round

    def wait(self, session_id: str, round_no: int, timeout: float, holder: str = "") -> pb.RoundInfo:
        """Long-poll until the holder has served the round; says so after ~2 s and every ~10 s."""
        started = time.monotonic()
        deadline = started + timeout
        poll = 2.0
        time_left, shown = TimeLeft(), -1
        while True:
            remaining = deadline - time.monotonic()
            wait_seconds = max(0.0, min(poll, remaining))
            try:
                info = self.connection.call("WaitRound", pb.WaitRoundRequest(
                    session_id=session_id, round=round_no, wait_seconds=wait_seconds), timeout=wait_seconds + 60.0)
            except KeyHolderRefusal as refusal:
                # A stopping K cancels the calls still under way after its grace period; asking again is
                # harmless (the transport waits for K to come back).
                if refusal.code != "CANCELLED":
                    raise
                info = pb.RoundInfo(status=pb.PENDING)
            if info.status != pb.PENDING:
                return info
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise HolderTimeout(f"holder '{holder}' did not serve round {round_no} within {timeout:g} s")
            left = time_left.seconds(info.comparing, info.progress_percent)
            stepped = info.comparing and info.progress_percent != shown
            if stepped:                                                 # each 10 % step, as K reports it
                shown = info.progress_percent
                self.notice.now((f"holder '{holder}' started comparing round {round_no}" if not shown else
                                 f"holder '{holder}': {shown} % of round {round_no} compared")
                                + (f", about {human_seconds(left)} left" if left is not None else "")
                                + (f" (beyond --timeout: {human_seconds(remaining)} left of it)"
                                   if left is not None and left > remaining else ""))
            else:                             # a step said is this look's news: no second line
                self.notice.say("holder", started, lambda: (
                    f"holder '{holder}' is comparing round {round_no}" if info.comparing else
                    f"waiting for holder '{holder}' to serve round {round_no}") + (
                    f" (up to {human_seconds(remaining)} more"
                    + ("; a holder not running `party hold` can serve it later with `party hold --once`)"
                       if time.monotonic() - started > 2 * EVERY and not info.comparing else ")")))
            poll = PROGRESS_POLL

    def close(self, session_id: str, patient: bool = True) -> None:
        """End the session at K (its private key is destroyed); a session already ended is fine."""
        try:
            self.connection.call("CloseSession", pb.SessionRef(session_id=session_id), timeout=10.0,
                                 patient=patient)
        except KeyHolderRefusal as refusal:
            if refusal.code not in ("NOT_FOUND", "FAILED_PRECONDITION"):
                raise
