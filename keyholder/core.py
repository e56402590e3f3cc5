"""The key holder itself (:class:`KeyHolder`): what it does, as plain methods the gRPC servicer delegates to.

Roles and what K may learn follow docs/protocol.md: K registers parties, issues a
fresh key pair of the comparison scheme (:mod:`common.schemes`) per session,
relays sealed messages it cannot open, zero-tests the holder's blinded comparisons and hands the sealed attachments
of matching rows to the querier only.  It never decrypts anything for anyone:
there is no decrypt call, comparisons are accepted from the session's holder
only, and results go to the session's querier only.
"""
from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import secrets
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterable, Callable, Iterator

from common.schemes import InvalidCiphertext, KeyPair, RetiredScheme, Scheme, all_schemes, get_scheme
from keyholder.cluster import ZeroTest, local_zero_test
from keyholder.errors import ServiceError
from keyholder.keygen import KeyFactory
from keyholder.limits import Limits
from keyholder.pair_rule import PairRule
from keyholder.pool import on_pool
from keyholder.proto_enums import ABORTED, CLOSED, DONE, EXPIRED, MODES, OPEN, PENDING
from keyholder.store import STORE_FILE, Message, Round, RoundCapReached, Session, Store
from keyholder.throttle import FailureThrottle, failure_keys
from keyholder.uploads import Follower, Upload, Uploads
from keyholder.vault import KeyVault

log = logging.getLogger("keyholder")

CHUNK_BYTES = 1 << 20
ACTIVITY_RESOLUTION = 5.0               # s between writes of a session's last activity


@dataclass
class SessionPlan:
    """An OpenSession under way: checked and counted against its querier's cap, its key not yet made."""

    querier: str
    mode: int
    holder: str
    scheme: Scheme
    key_bits: int
    ttl: float
    query_ciphertexts: int
    released: bool = False


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def fingerprint(public_key: bytes) -> str:
    return hashlib.sha256(public_key).hexdigest()


MATCHING_KEPT = 8                 # matchings kept per holder (one per `party hold` process serving it)
MATCHING_FRESH_SECONDS = 600.0    # a matching not announced for this long is no longer handed out
PLANNED_ROUNDS_KEPT = 4096     # rounds whose announced comparisons K remembers (oldest forgotten first)


def progress_percent(done: int, planned: int) -> int:
    """``done`` of ``planned`` as a percentage rounded down to a multiple of 10, at most 90 (a round is
    finished only when its holder says so); 0 when nothing was announced or the count is inconsistent."""
    if planned <= 0 or done > planned:
        return 0
    return min(90, 10 * (10 * done // planned))


class KeyHolder:
    """The key holder's state machine over its SQLite store and disk spool.

    It never blocks to wait: long-polls are the server's, woken through :meth:`add_listener`.
    """

    def __init__(self, data_dir: Path, passphrase: bytes, limits: Limits = Limits(),
                 schemes: tuple[Scheme, ...] | None = None) -> None:
        os.umask(0o077)                      # the store, its WAL/SHM files and the spool: owner only
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.store = Store(self.data_dir / STORE_FILE)      # first: a damaged store is refused with nothing made
        self.spool = self.data_dir / "spool"
        self.spool.mkdir(exist_ok=True)
        self.limits = limits
        self._restrict_permissions()
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
        self.schemes = all_schemes() if schemes is None else tuple(schemes)     # offered to new sessions
        self.zero_test: ZeroTest = local_zero_test       # keyholder serve --dask: cluster_zero_test
        self._session_keys: dict[str, bytes] = {}  # session id -> private key bytes (unwrapped, in memory)
        self._session_keys_lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []
        self.stopping = False
        self.throttle = FailureThrottle(limits.max_auth_failures, limits.auth_window)
        self.key_factory = KeyFactory(limits.keygen_workers, limits.keygen_queue, limits.keygen_seconds)
        self._opening: dict[str, int] = {}         # querier -> sessions planned, key not yet stored
        self._party_keys: dict[str, bytes] = {}    # name -> X25519 public key (public; a registration replaces it)
        self._party_keys_version = 0
        self._party_keys_lock = threading.Lock()
        # (session, round) -> the holder's announced comparisons, for the querier's progress (in memory only)
        self._planned: OrderedDict[tuple[str, int], int] = OrderedDict()
        # holder -> spec -> (its fields, last announced): what each serving holder links on (in memory only)
        self._matching: dict[str, OrderedDict[str, tuple[tuple[str, ...], float]]] = {}
        self._opening_lock = threading.RLock()
        self.uploads = Uploads(self.store, limits)  # queries streaming in (docs/protocol.md, "Streaming the query")
        self.expire_due()
        self._clean_spool()

    def close(self) -> None:
        self.key_factory.close()
        self.store.close()

    def _restrict_permissions(self) -> None:
        """Data written before the umask (older versions, or the passphrase's folder) made private too."""
        for path in (self.data_dir, self.spool, *self.spool.iterdir()):
            if path.is_dir():
                path.chmod(0o700)
        for path in (*self.data_dir.glob(f"{STORE_FILE}*"), *self.spool.rglob("*")):
            if path.is_file():
                path.chmod(0o600)

    def _clean_spool(self) -> None:
        """Remove ``.partial`` uploads and files no live message points to (start-up)."""
        live = {Path(p).resolve() for p in self.store.live_spool_paths()}
        removed = 0
        for folder in [p for p in self.spool.iterdir() if p.is_dir()]:
            for path in folder.iterdir():
                if path.resolve() not in live:
                    path.unlink(missing_ok=True)
                    removed += 1
            if not any(folder.iterdir()):
                folder.rmdir()
        if removed:
            log.info("removed %d stale spool files", removed)

    def add_listener(self, listener: Callable[[tuple[str, ...]], None]) -> None:
        """Call ``listener(keys)`` (from any thread) whenever a round, message or session changes:
        ``keys`` name what changed (a session id, a holder's name), so that only the long-polls
        waiting on those look again; empty: anything may have changed."""
        self._listeners.append(listener)

    def shutdown(self) -> None:
        """Stop long-polls: the server answers waiting and later ``ListWork``/``WaitRound`` calls with
        what there is now, so that a stopping server drains quickly."""
        self.stopping = True
        self.changed()

    def changed(self, *keys: str) -> None:
        """Tell the listeners what changed (:meth:`add_listener`): the session ids whose rounds a
        querier may wait on, the holders whose work list changed; nothing named: everything."""
        for listener in self._listeners:
            listener(keys)

    # -- parties --------------------------------------------------------------
    def register(self, name: str, public_key: bytes, cert_name: str | None,
                 presented_token: str | None, peer: str | None = None) -> tuple[str, str]:
        """Register (or re-register, renewing the token) a party; returns (token, fingerprint).

        A refused re-registration counts as a failed authentication (:mod:`keyholder.throttle`)."""
        failing = failure_keys(None, cert_name, peer)     # the token may be valid (another party's)
        if cert_name is not None and cert_name != name:
            self.throttle.failed(failing)
            raise ServiceError("PERMISSION_DENIED",
                               f"the client certificate is for '{cert_name}', not '{name}'")
        existing = self.store.get_party(name)
        if existing is not None:
            token_ok = presented_token is not None and self.store.token_of(name) == token_digest(presented_token)
            if not (token_ok or cert_name == name):
                self.throttle.failed(failing)
                raise ServiceError("ALREADY_EXISTS",
                                   f"party '{name}' is already registered; re-register with its token")
        token = secrets.token_urlsafe(32)
        self.store.put_party(name, public_key, fingerprint(public_key), token_digest(token))
        with self._party_keys_lock:
            self._party_keys_version += 1
            self._party_keys.pop(name, None)
        self.store.audit(name, "register" if existing is None else "re-register")
        log.info("party %s registered", name)
        return token, fingerprint(public_key)

    def authenticate(self, token: str | None, cert_name: str | None, peer: str | None = None) -> str:
        """The party of a bearer token that has not expired (its age: since the last registration).

        Valid credentials are never throttled; failing ones count against the token, the certificate
        or address (:func:`keyholder.throttle.failure_keys`), and above the limit are refused with
        RESOURCE_EXHAUSTED ("retry in N s") instead of UNAUTHENTICATED."""
        digest = token_digest(token) if token else None
        if digest:
            self.throttle.check_token(digest)
        found = self.store.party_for_token(digest) if digest else None
        if found is None:
            self.throttle.failed(failure_keys(digest, cert_name, peer))
            raise ServiceError("UNAUTHENTICATED", "unknown or missing party token: run `party register`")
        name, issued_at = found
        if issued_at + self.limits.token_lifetime <= time.time():
            self.throttle.failed(failure_keys(digest, cert_name, peer))
            raise ServiceError("UNAUTHENTICATED", f"the token of '{name}' has expired: run `party register` "
                                                  "to renew it")
        if cert_name is not None and cert_name != name:     # a valid token: only the certificate counts
            self.throttle.failed(failure_keys(None, cert_name, peer))
            raise ServiceError("PERMISSION_DENIED",
                               f"the client certificate is for '{cert_name}', the token for '{name}'")
        return name

    def screen(self, token: str | None) -> None:
        """Before any work for a call: refuse a token that keeps failing, without a store lookup
        (:meth:`keyholder.throttle.FailureThrottle.check_token`)."""
        if token:
            self.throttle.check_token(token_digest(token))

    def party(self, name: str):
        found = self.store.get_party(name)
        if found is None:
            raise ServiceError("NOT_FOUND", f"party '{name}' is not registered")
        return found

    def announce_table(self, holder: str, rows: int) -> None:
        """Keep a holder's table size as it announces it polling for work (its keyed rows rounded
        down to the public sqrt(2) step; 0: no announcement); queriers size lookups from it
        (docs/protocol.md, "Lookup").  Written and audited only when it changes."""
        if rows and self.party(holder).table_rows != rows:
            self.store.set_table_rows(holder, rows)
            self.store.audit(holder, "announce_table", count=rows)

    def announce_matching(self, holder: str, spec: str, fields: list[str]) -> None:
        """Keep what a holder links on as it announces it polling for work (in memory: a restarted K
        learns it again at the next poll); one entry per spec, at most :data:`MATCHING_KEPT` per party."""
        with self._party_keys_lock:
            kept = self._matching.setdefault(holder, OrderedDict())
            kept.pop(spec, None)
            kept[spec] = (tuple(fields), time.monotonic())
            while len(kept) > MATCHING_KEPT:
                kept.popitem(last=False)

    def matching(self, holder: str) -> list[tuple[str, tuple[str, ...]]]:
        """(spec, fields) of each matching the holder announced within :data:`MATCHING_FRESH_SECONDS`."""
        fresh = time.monotonic() - MATCHING_FRESH_SECONDS
        with self._party_keys_lock:
            return [(spec, fields) for spec, (fields, seen) in self._matching.get(holder, {}).items() if seen >= fresh]

    def party_key(self, name: str) -> bytes:
        """A registered party's X25519 public key (what ``GetParty`` says), kept in memory once read."""
        with self._party_keys_lock:
            key, version = self._party_keys.get(name), self._party_keys_version
        if key is None:
            key = self.party(name).x25519
            with self._party_keys_lock:
                if version == self._party_keys_version:     # no registration meanwhile
                    self._party_keys[name] = key
        return key

    # -- sessions -------------------------------------------------------------
    def query_limit(self, ciphertext_width: int, query_ciphertexts: int) -> int:
        """The longest query message of a session: its declared ciphertexts (of the scheme's width)
        with a margin, or the default."""
        limits = self.limits
        if not query_ciphertexts:
            return min(limits.default_query_bytes, limits.max_message_bytes)
        declared = query_ciphertexts * ciphertext_width * limits.query_margin + limits.query_overhead
        return int(min(declared, limits.max_message_bytes))

    @staticmethod
    def scheme_of(session: Session) -> Scheme:
        """The scheme of a stored session (the store keeps its name); FAILED_PRECONDITION, saying what to
        do, for a session opened under a scheme since retired (:data:`common.schemes.RETIRED`)."""
        try:
            return get_scheme(session.scheme)
        except RetiredScheme as retired:
            raise ServiceError("FAILED_PRECONDITION", retired.of_session(session.id)) from None

    def plan_session(self, querier: str, mode: int, holder: str, key_bits: int, ttl_seconds: float,
                     query_ciphertexts: int = 0, scheme: Scheme | None = None) -> SessionPlan:
        """Check an OpenSession of ``scheme`` (``None``: the default) and count it against the querier's
        open-session cap at once, before its key exists: concurrent calls can never exceed the cap.
        Its key comes from :attr:`keys`; :meth:`create_session` stores it, :meth:`release` gives the slot
        back if it is never stored.  Mode, key size and ttl range were checked by :mod:`keyholder.validation`."""
        arithmetic = get_scheme() if scheme is None else scheme
        if arithmetic not in self.schemes:
            raise ServiceError("FAILED_PRECONDITION", f"this key holder does not offer the {arithmetic.name} scheme "
                                                      f"(it offers: {', '.join(s.name for s in self.schemes)})")
        self.party(holder)
        if holder == querier:
            raise ServiceError("INVALID_ARGUMENT", "a party cannot open a session with itself")
        cap = self.limits.max_open_sessions
        with self._opening_lock:
            if self.store.open_sessions_of(querier, OPEN, time.time()) + self._opening.get(querier, 0) >= cap:
                raise ServiceError("RESOURCE_EXHAUSTED", f"you have {cap} open sessions, the most allowed: "
                                                         "close one first")
            self._opening[querier] = self._opening.get(querier, 0) + 1
        return SessionPlan(querier, mode, holder, arithmetic,
                           arithmetic.fixed_key_bits or key_bits or max(2048, self.limits.min_key_bits),
                           ttl_seconds or self.limits.default_ttl, query_ciphertexts)

    def release(self, plan: SessionPlan) -> None:
        """Give back the cap slot of a planned session (idempotent; :meth:`create_session` calls it)."""
        with self._opening_lock:
            if plan.released:
                return
            plan.released = True
            left = self._opening.pop(plan.querier) - 1
            if left:
                self._opening[plan.querier] = left

    def create_session(self, plan: SessionPlan, key: KeyPair) -> Session:
        """Store the planned session with its fresh key pair."""
        arithmetic, name = plan.scheme, plan.scheme.name
        session_id = uuid.uuid4().hex
        now = time.time()
        session = Session(session_id, plan.mode, plan.querier, plan.holder, plan.key_bits, key.public,
                          self.vault.wrap(session_id, key.private), OPEN, now, now + plan.ttl, 0,
                          self.query_limit(arithmetic.ciphertext_width(key.public), plan.query_ciphertexts), now,
                          name)
        with self._opening_lock:         # stored and released at once: the cap count never dips in between
            self.store.add_session(session)
            self.release(plan)
        with self._session_keys_lock:
            self._session_keys[session_id] = key.private
        self.store.audit(plan.querier, "open_session", session_id,
                         detail=f"mode={MODES[plan.mode]} holder={plan.holder} scheme={name} "
                                f"key_bits={plan.key_bits} ttl={int(plan.ttl)} max_query_bytes={session.max_query_bytes}")
        log.info("session %s opened by %s (%s, %s, %d bits)", session_id, plan.querier, MODES[plan.mode], name,
                 plan.key_bits)
        return session

    async def open_session(self, plan: SessionPlan) -> tuple[Session, bytes]:
        """Open a planned session (:meth:`plan_session`): its key pair is awaited from the fair key factory
        (:attr:`keys`) holding no thread, then stored on the pool (:mod:`keyholder.pool`).  Returns the
        session and its holder's X25519 key (for the querier to seal its query without a ``GetParty``
        call).  The plan's slot under the querier's cap is given back however this ends: a cancelled
        call gives slot and queue place back."""
        try:
            key = await asyncio.wrap_future(self.key_factory.submit(plan.querier, plan.scheme, plan.key_bits))
            return await on_pool(lambda: (self.create_session(plan, key), self.party_key(plan.holder)))
        finally:
            self.release(plan)

    def session(self, party: str, session_id: str, role: str | None = None) -> Session:
        """The session, checked: ``party`` takes part (in ``role``) and it is open.

        A stranger hears NOT_FOUND, as for an unknown id, so that ids cannot be probed.
        """
        session = self.store.get_session(session_id)
        if session is None or party not in (session.querier, session.holder):
            raise ServiceError("NOT_FOUND", f"no session '{session_id}'")
        if role == "querier" and party != session.querier:
            raise ServiceError("PERMISSION_DENIED", "only the session's querier may do this")
        if role == "holder" and party != session.holder:
            raise ServiceError("PERMISSION_DENIED", "only the session's holder may do this")
        now = time.time()
        if session.status == OPEN and session.expires_at <= now:
            self._end(session_id, EXPIRED)
            self.store.audit(None, "expire_session", session_id)
            session = self.store.get_session(session_id)
        elif session.status == OPEN and session.active_at + self.limits.idle_timeout <= now:
            self._end_idle(session_id)
            session = self.store.get_session(session_id)
        if session.status == EXPIRED:
            raise ServiceError("FAILED_PRECONDITION", f"session {session_id} has expired")
        if session.status == CLOSED:
            raise ServiceError("FAILED_PRECONDITION", f"session {session_id} is closed")
        if now - session.active_at > ACTIVITY_RESOLUTION:
            self.store.touch_session(session_id, now)
        return session

    def close_session(self, party: str, session_id: str) -> Session:
        self.session(party, session_id, "querier")
        self._end(session_id, CLOSED)
        self.store.audit(party, "close_session", session_id)
        return self.store.get_session(session_id)

    def _end(self, session_id: str, status: int) -> None:
        """Destroy the session's private key, spool and sealed results."""
        session = self.store.get_session(session_id)
        for upload in self.uploads.of_session(session_id):
            self.abort_upload(upload, "the session ended")
        for path in self.store.end_session(session_id, status):
            Path(path).unlink(missing_ok=True)
        folder = self.spool / session_id
        if folder.exists():
            for leftover in folder.iterdir():
                leftover.unlink(missing_ok=True)
            folder.rmdir()
        with self._session_keys_lock:
            self._session_keys.pop(session_id, None)
        self.changed(session_id, *([session.holder] if session is not None else []))
        log.info("session %s %s; its private key was destroyed", session_id,
                 "expired" if status == EXPIRED else "closed")

    def _end_idle(self, session_id: str) -> None:
        self._end(session_id, EXPIRED)
        self.store.audit(None, "idle_session", session_id, detail=f"idle>{self.limits.idle_timeout:g}s")

    def expire_due(self) -> int:
        """End sessions past their lifetime or idle beyond the idle timeout; their keys are destroyed."""
        now = time.time()
        due = self.store.sessions_to_expire(now, OPEN)
        for session_id in due:
            self._end(session_id, EXPIRED)
            self.store.audit(None, "expire_session", session_id)
        idle = self.store.idle_sessions(now - self.limits.idle_timeout, OPEN)
        for session_id in idle:
            self._end_idle(session_id)
        return len(due) + len(idle)

    def _private_key(self, session: Session) -> bytes:
        """The session's private key, unwrapped once and checked against its public key."""
        with self._session_keys_lock:
            private = self._session_keys.get(session.id)
            if private is None:
                private = self.vault.unwrap(session.id, session.wrapped_key)
                self.scheme_of(session).check_key(session.public_key, private)
                self._session_keys[session.id] = private
            return private

    # -- relay ----------------------------------------------------------------
    def check_rounds(self, session_id: str) -> None:
        """Refuse an upload at its start when the session has its rounds already (the round itself is
        taken atomically when the upload commits: :meth:`rounds_exhausted`)."""
        if self.store.get_session(session_id).rounds >= self.limits.max_rounds:
            raise self.rounds_exhausted()

    def rounds_exhausted(self) -> ServiceError:
        return ServiceError("RESOURCE_EXHAUSTED", f"a session has at most {self.limits.max_rounds} rounds: "
                                                  "open a new session")

    def begin_message(self, sender: str, session_id: str, kind: str, recipient: str,
                      streamed: bool = False) -> Upload:
        """Start spooling a query; its size is bounded by the session's declaration and the spool quotas.
        A ``streamed`` query is listed to its holder at once, to read while it grows
        (:mod:`keyholder.uploads`)."""
        session = self.session(sender, session_id)
        if kind != "query":
            raise ServiceError("INVALID_ARGUMENT", f"unknown message kind '{kind}'")
        if sender != session.querier:
            raise ServiceError("PERMISSION_DENIED", "only the session's querier sends queries")
        if recipient != session.holder:
            raise ServiceError("INVALID_ARGUMENT", "the recipient must be the session's holder")
        self.scheme_of(session)              # a session of a retired scheme takes no query
        self.check_rounds(session_id)
        limits = self.limits
        bounds = [(session.max_query_bytes or self.query_limit(0, 0),
                   "the session's declared query size"),
                  (limits.max_spool_session_bytes - self.store.spool_bytes(session_id),
                   "this session's spool quota"),
                  (limits.max_spool_bytes - self.store.spool_bytes(), "the key holder's spool quota")]
        limit, why = min(bounds)
        if limit <= 0:
            raise ServiceError("RESOURCE_EXHAUSTED", f"no room for another message ({why})")
        upload = Upload(self.spool / session.id, session, sender, limit, why, streamed)
        self.uploads.add(upload)
        if streamed:
            self.changed(session.holder)         # listed to the holder at once
        return upload

    async def put_message(self, sender: str, session_id: str, kind: str, recipient: str, streamed: bool,
                          first: bytes, rest: AsyncIterable[bytes]) -> Message:
        """Spool a query as it arrives and keep it: :meth:`begin_message` with ``first`` (the data of the
        chunk that carried the header), then each piece of ``rest``, each written on the pool; the message
        is committed (its round opened) when ``rest`` ends, which raises to refuse the stream.

        The upload is opened even if the call is cancelled meanwhile, and is then aborted once open, on
        the pool and not awaited: an awaited clean-up would be dropped unrun when the call is cancelled (a
        cancelled ``run_in_executor`` cancels its queued work), leaving the holder following an upload
        that never ends.  Any other failure aborts the upload before it is raised, so that it is gone
        before the querier hears the refusal."""
        def begin() -> Upload:
            started = self.begin_message(sender, session_id, kind, recipient, streamed)
            try:
                if first:
                    self.write_upload(started, first)
            except BaseException:
                self.abort_upload(started)
                raise
            return started
        opening = asyncio.ensure_future(on_pool(begin))
        try:
            upload = await asyncio.shield(opening)      # opened even if this call is cancelled meanwhile
            async for data in rest:
                await on_pool(self.write_upload, upload, data)
            return await on_pool(self.commit_upload, upload)
        except asyncio.CancelledError:
            opening.add_done_callback(self._abort_opened)
            raise
        except Exception:
            if opening.done() and not opening.cancelled() and opening.exception() is None:
                await asyncio.shield(on_pool(self.abort_upload, opening.result()))   # gone before the refusal
            raise

    def _abort_opened(self, opening: asyncio.Future[Upload]) -> None:
        """Abort the upload ``opening`` opened (a cancelled :meth:`put_message`), on the pool, not awaited."""
        if not opening.cancelled() and opening.exception() is None:
            asyncio.get_running_loop().run_in_executor(None, self.abort_upload, opening.result())

    def write_upload(self, upload: Upload, data: bytes) -> None:
        """Spool more of a query, counted against the spool quotas with every upload in flight
        (:meth:`keyholder.uploads.Uploads.reserve`); its followers look again."""
        self.uploads.reserve(upload, len(data))
        upload.write(data)
        self.changed(upload.key)

    def commit_upload(self, upload: Upload) -> Message:
        """Keep a whole query and open its round, if its session is still open and has a round left;
        exactly one of this and :meth:`abort_upload` wins.  Refused: the upload is aborted."""
        try:
            with upload.sealed():
                self.session(upload.sender, upload.session.id)          # still open
                upload.keep()
                try:
                    message = self.store.add_message(
                        Message(upload.id, upload.session.id, "query", upload.sender, upload.recipient, upload.size,
                                str(upload.final), None), open_round=True, pending=PENDING,
                        max_rounds=self.limits.max_rounds)
                except RoundCapReached:
                    upload.final.unlink(missing_ok=True)
                    raise self.rounds_exhausted() from None
                upload.committed(message.round)
        except BaseException as error:
            self.abort_upload(upload, getattr(error, "message", "") or "the query could not be kept")
            raise
        self.uploads.remove(upload)
        self.store.audit(upload.sender, "relay_query", upload.session.id, message.round, count=upload.size)
        self.changed(upload.key, upload.recipient)          # followers, and the holder's work list
        return message

    def abort_upload(self, upload: Upload, reason: str = "the querier's upload of this query broke off") -> None:
        """End an upload that will not be committed (idempotent): its bytes go, its followers are refused."""
        upload.abort(reason)
        self.uploads.remove(upload)
        self.changed(upload.key, upload.recipient)

    def _message_for(self, party: str, message_id: str) -> Message:
        message = self.store.get_message(message_id)
        if message is None or party not in (message.sender, message.recipient):
            raise ServiceError("NOT_FOUND", f"no message '{message_id}'")
        if message.recipient != party:
            raise ServiceError("PERMISSION_DENIED", "only the recipient may fetch a message")
        self.session(party, message.session_id)
        if message.path is None:
            raise ServiceError("FAILED_PRECONDITION", "the message was already acknowledged")
        return message

    def follow_message(self, party: str, message_id: str) -> tuple[Upload, Follower] | None:
        """A query still streaming in, for its recipient to read as it grows; ``None`` when
        ``message_id`` names no upload in progress (:meth:`get_message` then)."""
        upload = self.uploads.get(message_id)
        if upload is None or party not in (upload.sender, upload.recipient):
            return None
        if upload.recipient != party:
            raise ServiceError("PERMISSION_DENIED", "only the recipient may fetch a message")
        self.session(party, upload.session.id)
        return upload, upload.follower()

    def get_message(self, party: str, message_id: str) -> tuple[Message, Iterator[bytes]]:
        message = self._message_for(party, message_id)

        def chunks() -> Iterator[bytes]:
            with open(message.path, "rb") as source:
                while data := source.read(CHUNK_BYTES):
                    yield data
        return message, chunks()

    def ack_message(self, party: str, message_id: str) -> Message:
        if self.uploads.get(message_id) is not None:
            raise ServiceError("FAILED_PRECONDITION", "the message is still being uploaded")
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

    def list_work(self, holder: str) -> list[tuple[Session, Round, list[int]]]:
        """The rounds waiting for ``holder`` now (the server long-polls), and the streamed queries
        still coming in to it, as round 0 (the round is known when the query is complete)."""
        items = []
        for found in self.store.pending_rounds(holder, PENDING, OPEN):
            session = self.store.get_session(found.session_id)
            if session.expires_at > time.time():
                items.append((session, found, self.store.batch_seqs(session.id, found.round)))
        listed = {found.message_id for _, found, _ in items}
        for upload in self.uploads.streamed_to(holder):
            session = self.store.get_session(upload.session.id)
            if upload.id not in listed and session is not None and session.status == OPEN \
                    and session.expires_at > time.time():
                items.append((session, Round(session.id, 0, PENDING, upload.id, 0, 0, None, None, None), []))
        return items

    def _open_round(self, session: Session, round_no: int) -> Round:
        found = self._round(session, round_no)
        if found.status != PENDING or found.batches is not None:
            raise ServiceError("FAILED_PRECONDITION", f"round {round_no} is already finished")
        return found

    def submit_batch(self, holder: str, session_id: str, round_no: int, seq: int,
                     ciphertexts: bytes, row_comparisons: list[int],
                     attachments: list[bytes], rule: PairRule | None = None,
                     planned: int = 0) -> tuple[int, bool]:
        """Zero-test one batch; keep the attachments of matching rows; ``planned`` (the holder's count of
        the round's comparisons, 0: not said) is kept for :meth:`progress`.

        A row matches when any comparison is zero, or, with a pair ``rule``, when a rule term holds;
        the match records the zero comparisons, or the terms that held (never the groups).  Returns
        (comparisons, duplicate).  The reply to the holder says nothing about matches.  Counts,
        lengths and the rule's shape were checked by :mod:`keyholder.validation`.
        """
        session = self.session(holder, session_id, "holder")
        found = self._open_round(session, round_no)
        total = sum(row_comparisons)
        private = self._private_key(session)
        scheme = self.scheme_of(session)
        width = scheme.ciphertext_width(session.public_key)
        if len(ciphertexts) != total * width:
            raise ServiceError("INVALID_ARGUMENT",
                               f"expected {total} ciphertexts of {width} bytes")
        length = len(attachments[0])
        if found.attachment_bytes is not None and length != found.attachment_bytes:
            raise self._attachment_length(round_no, found.attachment_bytes, length)
        if seq in self.store.batch_seqs(session_id, round_no):
            return total, True
        try:  # validated before the batch may fix the round's attachment length
            zeros = self.zero_test(scheme, session.public_key, private, ciphertexts)
        except InvalidCiphertext as error:
            raise ServiceError("INVALID_ARGUMENT", str(error)) from None
        fixed = self.store.fix_attachment_bytes(session_id, round_no, length)
        if length != fixed:                  # a concurrent first batch fixed another length
            raise self._attachment_length(round_no, fixed, length)
        matches, offset = [], 0
        for row, count in enumerate(row_comparisons):
            row_zeros = zeros[offset:offset + count]
            hits = rule.fired(row_zeros) if rule is not None else [i for i, zero in enumerate(row_zeros) if zero]
            if hits:
                matches.append((row, hits, attachments[row]))
            offset += count
        fresh = self.store.add_batch(session_id, round_no, seq, total, matches)
        if planned:
            self._planned[(session_id, round_no)] = planned
            while len(self._planned) > PLANNED_ROUNDS_KEPT:
                self._planned.popitem(last=False)
        return total, not fresh

    def progress(self, found: Round) -> tuple[bool, int]:
        """Whether a pending round's comparisons have begun to arrive, and their zero-tested share of the
        holder's announced count in 10 % steps (0-90): what the querier is told while it waits, never the
        count (it would tell the holder's table size; docs/protocol.md, "Progress while waiting")."""
        if found.status != PENDING:
            return False, 0
        planned = self._planned.get((found.session_id, found.round), 0)
        return found.comparisons > 0, progress_percent(found.comparisons, planned)

    @staticmethod
    def _attachment_length(round_no: int, fixed: int, length: int) -> ServiceError:
        return ServiceError("INVALID_ARGUMENT", f"attachments of round {round_no} are {fixed} bytes "
                                                f"(its first batch's length), not {length}")

    def finish_round(self, holder: str, session_id: str, round_no: int, batches: int,
                     holder_note: bytes) -> Round:
        session = self.session(holder, session_id, "holder")
        found = self._open_round(session, round_no)
        seqs = self.store.batch_seqs(session_id, round_no)
        if seqs != list(range(batches)):
            missing = sorted(set(range(batches)) - set(seqs))[:5]
            raise ServiceError("FAILED_PRECONDITION",
                               f"round {round_no}: batches {missing or 'beyond the count'} are missing "
                               f"({len(seqs)} received, {batches} announced)")
        self.store.finish_round(session_id, round_no, DONE, batches, holder_note, None)
        self._drop_query(session_id, round_no, found.message_id)     # served: the holder needs it no more
        found = self.store.get_round(session_id, round_no)
        self.store.audit(holder, "finish_round", session_id, round_no, count=found.comparisons,
                         detail=f"batches={batches} matched_rows={found.matched_rows}")
        log.info("session %s round %d: %d comparisons zero-tested", session_id, round_no,
                 found.comparisons)
        self.changed(session_id)
        return found

    def abort_round(self, holder: str, session_id: str, round_no: int, reason: str) -> Round:
        """The holder refuses the round; its spooled query is deleted at once."""
        session = self.session(holder, session_id, "holder")
        found = self._open_round(session, round_no)
        reason = " ".join((reason or "refused by the holder").split())[:300]
        self.store.finish_round(session_id, round_no, ABORTED, 0, None, reason)
        self._drop_query(session_id, round_no, found.message_id)
        self.store.audit(holder, "abort_round", session_id, round_no)
        self.changed(session_id)
        return self.store.get_round(session_id, round_no)

    def _drop_query(self, session_id: str, round_no: int, message_id: str) -> None:
        """Delete a finished round's spooled query (as if its holder had acknowledged it)."""
        path = self.store.round_message_path(session_id, round_no)
        if path is not None:
            Path(path).unlink(missing_ok=True)
            self.store.ack_message(message_id)

    def round_for_querier(self, querier: str, session_id: str, round_no: int) -> Round:
        """The round's status now (the server long-polls until it is no longer pending)."""
        session = self.session(querier, session_id, "querier")
        return self._round(session, round_no)

    def fetch_results(self, querier: str, session_id: str,
                      round_no: int) -> Iterator[list[tuple[list[int], bytes]]]:
        session = self.session(querier, session_id, "querier")
        found = self._round(session, round_no)
        if found.status != DONE:
            raise ServiceError("FAILED_PRECONDITION", f"round {round_no} is not finished")
        self.store.audit(querier, "fetch_results", session_id, round_no, count=found.matched_rows)
        return self.store.iter_matches(session_id, round_no)
