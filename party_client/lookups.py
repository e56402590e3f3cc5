"""Lookup sessions and the querier's lookup ledger (docs/protocol.md, "Lookup").

A lookup reveals a keyed bucket of the queried identifier to the holder.  The
bucket count comes from the population size and a risk threshold
(:mod:`deid_core.risk.buckets`).  A lookup session keeps its secret for its
validity window so that repeated lookups of one person land in the same
bucket; across sessions (different secrets) the holder could intersect
buckets, so the querier keeps a ledger of keyed tags (HMAC with its local
secret: the ledger holds no identifier) and warns when the combined risk of
one identifier passes the threshold.  :func:`run_lookup` runs a lookup round in
the holder's reusable session (or a fresh one) and :func:`lookup_report` says
what it revealed.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
import time
from dataclasses import dataclass, field as dataclass_field
from pathlib import Path

from common.schemes import Scheme, get_scheme
from deid_core.risk.buckets import combined_bucket_risk, hashed_bucket_risk, max_buckets
from party_client.crypto.encoding import new_session_secret
from party_client.errors import PartyError
from party_client.identity import PartyDir, write_secret
from party_client.matching.keys import QuerierKeys
from party_client.protocol.engines.interface import QueryOptions
from party_client.protocol.querier import Querier, QueryOutcome
from party_client.transport import KeyHolderRefusal
from proto import linkage_pb2 as pb

REUSE_MARGIN_SECONDS = 600.0


@dataclass(frozen=True)
class BucketPlan:
    population: int
    buckets: int
    risk: float
    max_risk: float


def plan_buckets(population: int, max_risk: float, buckets: int | None = None) -> BucketPlan:
    """Choose (or check) the bucket count; a count above the threshold is refused."""
    if population < 1:
        raise PartyError("--population must be a positive number of people")
    if not 0 < max_risk <= 1:
        raise PartyError("--max-risk must lie in (0, 1]")
    if buckets is None:
        buckets = max_buckets(population, max_risk)
    elif buckets < 1:
        raise PartyError("--buckets must be at least 1")
    risk = hashed_bucket_risk(population, buckets)
    if risk > max_risk and buckets > 1:
        allowed = max_buckets(population, max_risk)
        raise PartyError(f"{buckets} buckets over a population of {population} carry a re-identification "
                         f"risk of {risk:.4f}, above the threshold {max_risk}; use at most {allowed} buckets")
    return BucketPlan(population, buckets, risk, max_risk)


@dataclass
class LookupSession:
    session_id: str
    secret: bytes
    buckets: int
    key_bits: int                      # as asked (0: the scheme's default)
    expires_at: float
    scheme: Scheme = dataclass_field(default_factory=get_scheme)     # kept in its file by name


class LookupState:
    """Per-holder lookup session (secret kept 0600) and the keyed-tag ledger."""

    def __init__(self, party: PartyDir) -> None:
        self.party = party
        self.folder = party.path / "lookups"
        self.folder.mkdir(exist_ok=True)
        self._db = sqlite3.connect(str(self.folder / "ledger.sqlite3"))
        self._db.execute("CREATE TABLE IF NOT EXISTS looked_up (tag TEXT NOT NULL, session_id TEXT NOT NULL, "
                         "buckets INTEGER NOT NULL, at REAL NOT NULL, PRIMARY KEY (tag, session_id))")

    def close(self) -> None:
        self._db.close()

    def _path(self, holder: str) -> Path:
        return self.folder / f"{holder}.session.json"

    def reusable(self, holder: str, buckets: int, key_bits: int, scheme: Scheme) -> LookupSession | None:
        path = self._path(holder)
        if not path.exists():
            return None
        state = json.loads(path.read_text())
        if state.get("scheme", "") not in ("", scheme.name):      # another (perhaps unknown) scheme: not reused
            return None
        session = LookupSession(state["session_id"], bytes.fromhex(state["secret"]), state["buckets"],
                                state["key_bits"], state["expires_at"], get_scheme(state.get("scheme")))
        if (session.buckets != buckets or session.key_bits != key_bits or session.scheme is not scheme
                or session.expires_at - time.time() < REUSE_MARGIN_SECONDS):
            return None
        return session

    def save(self, holder: str, session: LookupSession) -> None:
        write_secret(self._path(holder), json.dumps({
            "session_id": session.session_id, "secret": session.secret.hex(), "buckets": session.buckets,
            "key_bits": session.key_bits, "expires_at": session.expires_at, "scheme": session.scheme.name}).encode())

    def forget(self, holder: str) -> None:
        self._path(holder).unlink(missing_ok=True)

    def tag(self, value: str) -> str:
        return hmac.new(self.party.local_secret, b"ledger/" + value.encode(), hashlib.sha256).hexdigest()

    def record(self, values: list[str], session_id: str, buckets: int, population: int) -> list[float]:
        """Log this session's lookups; return each identifier's combined risk over all sessions."""
        now = time.time()
        tags = [self.tag(v) for v in values]
        with self._db:
            self._db.executemany("INSERT OR IGNORE INTO looked_up VALUES (?, ?, ?, ?)",
                                 [(t, session_id, buckets, now) for t in tags])
        risks = []
        for tag in tags:
            counts = [row[0] for row in self._db.execute("SELECT buckets FROM looked_up WHERE tag = ?", (tag,))]
            risks.append(combined_bucket_risk(population, counts))
        return risks


def run_lookup(querier: Querier, state: LookupState, holder: str, plan: BucketPlan, keys: QuerierKeys,
               options: QueryOptions, session_ttl: float) -> tuple[pb.SessionInfo, QueryOutcome]:
    """One lookup round, in the holder's saved lookup session while K keeps it open (same secret: a
    person looked up again lands in the same bucket), else in a fresh one (``session_ttl`` seconds);
    returns the session and what the round found."""
    connection = querier.connection
    saved = state.reusable(holder, plan.buckets, options.key_bits, options.scheme)
    session = None
    if saved is not None:
        try:
            session = connection.call("GetSession", pb.SessionRef(session_id=saved.session_id))
        except KeyHolderRefusal:
            session = None

    def fresh() -> tuple[pb.SessionInfo, LookupSession]:
        opened = querier.open_session("lookup", holder, options, ttl=session_ttl, keys=keys)
        kept = LookupSession(opened.session_id, new_session_secret(), plan.buckets, options.key_bits,
                             opened.expires_at, options.scheme)
        state.save(holder, kept)
        return opened, kept
    if session is None or session.status != pb.OPEN:
        session, saved = fresh()
    try:
        outcome = querier.run(session, keys, options, lookup_secret=saved.secret)
    except KeyHolderRefusal as refusal:
        # K's round cap per session: the query was not relayed; continue in a fresh session
        # (a new secret: the ledger warns if the holder could intersect buckets, :func:`lookup_report`).
        if refusal.code != "RESOURCE_EXHAUSTED" or not session.rounds or connection.call(
                "GetSession", pb.SessionRef(session_id=session.session_id)).rounds != session.rounds:
            raise
        querier.close(session.session_id)
        session, saved = fresh()
        outcome = querier.run(session, keys, options, lookup_secret=saved.secret)
    return session, outcome


def lookup_report(plan: BucketPlan, combined: list[float], session: pb.SessionInfo) -> dict:
    """What a lookup revealed: the bucket plan's risk, the worst combined risk over the ledger
    (:meth:`LookupState.record`), and a warning when it passes the threshold."""
    worst = max(combined, default=0.0)
    report = dict(population=plan.population, buckets=plan.buckets, risk=round(plan.risk, 6),
                  max_risk=plan.max_risk, combined_risk_max=round(worst, 6), session_rounds=session.rounds + 1)
    if worst > plan.max_risk:
        report["warning"] = (f"{sum(r > plan.max_risk for r in combined)} identifier(s) were looked up in "
                             f"several sessions; the holder could intersect their buckets "
                             f"(combined risk {worst:.4f} > {plan.max_risk})")
    return report
