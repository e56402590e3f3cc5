"""What the key holder does, as plain methods the gRPC servicer delegates to.

Roles and what K may learn follow PROTOCOL.md: K registers parties, issues a
fresh Paillier key pair per session, relays sealed messages it cannot open,
zero-tests the holder's blinded comparisons and hands the sealed attachments
of matching rows to the querier only.  It never decrypts anything for anyone:
there is no decrypt call, comparisons are accepted from the session's holder
only, and results go to the session's querier only.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from keyholder.crypto import (CiphertextError, KeyVault, ZeroTester,
                              generate_session_key)
from keyholder.store import Message, Round, Session, Store

log = logging.getLogger("keyholder")

# Enum values of proto/linkage.proto, kept as ints so that this module stays
# free of gRPC; the servicer converts.
MODES = {1: "join", 2: "dedup", 3: "lookup"}
OPEN, CLOSED, EXPIRED = 1, 2, 3
PENDING, DONE, ABORTED = 1, 2, 3
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
CHUNK_BYTES = 1 << 20


class ServiceError(Exception):
    """A refused call: ``code`` is a gRPC status name, ``message`` one line for the caller."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Limits:
    max_message_bytes: int = 8 << 30
    max_batch_comparisons: int = 1 << 16
    default_ttl: float = 24 * 3600.0
    max_ttl: float = 7 * 24 * 3600.0
    min_key_bits: int = 2048
    max_wait: float = 30.0


@dataclass(frozen=True)
class PairRule:
    """How a blocked fuzzy round's row (a candidate pair) matches: a DNF over comparison groups.

    The row's comparisons form consecutive groups of ``group_sizes``; a group agrees when any of
    its comparisons is zero; the row matches when all groups of some term agree (PROTOCOL.md,
    "K evaluates the match rule on the per-field agreement bits").
    """

    group_sizes: tuple[int, ...]
    terms: tuple[tuple[int, ...], ...]

    def check(self, row_comparisons: list[int]) -> None:
        width = sum(self.group_sizes)
        if not self.group_sizes or min(self.group_sizes) < 1:
            raise ServiceError("INVALID_ARGUMENT", "a pair rule needs groups of at least one comparison")
        if not self.terms or any(not term or max(term) >= len(self.group_sizes) for term in self.terms):
            raise ServiceError("INVALID_ARGUMENT", "every pair-rule term must name existing groups")
        if any(count != width for count in row_comparisons):
            raise ServiceError("INVALID_ARGUMENT",
                               f"with a pair rule every row has {width} comparisons (the groups' total)")

    def fired(self, zeros: list[bool]) -> list[int]:
        """Indices of the terms that hold for one row's zero-test results."""
        agrees, start = [], 0
        for size in self.group_sizes:
            agrees.append(any(zeros[start:start + size]))
            start += size
        return [t for t, term in enumerate(self.terms) if all(agrees[g] for g in term)]


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def fingerprint(public_key: bytes) -> str:
    return hashlib.sha256(public_key).hexdigest()


class KeyHolder:
    """The key holder's state machine over its SQLite store and disk spool."""

    def __init__(self, data_dir: Path, passphrase: bytes, limits: Limits = Limits()) -> None:
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.spool = self.data_dir / "spool"
        self.spool.mkdir(exist_ok=True)
        self.limits = limits
        self.store = Store(self.data_dir / "keyholder.sqlite3")
        salt = self.store.get_meta("vault_salt")
        if salt is None:
            salt = os.urandom(16)
            self.store.set_meta("vault_salt", salt)
        self.vault = KeyVault(passphrase, salt)
        check = self.store.get_meta("vault_check")
        if check is None:
            self.store.set_meta("vault_check", self.vault.check_value())
        elif not self.vault.verify(check):
            raise ValueError("the passphrase does not open this data directory's keys")
        self._testers: dict[str, ZeroTester] = {}
        self._testers_lock = threading.Lock()
        self._changed = threading.Condition()
        self._stopping = False
        self.expire_due()

    def shutdown(self) -> None:
        """Stop long-polls: wake the waiting ``list_work``/``wait_round`` calls (they answer with what
        there is now) and answer later ones at once, so that a stopping server drains quickly."""
        with self._changed:
            self._stopping = True
            self._changed.notify_all()

    def close(self) -> None:
        self.store.close()

    # -- parties --------------------------------------------------------------
    def register(self, name: str, public_key: bytes, cert_name: str | None,
                 presented_token: str | None) -> tuple[str, str]:
        """Register (or re-register) a party; returns (token, fingerprint)."""
        if not NAME_PATTERN.match(name or ""):
            raise ServiceError("INVALID_ARGUMENT",
                               "party name must be 1-64 characters: letters, digits, '.', '_', '-'")
        if len(public_key) != 32:
            raise ServiceError("INVALID_ARGUMENT", "x25519_public_key must be 32 bytes")
        if cert_name is not None and cert_name != name:
            raise ServiceError("PERMISSION_DENIED",
                               f"the client certificate is for '{cert_name}', not '{name}'")
        existing = self.store.get_party(name)
        if existing is not None:
            token_ok = presented_token is not None and self.store.token_of(name) == token_digest(presented_token)
            if not (token_ok or cert_name == name):
                raise ServiceError("ALREADY_EXISTS",
                                   f"party '{name}' is already registered; re-register with its token")
        token = secrets.token_urlsafe(32)
        self.store.put_party(name, public_key, fingerprint(public_key), token_digest(token))
        self.store.audit(name, "register" if existing is None else "re-register")
        log.info("party %s registered", name)
        return token, fingerprint(public_key)

    def authenticate(self, token: str | None, cert_name: str | None) -> str:
        name = self.store.party_for_token(token_digest(token)) if token else None
        if name is None:
            raise ServiceError("UNAUTHENTICATED", "unknown or missing party token: run `party register`")
        if cert_name is not None and cert_name != name:
            raise ServiceError("PERMISSION_DENIED",
                               f"the client certificate is for '{cert_name}', the token for '{name}'")
        return name

    def party(self, name: str):
        found = self.store.get_party(name)
        if found is None:
            raise ServiceError("NOT_FOUND", f"party '{name}' is not registered")
        return found

    # -- sessions -------------------------------------------------------------
    def open_session(self, querier: str, mode: int, holder: str, key_bits: int,
                     ttl_seconds: float) -> Session:
        if mode not in MODES:
            raise ServiceError("INVALID_ARGUMENT", "mode must be join, dedup or lookup")
        self.party(holder)
        if holder == querier:
            raise ServiceError("INVALID_ARGUMENT", "a party cannot open a session with itself")
        key_bits = key_bits or 2048
        if key_bits < self.limits.min_key_bits or key_bits > 4096 or key_bits % 256:
            raise ServiceError("INVALID_ARGUMENT",
                               f"key size {key_bits} not allowed: use 2048 or 3072 bits")
        ttl = ttl_seconds or self.limits.default_ttl
        if not 0 < ttl <= self.limits.max_ttl:
            raise ServiceError("INVALID_ARGUMENT",
                               f"ttl must be in (0, {int(self.limits.max_ttl)}] seconds")
        session_id = uuid.uuid4().hex
        key = generate_session_key(key_bits)
        now = time.time()
        session = Session(session_id, mode, querier, holder, key_bits, key.modulus_bytes(),
                          self.vault.wrap(session_id, key), OPEN, now, now + ttl, 0)
        self.store.add_session(session)
        with self._testers_lock:
            self._testers[session_id] = ZeroTester(key)
        self.store.audit(querier, "open_session", session_id,
                         detail=f"mode={MODES[mode]} holder={holder} key_bits={key_bits} ttl={int(ttl)}")
        log.info("session %s opened by %s (%s, %d bits)", session_id, querier, MODES[mode], key_bits)
        return session

    def session(self, party: str, session_id: str, role: str | None = None) -> Session:
        """The session, checked: ``party`` takes part (in ``role``) and it is open."""
        session = self.store.get_session(session_id)
        if session is None:
            raise ServiceError("NOT_FOUND", f"no session '{session_id}'")
        if party not in (session.querier, session.holder):
            raise ServiceError("PERMISSION_DENIED", "you are not a participant of this session")
        if role == "querier" and party != session.querier:
            raise ServiceError("PERMISSION_DENIED", "only the session's querier may do this")
        if role == "holder" and party != session.holder:
            raise ServiceError("PERMISSION_DENIED", "only the session's holder may do this")
        if session.status == OPEN and session.expires_at <= time.time():
            self._end(session_id, EXPIRED)
            session = self.store.get_session(session_id)
        if session.status == EXPIRED:
            raise ServiceError("FAILED_PRECONDITION", f"session {session_id} has expired")
        if session.status == CLOSED:
            raise ServiceError("FAILED_PRECONDITION", f"session {session_id} is closed")
        return session

    def close_session(self, party: str, session_id: str) -> Session:
        self.session(party, session_id, "querier")
        self._end(session_id, CLOSED)
        self.store.audit(party, "close_session", session_id)
        return self.store.get_session(session_id)

    def _end(self, session_id: str, status: int) -> None:
        """Destroy the session's private key, spool and sealed results."""
        for path in self.store.end_session(session_id, status):
            Path(path).unlink(missing_ok=True)
        folder = self.spool / session_id
        if folder.exists():
            for leftover in folder.iterdir():
                leftover.unlink(missing_ok=True)
            folder.rmdir()
        with self._testers_lock:
            self._testers.pop(session_id, None)
        with self._changed:
            self._changed.notify_all()
        log.info("session %s %s; its private key was destroyed", session_id,
                 "expired" if status == EXPIRED else "closed")

    def expire_due(self) -> int:
        due = self.store.sessions_to_expire(time.time(), OPEN)
        for session_id in due:
            self._end(session_id, EXPIRED)
            self.store.audit(None, "expire_session", session_id)
        return len(due)

    def _tester(self, session: Session) -> ZeroTester:
        with self._testers_lock:
            tester = self._testers.get(session.id)
            if tester is None:
                n = int.from_bytes(session.modulus, "big")
                tester = ZeroTester(self.vault.unwrap(session.id, n, session.wrapped_key))
                self._testers[session.id] = tester
            return tester

    # -- relay ----------------------------------------------------------------
    def put_message(self, sender: str, session_id: str, kind: str, recipient: str,
                    chunks: Iterable[bytes]) -> Message:
        session = self.session(sender, session_id)
        if kind != "query":
            raise ServiceError("INVALID_ARGUMENT", f"unknown message kind '{kind}'")
        if sender != session.querier:
            raise ServiceError("PERMISSION_DENIED", "only the session's querier sends queries")
        if recipient != session.holder:
            raise ServiceError("INVALID_ARGUMENT", "the recipient must be the session's holder")
        folder = self.spool / session_id
        folder.mkdir(exist_ok=True)
        message_id = uuid.uuid4().hex
        final = folder / f"{message_id}.sealed"
        partial = folder / f"{message_id}.partial"
        size = 0
        try:
            with open(partial, "wb") as out:
                for data in chunks:
                    size += len(data)
                    if size > self.limits.max_message_bytes:
                        raise ServiceError("RESOURCE_EXHAUSTED",
                                           f"message larger than {self.limits.max_message_bytes} bytes")
                    out.write(data)
                out.flush()
                os.fsync(out.fileno())
            if size == 0:
                raise ServiceError("INVALID_ARGUMENT", "empty message")
            os.replace(partial, final)
        finally:
            partial.unlink(missing_ok=True)
        message = self.store.add_message(
            Message(message_id, session_id, kind, sender, recipient, size, str(final), None),
            open_round=True, pending=PENDING)
        self.store.audit(sender, "relay_query", session_id, message.round, count=size)
        with self._changed:
            self._changed.notify_all()
        return message

    def _message_for(self, party: str, message_id: str) -> Message:
        message = self.store.get_message(message_id)
        if message is None:
            raise ServiceError("NOT_FOUND", f"no message '{message_id}'")
        if message.recipient != party:
            raise ServiceError("PERMISSION_DENIED", "only the recipient may fetch a message")
        self.session(party, message.session_id)
        if message.path is None:
            raise ServiceError("FAILED_PRECONDITION", "the message was already acknowledged")
        return message

    def get_message(self, party: str, message_id: str) -> tuple[Message, Iterator[bytes]]:
        message = self._message_for(party, message_id)

        def chunks() -> Iterator[bytes]:
            with open(message.path, "rb") as source:
                while data := source.read(CHUNK_BYTES):
                    yield data
        return message, chunks()

    def ack_message(self, party: str, message_id: str) -> Message:
        message = self._message_for(party, message_id)
        Path(message.path).unlink(missing_ok=True)
        self.store.ack_message(message_id)
        return self.store.get_message(message_id)

    # -- rounds ---------------------------------------------------------------
    def _round(self, session: Session, round_no: int) -> Round:
        found = self.store.get_round(session.id, round_no)
        if found is None:
            raise ServiceError("NOT_FOUND", f"session {session.id} has no round {round_no}")
        return found

    def _wait(self, ready, wait_seconds: float):
        deadline = time.monotonic() + min(max(wait_seconds, 0.0), self.limits.max_wait)
        with self._changed:
            while True:
                value = ready()
                remaining = deadline - time.monotonic()
                if value or remaining <= 0 or self._stopping:
                    return value
                self._changed.wait(remaining)

    def list_work(self, holder: str, wait_seconds: float) -> list[tuple[Session, Round, list[int]]]:
        def pending():
            items = []
            for found in self.store.pending_rounds(holder, PENDING, OPEN):
                session = self.store.get_session(found.session_id)
                if session.expires_at > time.time():
                    items.append((session, found, self.store.batch_seqs(session.id, found.round)))
            return items
        return self._wait(pending, wait_seconds)

    def _open_round(self, session: Session, round_no: int) -> Round:
        found = self._round(session, round_no)
        if found.status != PENDING or found.batches is not None:
            raise ServiceError("FAILED_PRECONDITION", f"round {round_no} is already finished")
        return found

    def submit_batch(self, holder: str, session_id: str, round_no: int, seq: int,
                     ciphertexts: bytes, row_comparisons: list[int],
                     attachments: list[bytes], rule: PairRule | None = None) -> tuple[int, bool]:
        """Zero-test one batch; keep the attachments of matching rows.

        A row matches when any comparison is zero, or, with a pair ``rule``, when a rule term holds;
        the match records the zero comparisons, or the terms that held (never the groups).  Returns (comparisons, duplicate).  The reply to the holder says nothing
        about matches.
        """
        session = self.session(holder, session_id, "holder")
        self._open_round(session, round_no)
        rows = len(row_comparisons)
        total = sum(row_comparisons)
        if rows == 0 or rows != len(attachments):
            raise ServiceError("INVALID_ARGUMENT", "need one attachment per row and at least one row")
        if min(row_comparisons) < 1:
            raise ServiceError("INVALID_ARGUMENT", "every row needs at least one comparison")
        if total > self.limits.max_batch_comparisons:
            raise ServiceError("RESOURCE_EXHAUSTED",
                               f"a batch may hold at most {self.limits.max_batch_comparisons} comparisons")
        if rule is not None:
            rule.check(row_comparisons)
        if len({len(a) for a in attachments}) != 1:
            raise ServiceError("INVALID_ARGUMENT", "attachments must all have one padded length")
        tester = self._tester(session)
        if len(ciphertexts) != total * tester.width:
            raise ServiceError("INVALID_ARGUMENT",
                               f"expected {total} ciphertexts of {tester.width} bytes")
        if seq in self.store.batch_seqs(session_id, round_no):
            return total, True
        try:
            values = tester.parse(ciphertexts)
        except CiphertextError as error:
            raise ServiceError("INVALID_ARGUMENT", str(error)) from None
        zeros = tester.test_many(values)
        matches, offset = [], 0
        for row, count in enumerate(row_comparisons):
            row_zeros = zeros[offset:offset + count]
            hits = rule.fired(row_zeros) if rule is not None else [i for i, zero in enumerate(row_zeros) if zero]
            if hits:
                matches.append((row, hits, attachments[row]))
            offset += count
        fresh = self.store.add_batch(session_id, round_no, seq, total, matches)
        return total, not fresh

    def finish_round(self, holder: str, session_id: str, round_no: int, batches: int,
                     holder_note: bytes) -> Round:
        session = self.session(holder, session_id, "holder")
        self._open_round(session, round_no)
        seqs = self.store.batch_seqs(session_id, round_no)
        if seqs != list(range(batches)):
            missing = sorted(set(range(batches)) - set(seqs))[:5]
            raise ServiceError("FAILED_PRECONDITION",
                               f"round {round_no}: batches {missing or 'beyond the count'} are missing "
                               f"({len(seqs)} received, {batches} announced)")
        self.store.finish_round(session_id, round_no, DONE, batches, holder_note, None)
        found = self.store.get_round(session_id, round_no)
        self.store.audit(holder, "finish_round", session_id, round_no, count=found.comparisons,
                         detail=f"batches={batches} matched_rows={found.matched_rows}")
        log.info("session %s round %d: %d comparisons zero-tested", session_id, round_no,
                 found.comparisons)
        with self._changed:
            self._changed.notify_all()
        return found

    def abort_round(self, holder: str, session_id: str, round_no: int, reason: str) -> Round:
        session = self.session(holder, session_id, "holder")
        self._open_round(session, round_no)
        reason = " ".join((reason or "refused by the holder").split())[:300]
        self.store.finish_round(session_id, round_no, ABORTED, 0, None, reason)
        self.store.audit(holder, "abort_round", session_id, round_no)
        with self._changed:
            self._changed.notify_all()
        return self.store.get_round(session_id, round_no)

    def wait_round(self, querier: str, session_id: str, round_no: int, wait_seconds: float) -> Round:
        session = self.session(querier, session_id, "querier")
        self._round(session, round_no)

        def finished():
            found = self.store.get_round(session_id, round_no)
            return found if found.status != PENDING else None
        return self._wait(finished, wait_seconds) or self.store.get_round(session_id, round_no)

    def fetch_results(self, querier: str, session_id: str,
                      round_no: int) -> Iterator[list[tuple[list[int], bytes]]]:
        session = self.session(querier, session_id, "querier")
        found = self._round(session, round_no)
        if found.status != DONE:
            raise ServiceError("FAILED_PRECONDITION", f"round {round_no} is not finished")
        self.store.audit(querier, "fetch_results", session_id, round_no, count=found.matched_rows)
        return self.store.iter_matches(session_id, round_no)
