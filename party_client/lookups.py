"""Lookup sessions and the querier's lookup ledger (docs/protocol.md, "Lookup").

A lookup reveals a keyed bucket of the queried identifier to the holder, which
knows the session secret and so buckets every one of its own rows.  The bucket
count meets a risk threshold (:mod:`deid_core.risk.buckets`) twice: for a
person of the population, and among the holder's own people (its distinct keys),
whose number the holder announces to K when it polls for work (:class:`BucketSizing`).

Every lookup session with one holder uses the same secret, the holder's *partition
secret*, kept in the ledger: a person looked up again lands in the same bucket
whatever the session, so sessions give the holder nothing to intersect.  When
the bucket count changes (the holder announced another size), a person's
buckets under the two counts are two intervals of one hash, and the holder
learns their intersection; the ledger of keyed tags (HMAC with the local secret:
no identifier) records the counts each identifier was looked up under, and a
lookup whose identifier's intersection would carry more than the threshold is
refused before any bucket goes out (:meth:`LookupState.admit`).
:func:`run_lookup` runs a lookup round in the holder's reusable session (or a
fresh one) and :func:`lookup_report` says what it revealed.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import logging
import math
import os
import re
import secrets
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass, field as dataclass_field, replace as with_changes
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd

from common.schemes import DEFAULT_SCHEME, RETIRED, get_scheme
from deid_core.risk.buckets import hashed_bucket_risk, max_buckets, shared_bucket_risk
from party_client.crypto.encoding import lookup_hashes, lookup_words, new_session_secret, shared_share
from party_client.errors import ParameterError, PartyError
from party_client.identity import PartyDir, write_secret
from party_client.matching.keys import QuerierKeys
from party_client.protocol.engines.interface import QueryOptions
from party_client.protocol.querier import HolderTimeout, Querier, QueryOutcome
from party_client.transport import KeyHolderRefusal
from party_client.waiting import human_seconds
from proto import linkage_pb2 as pb

LEDGER_SCHEMA = (
    # per holder, the secret of every lookup session with it (docs/protocol.md, "Lookup")
    "CREATE TABLE IF NOT EXISTS partitions (holder TEXT PRIMARY KEY, secret BLOB NOT NULL, created REAL NOT NULL)",
    # per identifier's tag and holder, each bucket count it was looked up under
    "CREATE TABLE IF NOT EXISTS looked_up_at (tag TEXT NOT NULL, holder TEXT NOT NULL, buckets INTEGER NOT NULL, "
    "at REAL NOT NULL, PRIMARY KEY (tag, holder, buckets))",
    # written by versions that drew a fresh secret per session: each row its own, independent partition
    "CREATE TABLE IF NOT EXISTS looked_up (tag TEXT NOT NULL, session_id TEXT NOT NULL, "
    "buckets INTEGER NOT NULL, at REAL NOT NULL, PRIMARY KEY (tag, session_id))",
)
LOCK_WAIT_SECONDS = 900.0       # a lookup opening a session holds the lock through K's retry window (600 s)
LOCK_NOTICE_SECONDS = 2.0
LOCK_POLL_SECONDS = 0.02

REUSE_MARGIN_SECONDS = 60.0       # a lookup session is used until this close to the end of its key's life
ANNOUNCE_POLL_SECONDS = 1.0       # how often a lookup asks whether a holder that never served has announced itself
log = logging.getLogger("party")


#: The largest population a lookup may be sized against: more people than live on Earth is a typo (a risk
#: computed over it would look far smaller than it is).
MAX_POPULATION = 10_000_000_000


@dataclass(frozen=True)
class BucketPlan:
    """A lookup's bucket count and the expected re-identification risk of a revealed bucket against
    each bound: a person of the population, and one of the holder's own people."""

    population: int
    holder_people: int                # as the holder announced them (distinct keys): a public step, rounded down
    buckets: int
    risk: float                       # in the population
    holder_risk: float                # among the holder's people (it buckets them all)
    max_risk: float
    asked: bool = False               # the count was given (``buckets=``), not the most allowed

    @property
    def crowd(self) -> int:
        """The fewer people a bucket hides a person among: the bound that decides."""
        return min(self.population, self.holder_people)

    @property
    def decided_by(self) -> str:
        """Which bound set the bucket count: ``population``, the holder's table, or ``asked``."""
        if self.asked:
            return "asked"
        return "population" if self.population <= self.holder_people else \
            f"holder's table of at least {self.holder_people} people"


@dataclass(frozen=True)
class BucketSizing:
    """What a lookup asks of its buckets: a re-identification risk of at most ``max_risk`` for a
    person of ``population`` and among the holder's people; ``buckets`` a fixed count (None: the most
    both bounds allow).  The population bound is checked at once, the holder's by :meth:`plan`."""

    population: int
    max_risk: float
    buckets: int | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.population <= MAX_POPULATION:
            raise ParameterError("population", f"{{name}} must be a number of people from 1 to {MAX_POPULATION:,} "
                                               "(more than live on Earth): the people your queried persons come from, "
                                               "e.g. the region's residents")
        if not 0 < self.max_risk <= 1:
            raise ParameterError("max_risk", "{name} must lie in (0, 1]")
        if self.buckets is not None:
            if self.buckets < 1:
                raise ParameterError("buckets", "{name} must be at least 1")
            self._check(self.population, f"a population of {self.population}")

    def _check(self, people: int, crowd: str) -> None:
        """Refuse the asked count if a bucket among ``people`` carries more than the threshold."""
        risk = hashed_bucket_risk(people, self.buckets)
        if risk > self.max_risk and self.buckets > 1:
            raise ParameterError("buckets", f"{{name}} {self.buckets} over {crowd} carries a re-identification "
                                            f"risk of {risk:.4f}, above the threshold {self.max_risk}; use at most "
                                            f"{max_buckets(people, self.max_risk)}")

    def plan(self, holder_people: int) -> BucketPlan:
        """The bucket count against the population and the holder's announced people."""
        if self.buckets is not None:
            self._check(holder_people, f"the holder's table of at least {holder_people} people")
        buckets = self.buckets or max_buckets(min(self.population, holder_people), self.max_risk)
        return BucketPlan(self.population, holder_people, buckets, hashed_bucket_risk(self.population, buckets),
                          hashed_bucket_risk(holder_people, buckets), self.max_risk, self.buckets is not None)


def announced_size(querier: Querier, holder: str, timeout: float,
                   sized: str = "lookup buckets are sized") -> int:
    """The holder's table size as it last announced it to K (``GetParty``'s ``table_rows``: its people,
    :attr:`HolderKeys.people`), waiting up to ``timeout`` seconds for a holder that has never served;
    ``sized`` says what is sized from it."""
    started = time.monotonic()
    while True:
        rows = querier.connection.call("GetParty", pb.GetPartyRequest(name=holder)).table_rows
        if rows:
            return rows
        remaining = timeout - (time.monotonic() - started)
        if remaining <= 0:
            raise HolderTimeout(f"holder '{holder}' has not announced its table size within {timeout:g} s: {sized} "
                                "from it, so the holder must be serving (`party hold`)")
        querier.notice.say("announce", started, lambda: (
            f"waiting for holder '{holder}' to announce its table size, which {sized} from "
            f"(it does when serving: `party hold`; up to {human_seconds(remaining)} more)"))
        time.sleep(min(ANNOUNCE_POLL_SECONDS, remaining))


@dataclass
class LookupSession:
    session_id: str
    secret: bytes
    buckets: int
    key_bits: int                      # as asked (0: the scheme's default)
    expires_at: float
    scheme: str = DEFAULT_SCHEME       # the comparison scheme's name (common.schemes)
    holder: str = ""
    created: float = dataclass_field(default_factory=time.time)
    retired: bool = False              # replaced, or of a retired scheme: closed at K once no lookup uses it

    def to_json(self) -> dict:
        return {"session_id": self.session_id, "secret": self.secret.hex(), "buckets": self.buckets,
                "key_bits": self.key_bits, "expires_at": self.expires_at, "scheme": self.scheme,
                "holder": self.holder, "created": self.created, "retired": self.retired}

    @classmethod
    def from_json(cls, saved: dict) -> "LookupSession":
        """The saved session; ``ValueError`` for an unknown scheme.  One of a scheme no longer offered
        (:data:`common.schemes.RETIRED`) is retired: never reused, closed at K once unused."""
        scheme = saved.get("scheme") or DEFAULT_SCHEME
        if scheme not in RETIRED:
            get_scheme(scheme)
        return cls(saved["session_id"], bytes.fromhex(saved["secret"]), saved["buckets"], saved["key_bits"],
                   saved["expires_at"], scheme, saved.get("holder", ""), saved.get("created", 0.0),
                   saved.get("retired", False) or scheme in RETIRED)


@dataclass
class Lease:
    """One lookup's use of a lookup session (released when the lookup ends)."""

    session: pb.SessionInfo
    kept: LookupSession
    token: str


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


SESSION_ID = re.compile(r"\b[0-9a-f]{32}\b")      # K's session ids (uuid4 hex), as salvaged from a damaged file


class DamagedRegistry(PartyError):
    """``lookups/sessions.json`` cannot be read; ``session_ids``: the ids its text still names."""

    def __init__(self, path: Path, reason: str, session_ids: list[str]) -> None:
        self.session_ids = session_ids
        super().__init__(f"{path} is damaged ({reason}); run `party sessions close --all` to close at the key "
                         f"holder the {len(session_ids)} lookup session(s) it still names and set it aside "
                         "(the next lookup starts a new one)")


def read_registry(path: Path) -> dict:
    """The lookup registry (empty when absent), or :class:`DamagedRegistry` when it is not one."""
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else "{}"
    except (OSError, UnicodeDecodeError) as error:
        raise DamagedRegistry(path, f"unreadable: {error}", []) from None
    try:
        registry = json.loads(text)
        if not isinstance(registry, dict):
            raise ValueError("not a JSON object")
        for key in ("sessions", "current", "users"):
            if not isinstance(registry.setdefault(key, {}), dict):
                raise ValueError(f"'{key}' is not an object")
        for saved in registry["sessions"].values():
            saved["retired"] = LookupSession.from_json(saved).retired
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        raise DamagedRegistry(path, str(error).split("\n")[0], sorted(set(SESSION_ID.findall(text)))) from None
    return registry


def _damaged_ledger(path: Path, error: sqlite3.Error) -> PartyError:
    if "readonly" in str(error) or "unable to open" in str(error):
        return PartyError(f"{path} cannot be written ({error}): check its owner and permissions and those of "
                          f"{path.parent}")
    return PartyError(f"{path} is damaged ({error}): it records the identifiers this party has looked up, for their "
                      "combined risk; restore it from a backup of the party directory, or move it aside to start a new "
                      "ledger (past lookups then no longer count)")


class LookupState:
    """The querier's lookup sessions (secrets kept 0600) and the keyed-tag ledger.

    ``lookups/sessions.json`` lists every lookup session this party opened and not yet closed:
    per holder the current one, the retired ones, and which lookups (process, token) use each.
    Every change happens under an exclusive lock on the ``lookups/`` folder itself, so concurrent
    lookups of one party (threads or processes) share one session per holder: the first opens it,
    the others wait for it and reuse it.  A replaced session is closed at K as soon as no lookup
    uses it, so none is left open unlisted (``party sessions list``).
    """

    def __init__(self, party: PartyDir) -> None:
        self.party = party
        self.folder = party.path / "lookups"
        self.folder.mkdir(exist_ok=True)
        self._ledger: sqlite3.Connection | None = None

    def close(self) -> None:
        if self._ledger is not None:
            self._ledger.close()

    @property
    def _db(self) -> sqlite3.Connection:
        """The ledger of past lookups (opened when first needed): a damaged one is named, never replaced,
        since a new ledger would forget every identifier looked up before (its combined risk)."""
        if self._ledger is None:
            path = self.folder / "ledger.sqlite3"
            try:
                if not path.exists():
                    self._create_ledger(path)
                if not path.is_file() or path.stat().st_size == 0:     # a ledger is never empty (see below)
                    raise sqlite3.DatabaseError("not a ledger file" if not path.is_file() else "empty")
                mode = path.stat().st_mode
                if mode & 0o077:          # a ledger of earlier versions was made readable by the group and others
                    with contextlib.suppress(OSError):
                        os.chmod(path, mode & 0o700)
                ledger = sqlite3.connect(str(path), timeout=30.0)
                try:
                    for statement in LEDGER_SCHEMA:       # ledgers made by earlier versions gain their tables
                        ledger.execute(statement)
                except BaseException:
                    ledger.close()
                    raise
            except sqlite3.Error as error:
                raise _damaged_ledger(path, error) from None
            self._ledger = ledger
        return self._ledger

    @staticmethod
    def _create_ledger(path: Path) -> None:
        """A new ledger put in place whole (made aside, then linked to its name unless another lookup's
        was first), so a ledger file is never seen empty and an empty one is damage."""
        aside = path.with_name(f".ledger.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            made = sqlite3.connect(str(aside))
            try:
                for statement in LEDGER_SCHEMA:
                    made.execute(statement)
                made.commit()
            finally:
                made.close()
            os.chmod(aside, 0o600)
            with contextlib.suppress(FileExistsError):
                os.link(aside, path)
        finally:
            aside.unlink(missing_ok=True)

    def check_ledger(self) -> None:
        """Refuse, naming the ledger, unless this process can write it (a write rolled back)."""
        ledger = self._db
        try:
            ledger.execute("BEGIN IMMEDIATE")
            try:
                ledger.execute("INSERT INTO looked_up_at VALUES ('', '', 0, 0)")
            finally:
                ledger.rollback()
        except sqlite3.Error as error:
            raise _damaged_ledger(self.folder / "ledger.sqlite3", error) from None

    # -- the registry of lookup sessions --------------------------------------
    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        """The party's lookup lock: ``flock`` on an open descriptor of the ``lookups/`` folder itself
        (flock(2)), which no one can delete from under a holder, as one could a lock file: a lookup
        that then created the file afresh took the lock beside the holder.  Closing the descriptor
        releases it.  (A ``sessions.lock`` file of earlier versions is ignored.)"""
        descriptor = os.open(self.folder, os.O_RDONLY)
        try:
            started = time.monotonic()
            said = False
            while True:          # flock(2) has no timeout: a hung holder of the lock must not hang us
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    waited = time.monotonic() - started
                    if waited >= LOCK_WAIT_SECONDS:
                        raise PartyError(f"{self._lock_owner()} has held the lookup lock of {self.folder} for "
                                         f"{human_seconds(waited)}: let it finish or stop it, then run this "
                                         "again") from None
                    if waited >= LOCK_NOTICE_SECONDS and not said:
                        log.warning("waiting for the lookup lock of %s, held by %s", self.folder, self._lock_owner())
                        said = True
                    time.sleep(LOCK_POLL_SECONDS)
            with contextlib.suppress(OSError):     # for the notice above only; the lock is the flock
                (self.folder / "lock.owner").write_text(f"{os.getpid()}\n")
            yield
        finally:
            os.close(descriptor)

    def _lock_owner(self) -> str:
        try:
            return f"party command pid {int((self.folder / 'lock.owner').read_text())}"
        except (OSError, ValueError):
            return "another party command"

    @contextmanager
    def _locked(self) -> Iterator[dict]:
        """The registry, read and written back under the party's lookup lock."""
        with self._exclusive():
            path = self.folder / "sessions.json"
            registry = read_registry(path)
            yield registry
            temporary = path.with_suffix(".tmp")
            write_secret(temporary, json.dumps(registry).encode())
            temporary.replace(path)

    def sessions(self) -> list[LookupSession]:
        """The lookup sessions this party has not closed (current and retired)."""
        with self._locked() as registry:
            return [LookupSession.from_json(saved) for saved in registry["sessions"].values()]

    def acquire(self, querier: Querier, holder: str, plan: BucketPlan, options: QueryOptions,
                session_ttl: float, keys: QuerierKeys, replace: str | None = None) -> Lease:
        """The holder's current lookup session if K keeps it open and it fits this lookup (else a
        fresh one, the old one retired); ``replace`` retires that session first (K's round cap)."""
        secret = self.partition_secret(holder)
        with self._locked() as registry:
            current_id = registry["current"].get(holder)
            saved = registry["sessions"].get(current_id) if current_id else None
            kept = LookupSession.from_json(saved) if saved else None
            session = None
            if kept is not None and kept.session_id != replace and self._fits(kept, plan, options):
                try:
                    session = querier.connection.call("GetSession", pb.SessionRef(session_id=kept.session_id))
                except KeyHolderRefusal:
                    session = None
                if session is not None and session.status != pb.OPEN:
                    session = None
            if session is not None and kept.secret != secret:
                session = None                        # a session of an earlier version's own secret
            if session is None:
                if kept is not None:
                    registry["sessions"][kept.session_id]["retired"] = True
                session = querier.open_session("lookup", holder, options, ttl=session_ttl, keys=keys)
                kept = LookupSession(session.session_id, secret, plan.buckets,
                                     options.key_bits, session.expires_at, options.scheme.name, holder)
                registry["sessions"][kept.session_id] = kept.to_json()
                registry["current"][holder] = kept.session_id
            token = secrets.token_hex(8)
            registry["users"].setdefault(kept.session_id, []).append([os.getpid(), token])
            return Lease(session, kept, token)

    @staticmethod
    def _fits(kept: LookupSession, plan: BucketPlan, options: QueryOptions) -> bool:
        # the plan is made from the holder's current announcement: a session sized for another table
        # (finer buckets than a shrunken table allows) is retired, not reused
        return (kept.buckets == plan.buckets and kept.key_bits == options.key_bits and kept.scheme == options.scheme.name
                and kept.expires_at - time.time() >= REUSE_MARGIN_SECONDS)

    def release(self, lease: Lease) -> list[str]:
        """End one lookup's use of its session; returns the sessions to close at K now (retired and
        unused; sessions past their lifetime are only forgotten, K ended them)."""
        with self._locked() as registry:
            users = registry["users"]
            users[lease.kept.session_id] = [u for u in users.get(lease.kept.session_id, []) if u[1] != lease.token]
            return self._sweep(registry)

    def retire(self, session_id: str) -> None:
        with self._locked() as registry:
            if session_id in registry["sessions"]:
                registry["sessions"][session_id]["retired"] = True

    @staticmethod
    def _sweep(registry: dict) -> list[str]:
        now, closable = time.time(), []
        for session_id, saved in list(registry["sessions"].items()):
            users = [u for u in registry["users"].get(session_id, []) if u[0] == os.getpid() or _alive(u[0])]
            registry["users"][session_id] = users
            expired = saved["expires_at"] <= now
            if expired or (saved.get("retired") and not users):
                del registry["sessions"][session_id]
                registry["users"].pop(session_id, None)
                if registry["current"].get(saved.get("holder")) == session_id:
                    del registry["current"][saved["holder"]]
                if not expired:
                    closable.append(session_id)
        return closable

    def damaged_ids(self) -> list[str] | None:
        """None when the registry is sound (or absent); when damaged, the session ids its text still names."""
        with self._exclusive():
            try:
                read_registry(self.folder / "sessions.json")
                return None
            except DamagedRegistry as damaged:
                return damaged.session_ids

    def set_aside(self) -> None:
        """Move a damaged registry to ``sessions.json.damaged`` (its sessions closed), so lookups start anew."""
        with self._exclusive():
            path = self.folder / "sessions.json"
            if path.exists():
                path.replace(path.with_name("sessions.json.damaged"))

    def forget(self, session_ids: list[str]) -> None:
        """Drop sessions closed at K (``party sessions close``)."""
        with self._locked() as registry:
            for session_id in session_ids:
                saved = registry["sessions"].pop(session_id, None)
                registry["users"].pop(session_id, None)
                if saved and registry["current"].get(saved.get("holder")) == session_id:
                    del registry["current"][saved["holder"]]

    # -- the ledger -------------------------------------------------------------
    def tag(self, value: str) -> str:
        return hmac.new(self.party.local_secret, b"ledger/" + value.encode(), hashlib.sha256).hexdigest()

    def partition_secret(self, holder: str) -> bytes:
        """The secret of every lookup session with ``holder``, drawn at the first and kept in the ledger
        (docs/protocol.md, "Lookup": the same person meets the same bucket in every session)."""
        ledger = self._db
        try:
            with ledger:
                ledger.execute("INSERT OR IGNORE INTO partitions VALUES (?, ?, ?)",
                               (holder, new_session_secret(), time.time()))
            (secret,) = ledger.execute("SELECT secret FROM partitions WHERE holder = ?", (holder,)).fetchone()
        except sqlite3.Error as error:
            raise _damaged_ledger(self.folder / "ledger.sqlite3", error) from None
        return bytes(secret)

    def admit(self, keys: QuerierKeys, holder: str, plan: BucketPlan) -> np.ndarray:
        """Check, then record, that looking ``keys``' identifiers up at ``holder`` under ``plan``'s bucket
        count keeps each within the threshold, before any bucket goes out; each identifier's risk once
        the holder intersects all its buckets (among ``plan.crowd`` people).

        Under the holder's partition secret every count ``B`` puts an identifier's hash in one interval;
        the holder knows the intersection of the intervals of every count it was asked under
        (:func:`shared_share`; the same count twice adds nothing).  A lookup recorded by an earlier
        version, under a secret of its own, is an independent partition: its ``1/B`` multiplies the
        share.  :class:`RepeatedLookup` if an identifier's risk would pass both the threshold and the
        risk of this lookup alone (a bucket of the whole table, ``B = 1``, reveals nothing)."""
        table = keys.tables[0]
        tags = [self.tag(v) for v in table.values]
        secret = self.partition_secret(holder)
        ledger = self._db
        try:
            with ledger:
                ledger.execute("BEGIN IMMEDIATE")       # two lookups of one party check and record in turn
                earlier = self._counts(ledger, "SELECT tag, buckets FROM looked_up_at WHERE holder = ? AND tag IN ",
                                       [holder], tags)
                legacy = self._counts(ledger, "SELECT tag, buckets FROM looked_up WHERE tag IN ", [], tags)
                risks = self._risks(table, secret, plan, tags, earlier, legacy)
                alone = hashed_bucket_risk(plan.crowd, plan.buckets)
                over = np.flatnonzero((risks > plan.max_risk) & (risks > alone + 1e-12))
                if len(over):
                    raise RepeatedLookup(table, over, holder, float(risks[over].max()), plan.max_risk)
                now = time.time()
                ledger.executemany("INSERT OR IGNORE INTO looked_up_at VALUES (?, ?, ?, ?)",
                                   [(t, holder, plan.buckets, now) for t in tags])
        except sqlite3.Error as error:
            raise _damaged_ledger(self.folder / "ledger.sqlite3", error) from None
        return risks

    @staticmethod
    def _counts(ledger: sqlite3.Connection, query: str, head: list, tags: list[str]) -> pd.DataFrame:
        """(tag, buckets) rows of the ledger for these tags, read in pieces of SQLite's variable limit."""
        parts = [pd.DataFrame(ledger.execute(query + f"({','.join('?' * len(piece))})", head + piece).fetchall(),
                              columns=["tag", "buckets"])
                 for piece in (tags[i:i + 900] for i in range(0, len(tags), 900))]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["tag", "buckets"])

    @staticmethod
    def _risks(table, secret: bytes, plan: BucketPlan, tags: list[str], earlier: pd.DataFrame,
               legacy: pd.DataFrame) -> np.ndarray:
        """Each identifier's risk once its buckets of every lookup, this one included, are intersected."""
        position = pd.Series(np.arange(len(tags)), index=pd.Index(tags))
        counts = np.sort(earlier["buckets"].unique()).astype(np.uint64)
        grid = np.zeros((len(tags), len(counts) + 1), dtype=np.uint64)   # per identifier, its counts (0: none)
        grid[:, 0] = plan.buckets
        if len(earlier):
            rows = position.reindex(earlier["tag"]).to_numpy()
            grid[rows, 1 + np.searchsorted(counts, earlier["buckets"].to_numpy(dtype=np.uint64))] = \
                earlier["buckets"].to_numpy(dtype=np.uint64)
        hashes = lookup_hashes(secret, lookup_words(table.name, table.values))
        share = shared_share(hashes, grid)
        if len(legacy):
            legacy_share = legacy.assign(share=1.0 / legacy["buckets"].astype(float)).groupby("tag")["share"].prod()
            share *= legacy_share.reindex(tags).fillna(1.0).to_numpy()
        return shared_bucket_risk(plan.crowd, share)


class RepeatedLookup(ParameterError):
    """Identifiers whose buckets, intersected with those of their earlier lookups at the holder, would
    carry more than the threshold: the lookup is refused before any bucket goes out."""

    def __init__(self, table, over: np.ndarray, holder: str, worst: float, threshold: float) -> None:
        records = np.sort(table.record_index[np.isin(table.value_index, over)]) + 1
        shown = ", ".join(str(r) for r in records[:5]) + (", ..." if len(records) > 5 else "")
        self.records = records
        super().__init__("max_risk",
            f"{len(over)} identifier(s) to look up (record {shown} of the input) were looked up at holder "
            f"'{holder}' before under another bucket count (the holder announced another table size since, or an "
            f"earlier version drew a secret per session): asked again, the holder could intersect their buckets "
            f"(risk up to {worst:.4f} > {{name}} {threshold:g}); nothing was sent: leave them out, or look "
            f"them up with {{name}} {math.ceil(worst * 1000) / 1000:g}")


def _fresh_session_helps(querier: Querier, refusal: KeyHolderRefusal, session: pb.SessionInfo) -> bool:
    """Was the lookup refused because of its session (K's round cap reached, or K ended the session
    meanwhile: its lifetime, idle timeout or a close), so that a fresh session would serve it?"""
    if refusal.code not in ("RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "NOT_FOUND"):
        return False
    try:
        current = querier.connection.call("GetSession", pb.SessionRef(session_id=session.session_id))
    except KeyHolderRefusal:
        return True                                    # gone
    if current.status != pb.OPEN:
        return True
    return refusal.code == "RESOURCE_EXHAUSTED" and current.rounds > 0


def run_lookup(querier: Querier, state: LookupState, holder: str, sizing: BucketSizing, keys: QuerierKeys,
               options: QueryOptions, session_ttl: float) -> tuple[pb.SessionInfo, QueryOutcome, BucketPlan, np.ndarray]:
    """One lookup round with buckets sized for the holder's current table, in the holder's lookup
    session shared by this party's lookups while K keeps it open and its bucket count is still the
    plan's (same secret: a person looked up again lands in the same bucket), else in a fresh one
    (``session_ttl`` seconds); returns the session, what the round found, the bucket plan and each
    identifier's risk over all its lookups at the holder (:meth:`LookupState.admit`, before any is sent).
    Sessions it retires are closed at K once no lookup uses them."""
    plan = sizing.plan(announced_size(querier, holder, options.timeout))
    options = with_changes(options, lookup_buckets=plan.buckets)
    risks = state.admit(keys, holder, plan)             # before any bucket goes out
    lease = state.acquire(querier, holder, plan, options, session_ttl, keys)
    try:
        try:
            outcome = querier.run(lease.session, keys, options, lookup_secret=lease.kept.secret)
        except KeyHolderRefusal as refusal:
            # K's round cap per session, or a session K ended: continue in a fresh session (the same
            # partition secret and bucket count: the same buckets).
            if not _fresh_session_helps(querier, refusal, lease.session):
                raise
            _close(querier, state.release(lease))
            lease = state.acquire(querier, holder, plan, options, session_ttl, keys,
                                  replace=lease.kept.session_id)
            outcome = querier.run(lease.session, keys, options, lookup_secret=lease.kept.secret)
    finally:
        _close(querier, state.release(lease))
    return lease.session, outcome, plan, risks


def _close(querier: Querier, session_ids: list[str]) -> None:
    for session_id in session_ids:
        try:
            querier.close(session_id, patient=False)
        except PartyError as error:        # K away: the session stays listed until its lifetime ends
            log.warning("could not close retired lookup session %s: %s", session_id, error)


def lookup_report(plan: BucketPlan, risks: np.ndarray, outcome: QueryOutcome) -> dict:
    """What a lookup revealed: the bucket plan (which bound decided it, its risk in the population
    and among the holder's people) and the worst risk of an identifier once the holder intersects its
    buckets of every lookup at that holder (:meth:`LookupState.admit`: past the threshold it refused)."""
    report = dict(population=plan.population, holder_people=plan.holder_people, buckets=plan.buckets,
                  decided_by=plan.decided_by, risk=round(plan.risk, 6), holder_risk=round(plan.holder_risk, 6),
                  max_risk=plan.max_risk, combined_risk_max=round(float(risks.max(initial=0.0)), 6),
                  session_rounds=outcome.round)
    if plan.buckets == 1:
        report["note"] = ("one bucket: the holder compares the lookup with every row it holds, so the bucket tells it "
                          "nothing of whom it is asked about (its risks are those of a guess among all its people)")
    return report
