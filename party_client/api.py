"""The friendly Python API: a :class:`Party` that joins, de-duplicates, looks up
and holds.

    from party_client import Party
    hospital = Party.init("a-dir", "hospital")
    hospital.register("127.0.0.1:50051", insecure=True)
    result = hospital.join("registry", frame, id_column="hcn")
    result.frame      # input columns + released columns + ``matched``
    result.report     # what happened, with counts and timings
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from party_client.errors import PartyError
from party_client.identity import PartyDir
from party_client.lookups import BucketPlan, LookupSession, LookupState, plan_buckets
from party_client.normalize import FIELD_TYPES
from party_client.protocol import (MODE_NAMES, Holder, HolderData, HolderOptions, Keys, Querier,
                                   QueryOptions, QueryOutcome)
from party_client.tables import read_table, require_columns
from party_client.transport import Connection, register
from proto import linkage_pb2 as pb


@dataclass
class LinkResult:
    frame: pd.DataFrame
    report: dict


def assemble(frame: pd.DataFrame, keys: Keys, outcome: QueryOutcome, matched_column: str,
             with_payload: bool) -> pd.DataFrame:
    """The querier's rows plus released columns (SQL left join) plus ``matched``."""
    matched_keys = {key for key, _ in outcome.matches}
    codes = pd.Series(keys.codes, index=frame.index)
    if not (with_payload and outcome.release_columns):
        return frame.assign(**{matched_column: codes.isin(matched_keys).to_numpy()})
    names = [c if c not in frame.columns else f"{c}_holder" for c in outcome.release_columns]
    payload = pd.DataFrame([[key, *values] for key, values in outcome.matches], columns=["__key", *names])
    if payload.empty:
        payload = payload.astype({name: object for name in names})
    left = frame.reset_index(drop=True).assign(__key=keys.codes)
    joined = left.merge(payload, on="__key", how="left", sort=False)
    joined[matched_column] = joined["__key"].isin(matched_keys).to_numpy()
    return joined.drop(columns="__key")


def _frame(data: pd.DataFrame | str | Path) -> pd.DataFrame:
    return data if isinstance(data, pd.DataFrame) else read_table(data)


class Party:
    """One party: its directory, and a connection to the key holder on demand."""

    def __init__(self, directory: str | Path, keyholder: str | None = None, insecure: bool | None = None,
                 tls_dir: str | Path | None = None, progress: bool | None = None) -> None:
        self.dir = PartyDir.load(Path(directory))
        self.keyholder = keyholder or self.dir.keyholder
        self.insecure = self.dir.insecure if insecure is None else insecure
        self.tls_dir = Path(tls_dir) if tls_dir else None
        self.progress = progress

    @classmethod
    def init(cls, directory: str | Path, name: str, **kwargs) -> "Party":
        PartyDir.create(Path(directory), name)
        return cls(directory, **kwargs)

    @property
    def name(self) -> str:
        return self.dir.name

    def connect(self) -> Connection:
        return Connection(self.dir, self.keyholder, self.insecure, self.tls_dir)

    def register(self, keyholder: str | None = None, insecure: bool | None = None) -> str:
        """Register with the key holder; returns this party's key fingerprint."""
        if keyholder:
            self.keyholder = keyholder
        if insecure is not None:
            self.insecure = insecure
        with self.connect() as connection:
            return register(self.dir, connection).fingerprint

    # -- querier ----------------------------------------------------------------
    def _options(self, id_type: str, key_bits: int, fast_blinding: bool, timeout: float) -> QueryOptions:
        if id_type not in FIELD_TYPES:
            raise PartyError(f"--id-type must be one of {', '.join(FIELD_TYPES)}")
        return QueryOptions(field_type=id_type, key_bits=key_bits, fast_blinding=fast_blinding,
                            timeout=timeout, progress=self.progress)

    def _query(self, mode: str, holder: str, data, id_column: str, matched_column: str,
               options: QueryOptions) -> LinkResult:
        frame = _frame(data)
        require_columns(frame, [id_column], "id")
        if matched_column in frame.columns:
            raise PartyError(f"the input already has a column '{matched_column}': choose --matched-column")
        keys = Keys.from_column(frame[id_column], options.field_type)
        with self.connect() as connection:
            querier = Querier(connection, self.dir)
            session = querier.open_session(mode, holder, options)
            try:
                outcome = querier.run(session, keys, options)
            finally:
                querier.close(session.session_id)
        result = assemble(frame, keys, outcome, matched_column, with_payload=mode == "join")
        return LinkResult(result, self._report(mode, holder, session, keys, outcome, result, matched_column))

    def _report(self, mode, holder, session, keys: Keys, outcome: QueryOutcome, result, matched_column) -> dict:
        matched_records = int(pd.Series(keys.codes).isin({k for k, _ in outcome.matches}).sum())
        return {"mode": mode, "querier": self.name, "holder": holder, "session_id": session.session_id,
                "key_bits": session.key_bits, "blinding": outcome.blinding,
                "release_columns": outcome.release_columns, "matched_records": matched_records,
                "output_rows": int(len(result)), "note": outcome.note, **outcome.facts}

    def join(self, holder: str, data, id_column: str, *, id_type: str = "identifier", key_bits: int = 2048,
             fast_blinding: bool = False, timeout: float = 3600.0, matched_column: str = "matched") -> LinkResult:
        """Equi-join: input rows plus the holder's released columns for matched rows."""
        return self._query("join", holder, data, id_column, matched_column,
                           self._options(id_type, key_bits, fast_blinding, timeout))

    def dedup(self, holder: str, data, id_column: str, *, id_type: str = "identifier", key_bits: int = 2048,
              fast_blinding: bool = False, timeout: float = 3600.0, matched_column: str = "matched") -> LinkResult:
        """Which of our records the holder also has (no payload)."""
        return self._query("dedup", holder, data, id_column, matched_column,
                           self._options(id_type, key_bits, fast_blinding, timeout))

    def lookup(self, holder: str, data, id_column: str, population: int, *, max_risk: float = 0.05,
               buckets: int | None = None, id_type: str = "identifier", key_bits: int = 2048,
               fast_blinding: bool = False, timeout: float = 3600.0, session_ttl: float = 24 * 3600.0,
               matched_column: str = "matched") -> LinkResult:
        """Look a few records up in a large holder through risk-bounded buckets."""
        plan: BucketPlan = plan_buckets(population, max_risk, buckets)
        options = self._options(id_type, key_bits, fast_blinding, timeout)
        options.lookup_buckets = plan.buckets
        frame = _frame(data)
        require_columns(frame, [id_column], "id")
        if matched_column in frame.columns:
            raise PartyError(f"the input already has a column '{matched_column}': choose --matched-column")
        keys = Keys.from_column(frame[id_column], options.field_type)
        if not keys.values:
            raise PartyError("no identifier to look up (all blank)")
        state = LookupState(self.dir)
        try:
            with self.connect() as connection:
                querier = Querier(connection, self.dir)
                saved = state.reusable(holder, plan.buckets, key_bits)
                session = None
                if saved is not None:
                    try:
                        session = connection.call("GetSession", pb.SessionRef(session_id=saved.session_id))
                    except PartyError:
                        session = None
                if session is None or session.status != pb.OPEN:
                    session = querier.open_session("lookup", holder, options, ttl=session_ttl)
                    saved = LookupSession(session.session_id, os.urandom(32), plan.buckets,
                                          key_bits, session.expires_at)
                    state.save(holder, saved)
                outcome = querier.run(session, keys, options, lookup_secret=saved.secret)
            combined = state.record(keys.values, session.session_id, plan.buckets, population)
        finally:
            state.close()
        result = assemble(frame, keys, outcome, matched_column, with_payload=False)
        report = self._report("lookup", holder, session, keys, outcome, result, matched_column)
        worst = max(combined, default=0.0)
        report.update(population=population, buckets=plan.buckets, risk=round(plan.risk, 6),
                      max_risk=max_risk, combined_risk_max=round(worst, 6),
                      session_reused=saved.session_id == session.session_id and session.rounds > 1)
        if worst > max_risk:
            report["warning"] = (f"{sum(r > max_risk for r in combined)} identifier(s) were looked up in "
                                 f"several sessions; the holder could intersect their buckets "
                                 f"(combined risk {worst:.4f} > {max_risk})")
        return LinkResult(result, report)

    # -- holder -----------------------------------------------------------------
    def holder(self, data, id_column: str, release_columns: list[str] | None = None, *,
               id_type: str = "identifier", allow_fast_blinding: bool = False,
               allowed_queriers: list[str] | None = None, connection: Connection | None = None) -> Holder:
        frame = _frame(data)
        release_columns = list(release_columns or [])
        require_columns(frame, [id_column], "id")
        require_columns(frame, release_columns, "release")
        if id_type not in FIELD_TYPES:
            raise PartyError(f"--id-type must be one of {', '.join(FIELD_TYPES)}")
        return Holder(connection or self.connect(), self.dir, HolderData(frame, id_column, release_columns, id_type),
                      HolderOptions(release_columns=release_columns, allow_fast_blinding=allow_fast_blinding,
                                    allowed_queriers=allowed_queriers, progress=self.progress))

    def hold(self, data, id_column: str, release_columns: list[str] | None = None, *, once: bool = True,
             poll_seconds: float = 20.0, **options) -> int:
        """Serve the rounds addressed to us; returns how many were served."""
        holder = self.holder(data, id_column, release_columns, **options)
        try:
            return holder.serve(once=once, poll_seconds=poll_seconds)
        finally:
            holder.connection.close()


def report_line(report: dict) -> str:
    return json.dumps(report, sort_keys=True, default=str)


__all__ = ["Party", "LinkResult", "assemble", "MODE_NAMES"]
