"""The key holder's embedded state: one SQLite database in the data directory.

It holds parties (name, X25519 public key, SHA-256 of the bearer token, a
holder's announced table size),
sessions (comparison scheme, public key, private key encrypted at rest), rounds, the relay
index, the zero-tested batches, the sealed attachments of matching rows, and
an audit log of who did what with counts only.  By construction nothing here
is an identifier, an encoding or a released value in the clear: K never
receives any of them unsealed.  ``secure_delete`` overwrites destroyed keys.
"""
from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB);
CREATE TABLE IF NOT EXISTS parties (
    name TEXT PRIMARY KEY, x25519 BLOB NOT NULL, fingerprint TEXT NOT NULL,
    token_sha256 TEXT NOT NULL UNIQUE, registered_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, mode INTEGER NOT NULL, querier TEXT NOT NULL, holder TEXT NOT NULL,
    key_bits INTEGER NOT NULL, modulus BLOB NOT NULL, wrapped_key BLOB,
    status INTEGER NOT NULL, created_at REAL NOT NULL, expires_at REAL NOT NULL,
    closed_at REAL);
CREATE TABLE IF NOT EXISTS rounds (
    session_id TEXT NOT NULL, round INTEGER NOT NULL, status INTEGER NOT NULL,
    message_id TEXT, comparisons INTEGER NOT NULL DEFAULT 0,
    matched_rows INTEGER NOT NULL DEFAULT 0, batches INTEGER, holder_note BLOB,
    reason TEXT, created_at REAL NOT NULL, finished_at REAL,
    PRIMARY KEY (session_id, round));
CREATE TABLE IF NOT EXISTS batches (
    session_id TEXT NOT NULL, round INTEGER NOT NULL, seq INTEGER NOT NULL,
    comparisons INTEGER NOT NULL, received_at REAL NOT NULL,
    PRIMARY KEY (session_id, round, seq));
CREATE TABLE IF NOT EXISTS matches (
    session_id TEXT NOT NULL, round INTEGER NOT NULL, seq INTEGER NOT NULL,
    row INTEGER NOT NULL, indices TEXT NOT NULL, attachment BLOB NOT NULL,
    PRIMARY KEY (session_id, round, seq, row));
CREATE TABLE IF NOT EXISTS messages (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL, kind TEXT NOT NULL,
    sender TEXT NOT NULL, recipient TEXT NOT NULL, size INTEGER NOT NULL,
    path TEXT, round INTEGER, created_at REAL NOT NULL, acked_at REAL);
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, party TEXT,
    action TEXT NOT NULL, session_id TEXT, round INTEGER, count INTEGER, detail TEXT);
"""
# Columns added after the first release: (table, column, type), added when missing.
MIGRATIONS = (("sessions", "max_query_bytes", "INTEGER NOT NULL DEFAULT 0"),
              ("sessions", "active_at", "REAL"),
              ("rounds", "attachment_bytes", "INTEGER"),
              ("sessions", "scheme", "TEXT NOT NULL DEFAULT 'paillier'"),   # sessions before schemes: Paillier
              ("parties", "table_rows", "INTEGER"))    # a holder's announced table size; NULL: none yet


class RoundCapReached(Exception):
    """A session already has the most rounds it may have (:meth:`Store.add_message`)."""


@dataclass(frozen=True)
class Party:
    name: str
    x25519: bytes
    fingerprint: str
    registered_at: float
    table_rows: int = 0               # as last announced serving (a public step); 0: never announced


@dataclass(frozen=True)
class Session:
    id: str
    mode: int
    querier: str
    holder: str
    key_bits: int
    public_key: bytes                 # the scheme's public key (stored in the column ``modulus``)
    wrapped_key: bytes | None
    status: int
    created_at: float
    expires_at: float
    rounds: int
    max_query_bytes: int = 0
    active_at: float = 0.0
    scheme: str = "paillier"          # the comparison scheme (common.schemes)


@dataclass(frozen=True)
class Round:
    session_id: str
    round: int
    status: int
    message_id: str | None
    comparisons: int
    matched_rows: int
    batches: int | None
    holder_note: bytes | None
    reason: str | None
    attachment_bytes: int | None = None


@dataclass(frozen=True)
class Message:
    id: str
    session_id: str
    kind: str
    sender: str
    recipient: str
    size: int
    path: str | None
    round: int | None


class DamagedStore(ValueError):
    """The store file is not a SQLite database K can open; it is left as it is."""

    def __init__(self, path: Path, error: sqlite3.Error) -> None:
        super().__init__(f"{path} is not a key holder store K can open ({error}): restore it from a backup of the "
                         "data directory, or move it aside to start an empty store (its sessions, keys and audit "
                         "log are then gone)")


class Store:
    """Thread-safe access to the key holder's SQLite database."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._lock = threading.RLock()
        try:
            self._open()
        except sqlite3.DatabaseError as error:
            self._db.close()
            raise DamagedStore(path, error) from None

    def _open(self) -> None:
        """The pragmas, the schema and its migrations (a damaged file fails at the first statement)."""
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA secure_delete=ON")
            self._db.executescript(SCHEMA)
            for table, column, kind in MIGRATIONS:
                present = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
                if column not in present:
                    self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _one(self, sql: str, args: tuple = ()) -> tuple | None:
        with self._lock:
            return self._db.execute(sql, args).fetchone()

    def _all(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    # -- meta ---------------------------------------------------------------
    def get_meta(self, key: str) -> bytes | None:
        row = self._one("SELECT value FROM meta WHERE key = ?", (key,))
        return None if row is None else row[0]

    def set_meta(self, key: str, value: bytes) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # -- parties ------------------------------------------------------------
    def get_party(self, name: str) -> Party | None:
        row = self._one("SELECT name, x25519, fingerprint, registered_at, COALESCE(table_rows, 0) FROM parties "
                        "WHERE name = ?", (name,))
        return None if row is None else Party(*row)

    def party_for_token(self, token_sha256: str) -> tuple[str, float] | None:
        """(name, time the token was issued) of a token's party."""
        row = self._one("SELECT name, registered_at FROM parties WHERE token_sha256 = ?", (token_sha256,))
        return None if row is None else (row[0], row[1])

    def token_of(self, name: str) -> str | None:
        row = self._one("SELECT token_sha256 FROM parties WHERE name = ?", (name,))
        return None if row is None else row[0]

    def put_party(self, name: str, x25519: bytes, fingerprint: str, token_sha256: str) -> None:
        """Register or re-register a party (a re-registration keeps its announced table size)."""
        with self.transaction() as db:
            db.execute("INSERT INTO parties (name, x25519, fingerprint, token_sha256, registered_at) "
                       "VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET x25519 = excluded.x25519, "
                       "fingerprint = excluded.fingerprint, token_sha256 = excluded.token_sha256, "
                       "registered_at = excluded.registered_at",
                       (name, x25519, fingerprint, token_sha256, time.time()))

    def set_table_rows(self, name: str, rows: int) -> None:
        with self.transaction() as db:
            db.execute("UPDATE parties SET table_rows = ? WHERE name = ?", (rows, name))

    # -- sessions -----------------------------------------------------------
    _SESSION_COLUMNS = ("id, mode, querier, holder, key_bits, modulus, wrapped_key, status, "
                        "created_at, expires_at, "
                        "(SELECT COUNT(*) FROM rounds r WHERE r.session_id = sessions.id), "
                        "max_query_bytes, COALESCE(active_at, created_at), scheme")

    def add_session(self, session: Session) -> None:
        with self.transaction() as db:
            db.execute("INSERT INTO sessions (id, mode, querier, holder, key_bits, modulus, wrapped_key, "
                       "status, created_at, expires_at, max_query_bytes, active_at, scheme) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (session.id, session.mode, session.querier, session.holder, session.key_bits,
                        session.public_key, session.wrapped_key, session.status, session.created_at,
                        session.expires_at, session.max_query_bytes, session.created_at, session.scheme))

    def get_session(self, session_id: str) -> Session | None:
        row = self._one(f"SELECT {self._SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,))
        return None if row is None else Session(*row)

    def sessions_to_expire(self, now: float, open_status: int) -> list[str]:
        return [r[0] for r in self._all(
            "SELECT id FROM sessions WHERE status = ? AND expires_at <= ?", (open_status, now))]

    def open_sessions_of(self, querier: str, open_status: int, now: float) -> int:
        (count,) = self._one("SELECT COUNT(*) FROM sessions WHERE querier = ? AND status = ? AND expires_at > ?",
                             (querier, open_status, now))
        return int(count)

    def touch_session(self, session_id: str, now: float) -> None:
        with self.transaction() as db:
            db.execute("UPDATE sessions SET active_at = ? WHERE id = ?", (now, session_id))

    def idle_sessions(self, before: float, open_status: int) -> list[str]:
        return [r[0] for r in self._all(
            "SELECT id FROM sessions WHERE status = ? AND COALESCE(active_at, created_at) <= ?",
            (open_status, before))]

    def live_spool_paths(self) -> set[str]:
        return {r[0] for r in self._all("SELECT path FROM messages WHERE path IS NOT NULL")}

    def spool_bytes(self, session_id: str | None = None) -> int:
        """Bytes of spooled, unacknowledged messages: of one session, or of all."""
        if session_id is None:
            row = self._one("SELECT COALESCE(SUM(size), 0) FROM messages WHERE path IS NOT NULL")
        else:
            row = self._one("SELECT COALESCE(SUM(size), 0) FROM messages WHERE path IS NOT NULL "
                            "AND session_id = ?", (session_id,))
        return int(row[0])

    def end_session(self, session_id: str, status: int) -> list[str]:
        """Mark a session ended, destroy its private key and sealed results.

        Returns the spool paths of its messages for the caller to delete.
        """
        with self.transaction() as db:
            paths = [r[0] for r in db.execute(
                "SELECT path FROM messages WHERE session_id = ? AND path IS NOT NULL", (session_id,))]
            db.execute("UPDATE sessions SET status = ?, wrapped_key = NULL, closed_at = ? WHERE id = ?",
                       (status, time.time(), session_id))
            db.execute("DELETE FROM matches WHERE session_id = ?", (session_id,))
            db.execute("UPDATE rounds SET holder_note = NULL WHERE session_id = ?", (session_id,))
            db.execute("UPDATE messages SET path = NULL WHERE session_id = ?", (session_id,))
        return paths

    # -- rounds -------------------------------------------------------------
    _ROUND_COLUMNS = ("session_id, round, status, message_id, comparisons, matched_rows, batches, "
                      "holder_note, reason, attachment_bytes")

    def get_round(self, session_id: str, round_no: int) -> Round | None:
        row = self._one(f"SELECT {self._ROUND_COLUMNS} FROM rounds WHERE session_id = ? AND round = ?",
                        (session_id, round_no))
        return None if row is None else Round(*row)

    def pending_rounds(self, holder: str, pending: int, open_status: int) -> list[Round]:
        rows = self._all(
            f"SELECT {', '.join('r.' + c.strip() for c in self._ROUND_COLUMNS.split(','))} "
            "FROM rounds r JOIN sessions s ON s.id = r.session_id "
            "WHERE s.holder = ? AND s.status = ? AND r.status = ? AND r.batches IS NULL "
            "ORDER BY r.created_at", (holder, open_status, pending))
        return [Round(*row) for row in rows]

    def finish_round(self, session_id: str, round_no: int, status: int, batches: int | None,
                     holder_note: bytes | None, reason: str | None) -> None:
        with self.transaction() as db:
            db.execute("UPDATE rounds SET status = ?, batches = ?, holder_note = ?, reason = ?, "
                       "finished_at = ? WHERE session_id = ? AND round = ?",
                       (status, batches, holder_note, reason, time.time(), session_id, round_no))

    def fix_attachment_bytes(self, session_id: str, round_no: int, length: int) -> int:
        """The round's attachment length: the first batch's, kept from then on."""
        with self.transaction() as db:
            db.execute("UPDATE rounds SET attachment_bytes = ? WHERE session_id = ? AND round = ? "
                       "AND attachment_bytes IS NULL", (length, session_id, round_no))
            (fixed,) = db.execute("SELECT attachment_bytes FROM rounds WHERE session_id = ? AND round = ?",
                                  (session_id, round_no)).fetchone()
        return int(fixed)

    def batch_seqs(self, session_id: str, round_no: int) -> list[int]:
        return [r[0] for r in self._all(
            "SELECT seq FROM batches WHERE session_id = ? AND round = ? ORDER BY seq",
            (session_id, round_no))]

    def add_batch(self, session_id: str, round_no: int, seq: int, comparisons: int,
                  matches: list[tuple[int, list[int], bytes]]) -> bool:
        """Record one zero-tested batch and its matching rows; False if seen before."""
        with self.transaction() as db:
            seen = db.execute("SELECT 1 FROM batches WHERE session_id = ? AND round = ? AND seq = ?",
                              (session_id, round_no, seq)).fetchone()
            if seen:
                return False
            db.execute("INSERT INTO batches VALUES (?, ?, ?, ?, ?)",
                       (session_id, round_no, seq, comparisons, time.time()))
            db.executemany("INSERT INTO matches VALUES (?, ?, ?, ?, ?, ?)",
                           [(session_id, round_no, seq, row, ",".join(map(str, indices)), blob)
                            for row, indices, blob in matches])
            db.execute("UPDATE rounds SET comparisons = comparisons + ?, matched_rows = matched_rows + ? "
                       "WHERE session_id = ? AND round = ?",
                       (comparisons, len(matches), session_id, round_no))
        return True

    def iter_matches(self, session_id: str, round_no: int,
                     page: int = 1000) -> Iterator[list[tuple[list[int], bytes]]]:
        last = (-1, -1)
        while True:
            rows = self._all("SELECT seq, row, indices, attachment FROM matches "
                             "WHERE session_id = ? AND round = ? AND (seq, row) > (?, ?) "
                             "ORDER BY seq, row LIMIT ?", (session_id, round_no, last[0], last[1], page))
            if not rows:
                return
            last = (rows[-1][0], rows[-1][1])
            yield [([int(i) for i in indices.split(",")], blob) for _, _, indices, blob in rows]

    # -- messages -----------------------------------------------------------
    def add_message(self, message: Message, open_round: bool, pending: int, max_rounds: int | None = None) -> Message:
        """Index a spooled message; a query also opens the session's next round, unless the session has
        ``max_rounds`` already (:class:`RoundCapReached`: counted in the same transaction, so concurrent
        uploads cannot pass the cap together)."""
        with self.transaction() as db:
            round_no = None
            if open_round:
                (count,) = db.execute("SELECT COUNT(*) FROM rounds WHERE session_id = ?",
                                      (message.session_id,)).fetchone()
                if max_rounds is not None and count >= max_rounds:
                    raise RoundCapReached(message.session_id)
                round_no = int(count) + 1
                db.execute("INSERT INTO rounds (session_id, round, status, message_id, created_at) "
                           "VALUES (?, ?, ?, ?, ?)",
                           (message.session_id, round_no, pending, message.id, time.time()))
            db.execute("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                       (message.id, message.session_id, message.kind, message.sender, message.recipient,
                        message.size, message.path, round_no, time.time()))
        return Message(message.id, message.session_id, message.kind, message.sender,
                       message.recipient, message.size, message.path, round_no)

    def get_message(self, message_id: str) -> Message | None:
        row = self._one("SELECT id, session_id, kind, sender, recipient, size, path, round "
                        "FROM messages WHERE id = ?", (message_id,))
        return None if row is None else Message(*row)

    def round_message_path(self, session_id: str, round_no: int) -> str | None:
        row = self._one("SELECT m.path FROM rounds r JOIN messages m ON m.id = r.message_id "
                        "WHERE r.session_id = ? AND r.round = ?", (session_id, round_no))
        return None if row is None else row[0]

    def ack_message(self, message_id: str) -> None:
        with self.transaction() as db:
            db.execute("UPDATE messages SET path = NULL, acked_at = ? WHERE id = ?",
                       (time.time(), message_id))

    # -- audit --------------------------------------------------------------
    def audit(self, party: str | None, action: str, session_id: str | None = None,
              round_no: int | None = None, count: int | None = None, detail: str | None = None) -> None:
        """Append who did what; ``count`` and ``detail`` carry counts and parameters only."""
        with self.transaction() as db:
            db.execute("INSERT INTO audit (at, party, action, session_id, round, count, detail) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (time.time(), party, action, session_id, round_no, count, detail))

    def audit_rows(self) -> list[tuple]:
        return self._all("SELECT at, party, action, session_id, round, count, detail FROM audit ORDER BY id")


#: The key holder's SQLite file inside its data directory.
STORE_FILE = "keyholder.sqlite3"


def read_audit(data_dir: Path) -> list[tuple]:
    """The audit rows of the key holder whose data directory is ``data_dir`` (FileNotFoundError if none)."""
    path = Path(data_dir) / STORE_FILE
    if not path.is_file():
        raise FileNotFoundError(path)
    store = Store(path)
    try:
        return store.audit_rows()
    finally:
        store.close()
