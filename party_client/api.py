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

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from common.distributed import CONNECT_SECONDS, Cluster
from common.schemes import SCHEME_NAMES, Scheme, get_scheme, parse_scheme_list
from party_client.errors import Interrupted, PartyError
from party_client.lookups import BucketSizing, LookupState, lookup_report, run_lookup
from party_client.matching.agreement import check_agreement, matching_fields
from party_client.matching.normalize import FIELD_TYPES
from party_client.matching.parsing import check_unparsed, unparsed_fields
from party_client.matching.assignment import kept_of_tied, one_to_one as choose_one_to_one, reported_weight
from party_client.matching.level_rules import LevelRules
from party_client.matching.term_rules import Rules
from party_client.matching.rules_file import load_rules
from party_client.matching.keys import QuerierKeys, exact_holder_keys, exact_querier_keys
from party_client.protocol.engines.interface import HolderData, QueryOptions
from party_client.protocol.engines.session_indexes import DEFAULT_BUDGET_BYTES
from party_client.protocol.holder import Holder, HolderOptions
from party_client.protocol.querier import HolderTimeout, Querier, QueryOutcome
from party_client.protocol.submitting import SUBMIT_WINDOW
from party_client.protocol.wire import MODE_NAMES, session_scheme
from party_client.sessions_state import SessionState, SessionStates, fingerprint
from party_client.files import read_table, require_columns, require_records
from party_client.registrant import Registrant
from party_client.transport import Connection, ConnectionProblem, KeyHolderRefusal
from proto import linkage_pb2 as pb


@dataclass
class LinkResult:
    frame: pd.DataFrame
    report: dict


def assemble(frame: pd.DataFrame, keys: QuerierKeys, outcome: QueryOutcome, matched_column: str,
             with_payload: bool, term_column: str | None = None, one_to_one: bool = False,
             duplicate_free: bool = False, facts: dict | None = None) -> pd.DataFrame:
    """The querier's rows plus released columns (SQL left join) plus ``matched``.

    A record matched by several holder rows appears once per match (join), or once with its best
    match (``one_to_one``: most rule terms fired, then the first); ``term_column`` names the key
    tables (rule terms) through which each pair matched.  With comparison levels each match has its
    weight (``match_weight``), ``one_to_one`` keeps the heaviest, and ``duplicate_free`` (both tables
    declared free of duplicates) the global assignment of largest total weight; ``facts`` receives
    ``records_kept_of_tied_rows`` then (:func:`party_client.matching.assignment.kept_of_tied`).
    """
    base = frame.reset_index(drop=True)
    matched = matched_mask(keys, outcome)
    if not (with_payload and (outcome.release_columns or one_to_one)) and term_column is None:
        return base.assign(**{matched_column: matched})
    linked = linked_records(keys, outcome)
    names = [c if c not in base.columns else f"{c}_holder" for c in outcome.release_columns]
    pairs = linked.groupby(["__record", "__match"], sort=True)["table"].agg(
        lambda tables: "|".join(keys.tables[t].name for t in sorted(set(tables)))).rename("__terms").reset_index()
    weighted = bool(outcome.levels) and keys.blocked is not None and keys.blocked.layouts[0].weighted is not None
    if weighted:
        layout = keys.blocked.layouts[0]
        pairs["__weight"] = [reported_weight(layout, outcome.levels.get((m, r), []))
                             for r, m in zip(pairs["__record"], pairs["__match"])]
    if one_to_one and weighted:
        chosen = choose_one_to_one(pairs, duplicate_free)
        if facts is not None:
            facts["records_kept_of_tied_rows"] = kept_of_tied(pairs, chosen)
        pairs = chosen
    elif one_to_one:
        fired = pairs["__terms"].str.count(r"\|")
        pairs = pairs.assign(__fired=fired).sort_values(["__record", "__fired", "__match"],
                                                         ascending=[True, False, True])
        pairs = pairs.drop_duplicates("__record").drop(columns="__fired")
    if not with_payload:                      # one row per record; the terms of all its matches
        terms = pairs.groupby("__record")["__terms"].agg(lambda ts: "|".join(sorted(set("|".join(ts).split("|")))))
        return base.assign(**{matched_column: matched, term_column: terms.reindex(base.index).fillna("")})
    payload = pd.DataFrame([values for _, values in outcome.matches], columns=names,
                           index=pd.RangeIndex(len(outcome.matches), name="__match")).astype(object)
    joined = base.assign(__record=base.index).merge(pairs, on="__record", how="left")
    joined = joined.join(payload, on="__match")
    joined[matched_column] = joined["__match"].notna().to_numpy()
    if term_column is not None:
        joined[term_column] = joined["__terms"].fillna("")
    if weighted:
        joined["match_weight"] = joined.pop("__weight").round(3)
    return joined.drop(columns=["__record", "__match", "__terms"])


def linked_records(keys: QuerierKeys, outcome: QueryOutcome) -> pd.DataFrame:
    """(__match, table, value, __record): which querier records each matching holder row hit."""
    hits = pd.DataFrame([(m, t, v) for m, (found, _) in enumerate(outcome.matches) for t, v in found],
                        columns=["__match", "table", "value"], dtype="int64")
    return hits.merge(keys.pairs(), on=["table", "value"]).rename(columns={"record": "__record"})


def matched_mask(keys: QuerierKeys, outcome: QueryOutcome) -> np.ndarray:
    """Per querier record (in input order): did a matching holder row hit one of its keys?  The
    records of :func:`linked_records`, found with numpy instead of a merge (a lookup's hot path)."""
    hit: dict[int, list[int]] = {}
    for found, _ in outcome.matches:
        for table, value in found:
            hit.setdefault(table, []).append(value)
    mask = np.zeros(keys.records, dtype=bool)
    for table, values in hit.items():
        key_table = keys.tables[table]
        mask[key_table.record_index[np.isin(key_table.value_index, values)]] = True
    return mask


#: A join's choice among a record's matches (``one_to_one``): without weights (exact or rule terms), with
#: comparison levels' weights, and with them and both tables declared duplicate-free (see :func:`assemble`).
ASSIGNMENTS = {"terms": "one per record: the match through the most rule terms, else the first (--one-to-one)",
               "heaviest": "one per record: its heaviest match (--one-to-one)",
               "assignment": "one per person: the assignment of largest total weight, both tables declared "
                             "duplicate-free (--one-to-one --duplicate-free)"}


def matched_more_than_once(keys: QuerierKeys, outcome: QueryOutcome) -> int:
    """How many querier records matched more than one holder row."""
    if not outcome.matches:
        return 0
    return int((linked_records(keys, outcome).groupby("__record")["__match"].nunique() > 1).sum())


def matched_records(keys: QuerierKeys, outcome: QueryOutcome) -> int:
    """How many distinct querier records matched at least one holder row."""
    return int(matched_mask(keys, outcome).sum())


def _frame(data: pd.DataFrame | str | Path) -> pd.DataFrame:
    return data if isinstance(data, pd.DataFrame) else read_table(data)


class Party(Registrant):
    """One party: its directory, a connection to the key holder on demand (:class:`Registrant`), and
    the linkage it takes part in: join, dedup, lookup (as querier) and hold."""

    # -- querier ----------------------------------------------------------------
    def _options(self, key_bits: int | None, timeout: float, scheme: str | Scheme | None) -> QueryOptions:
        """The query's options; ``key_bits`` None (0) is the scheme's default size; ``scheme`` a
        :class:`Scheme` or its name (empty or None: the default)."""
        if not isinstance(scheme, Scheme):
            try:
                scheme = get_scheme(scheme)
            except ValueError as error:
                raise PartyError(str(error)) from None
        return QueryOptions(key_bits=key_bits or 0, timeout=timeout, scheme=scheme, progress=self.progress)

    @staticmethod
    def _rules(rules):
        """``rules`` loaded (a path or a document) or as given (rules, or None for an exact join)."""
        return rules if rules is None or isinstance(rules, (Rules, LevelRules)) else load_rules(rules)

    @staticmethod
    def _prepare(data, id_column: str | None, id_type: str, rules, matched_column: str,
                 side: str, force: bool = False) -> tuple[pd.DataFrame, object]:
        """The input table and its matching keys (exact on ``id_column`` or from ``rules``); a field
        whose values mostly cannot be read is refused unless ``force`` (:mod:`party_client.matching.parsing`)."""
        frame = _frame(data)
        require_records(frame, "the input table" if isinstance(data, pd.DataFrame) else data, id_column)
        if matched_column and matched_column in frame.columns:
            raise PartyError(f"the input already has a column '{matched_column}': choose --matched-column")
        if (id_column is None) == (rules is None):
            raise PartyError("give either an id column or a rules file")
        if rules is not None:
            rules = Party._rules(rules)
            check_unparsed(unparsed_fields(rules, frame), force)
            return frame, rules.querier_keys(frame) if side == "querier" else rules.holder_keys(frame)
        require_columns(frame, [id_column], "id")
        if id_type not in FIELD_TYPES:
            raise PartyError(f"--id-type must be one of {', '.join(FIELD_TYPES)}")
        keys = exact_querier_keys if side == "querier" else exact_holder_keys
        return frame, keys(frame[id_column], id_type)

    def _query(self, mode: str, holder: str, data, id_column: str | None, *, rules=None,
               id_type: str = "identifier", key_bits: int | None = None, timeout: float = 3600.0,
               matched_column: str = "matched", term_column: str | None = None, one_to_one: bool = False,
               scheme: str | Scheme | None = None, duplicate_free: bool = False, dask_client=None,
               dask_timeout: float = CONNECT_SECONDS, force: bool = False) -> LinkResult:
        options = self._options(key_bits, timeout, scheme)
        if dask_client is not None:         # the encryption runs on the querier's own Dask cluster
            options.cluster = Cluster(dask_client, dask_timeout)
        signature = fingerprint(mode, holder, self.keyholder, data, id_column, id_type, rules, options.key_bits,
                                options.cuckoo, options.scheme.name)       # the rules as given (a file: its bytes)
        rules = self._rules(rules)                 # loaded once, for the keys and the agreement check
        if isinstance(rules, LevelRules) and rules.awaits_holder_rows:
            rules = self._at_holder_rows(rules, holder, options.timeout)
        frame, keys = self._prepare(data, id_column, id_type, rules, matched_column, "querier", force)
        states = SessionStates(self.dir)
        with self.connect() as connection:
            check_agreement(holder, keys.spec, matching_fields(rules),
                            connection.call("GetParty", pb.GetPartyRequest(name=holder)).matching)
            querier = Querier(connection, self.dir)
            session, state = self._resume(querier, states, signature)
            if session is None:
                session = querier.open_session(mode, holder, options, keys=keys)
                state = SessionState(session.session_id, holder, mode, connection.address, signature)
                states.save(state)
            outcome = self._round(querier, states, session, state, keys, options)
            try:
                querier.close(session.session_id)
                states.delete(session.session_id)
            except ConnectionProblem as error:
                querier.notice.now(f"could not close session {session.session_id} ({error}); it expires by "
                                   f"itself, or run `party sessions close {session.session_id}`")
        facts: dict = {}
        result = assemble(frame, keys, outcome, matched_column, with_payload=mode == "join",
                          term_column=term_column, one_to_one=one_to_one, duplicate_free=duplicate_free, facts=facts)
        report = self._report(mode, holder, session, outcome, result, matched_column)
        report["matched_records"] = matched_records(keys, outcome)
        if mode == "join" and one_to_one:
            weighted = isinstance(rules, LevelRules)
            report["assignment"] = ASSIGNMENTS[("heaviest", "assignment")[duplicate_free] if weighted else "terms"]
            report.update(facts)
            if facts.get("records_kept_of_tied_rows"):
                report["warning"] = (f"{facts['records_kept_of_tied_rows']} of your records kept one of two or more "
                                     "holder rows of the very same weight; which one is not fixed: check them")
        elif mode == "join":
            several = matched_more_than_once(keys, outcome)
            report["records_matched_more_than_once"] = several
            if several and isinstance(rules, LevelRules):
                report["warning"] = (f"{several} of your records matched more than one holder row; if both tables "
                                     "hold each person once, --one-to-one --duplicate-free keeps the assignment of "
                                     "largest total weight (docs/linking.md, \"One person, one record\")")
        if isinstance(rules, LevelRules):
            report["threshold"] = rules.model.threshold
            if rules.precision is not None:
                report.update(precision_target=rules.precision, holder_rows=rules.holder_rows)
        return LinkResult(result, report)

    def _at_holder_rows(self, rules: LevelRules, holder: str, timeout: float) -> LevelRules:
        """A precision target's threshold, derived from the table size the holder announces (waited for up
        to ``timeout`` seconds), as the holder derives it from its own (docs/linking.md, "A precision target")."""
        from party_client.lookups import announced_size
        sized = f"the threshold for precision {rules.precision:g} is derived"
        with self.connect() as connection:
            return rules.at_holder_rows(announced_size(Querier(connection, self.dir), holder, timeout, sized))

    def _resume(self, querier: Querier, states: SessionStates,
                signature: str) -> tuple[pb.SessionInfo | None, SessionState | None]:
        """A session this query left open (an earlier run stopped), if K still has it open."""
        state = states.find(signature)
        if state is None or state.keyholder != querier.connection.address:
            return None, None
        try:
            session = querier.connection.call("GetSession", pb.SessionRef(session_id=state.session_id))
        except KeyHolderRefusal as refusal:
            session, reason = None, str(refusal)
        else:
            reason = "it is no longer open"
        if session is None or session.status != pb.OPEN:
            states.delete(state.session_id)
            querier.notice.now(f"session {state.session_id} of an earlier run cannot resume ({reason}); "
                               "starting a new one")
            return None, None
        return session, state

    @staticmethod
    def _round(querier: Querier, states: SessionStates, session: pb.SessionInfo, state: SessionState,
               keys: QuerierKeys, options: QueryOptions, lookup_secret: bytes | None = None) -> QueryOutcome:
        """Run (or resume) the round.  A transport failure, the holder's delay or Ctrl-C leaves the session
        open and its state kept, for a re-run; a refusal or bad input ends it."""
        resume = (f"session {session.session_id} stays open: re-run the same command to resume it, or "
                  f"`party sessions close {session.session_id}`")
        try:
            return querier.run(session, keys, options, lookup_secret, state=state, save=states.save)
        except (ConnectionProblem, HolderTimeout) as error:
            raise type(error)(f"{error}; {resume}") from None
        except KeyboardInterrupt:
            raise Interrupted(resume) from None
        except BaseException:
            try:
                querier.close(session.session_id, patient=False)
            except PartyError:
                pass
            states.delete(session.session_id)
            raise

    # -- sessions in progress -------------------------------------------------------
    def sessions(self, ask_keyholder: bool = True) -> list[dict]:
        """Sessions this querier has open: those runs left behind (id, holder, mode, round, status,
        created) and its lookup sessions (reused across lookups until their key expires), each
        with what the key holder says of it (``at_keyholder``: open, closed, expired, ...)."""
        rows = [{"id": s.session_id, "holder": s.holder, "mode": s.mode, "round": s.round, "status": s.status,
                 "created": s.created, "keyholder": s.keyholder} for s in SessionStates(self.dir).all()]
        state = LookupState(self.dir)
        try:
            lookups = state.sessions()
        finally:
            state.close()
        rows += [{"id": s.session_id, "holder": s.holder, "mode": "lookup", "round": 0,
                  "status": "retired (closed once unused)" if s.retired else "reused by lookups",
                  "created": s.created, "keyholder": self.keyholder} for s in lookups]
        if ask_keyholder and rows:
            self._ask_keyholder(rows)
        return rows

    def _ask_keyholder(self, rows: list[dict]) -> None:
        """Each session's status (and a lookup session's rounds) as the key holder sees it."""
        names = {pb.OPEN: "open", pb.CLOSED: "closed", pb.EXPIRED: "expired"}
        try:
            with self.connect() as connection:
                for row in rows:
                    try:
                        found = connection.call("GetSession", pb.SessionRef(session_id=row["id"]), patient=False)
                    except KeyHolderRefusal as refusal:
                        row["at_keyholder"] = "unknown" if refusal.code == "NOT_FOUND" else refusal.code.lower()
                        continue
                    row["at_keyholder"] = names.get(found.status, "?")
                    if row["mode"] == "lookup":
                        row["round"] = found.rounds
        except PartyError:                     # no key holder configured, or not reachable now
            for row in rows:
                row.setdefault("at_keyholder", "unreachable")

    def close_sessions(self, session_ids: list[str] | None = None) -> list[str]:
        """End sessions at the key holder and delete their local state (``None``: all of them, with those a
        damaged lookup registry still names; once they are closed, that registry is set aside)."""
        states = SessionStates(self.dir)
        lookups = LookupState(self.dir)
        try:
            salvaged = lookups.damaged_ids() if session_ids is None else None
            rows = [{"id": s.session_id} for s in states.all()] if salvaged is not None else \
                self.sessions(ask_keyholder=False)
            known = {row["id"] for row in rows} | set(salvaged or ())
            ids = sorted(known) if session_ids is None else list(session_ids)
            unknown = [i for i in ids if i not in known]
            if unknown:
                raise PartyError(f"no open session {unknown[0]} in {self.dir.path} (see `party sessions list`)")
            if ids:
                with self.connect() as connection:
                    querier = Querier(connection, self.dir)
                    for session_id in ids:
                        querier.close(session_id)
                        states.delete(session_id)
                        if salvaged is None:
                            lookups.forget([session_id])
            if salvaged is not None:
                lookups.set_aside()
        finally:
            lookups.close()
        return ids

    def _report(self, mode: str, holder: str, session, outcome: QueryOutcome, result: pd.DataFrame,
                matched_column: str) -> dict:
        return {"mode": mode, "querier": self.name, "holder": holder, "session_id": session.session_id,
                "scheme": session_scheme(session), "key_bits": session.key_bits,
                "release_columns": outcome.release_columns, "output_rows": int(len(result)),
                "matched_output_rows": int(result[matched_column].sum()), **outcome.facts}

    def join(self, holder: str, data, id_column: str | None = None, **options) -> LinkResult:
        """Equi-join (or fuzzy join with ``rules=``): our rows plus the holder's released columns.  With
        ``dask_client=`` (a ``distributed.Client``) the query is encrypted on that Dask cluster."""
        return self._query("join", holder, data, id_column, **options)

    def dedup(self, holder: str, data, id_column: str | None = None, **options) -> LinkResult:
        """Which of our records the holder also has (no payload)."""
        return self._query("dedup", holder, data, id_column, **options)

    def lookup(self, holder: str, data, id_column: str, population: int, *, max_risk: float = 0.05,
               buckets: int | None = None, id_type: str = "identifier", key_bits: int | None = None,
               timeout: float = 3600.0, session_ttl: float = 24 * 3600.0, matched_column: str = "matched",
               scheme: str | Scheme | None = None) -> LinkResult:
        """Look a few records up in a large holder through risk-bounded buckets: at most ``max_risk``
        for a person of ``population`` and among the holder's people (the size it announced serving,
        waited for up to ``timeout`` seconds if it never has), and, over every lookup of an identifier
        at this holder, once the holder intersects its buckets (refused before any bucket goes out:
        :class:`party_client.lookups.RepeatedLookup`).  The result says which records the holder holds
        (``matched_column``); a lookup returns no released column."""
        sizing = BucketSizing(population, max_risk, buckets)
        options = self._options(key_bits, timeout, scheme)
        frame, keys = self._prepare(data, id_column, id_type, None, matched_column, "querier")
        if not keys.tables[0].values:
            raise PartyError("no identifier to look up (all blank)")
        state = LookupState(self.dir)
        try:
            state.check_ledger()          # before anything is asked: a lookup it could not record is not run
            with self.connect() as connection:
                session, outcome, plan, risks = run_lookup(Querier(connection, self.dir), state, holder, sizing,
                                                           keys, options, session_ttl)
        finally:
            state.close()
        result = assemble(frame, keys, outcome, matched_column, with_payload=False)
        report = self._report("lookup", holder, session, outcome, result, matched_column)
        report["matched_records"] = matched_records(keys, outcome)
        report.update(lookup_report(plan, risks, outcome))
        return LinkResult(result, report)

    # -- holder -----------------------------------------------------------------
    def prepare_holder(self, data, id_column: str | None = None, release_columns: list[str] | None = None, *,
                       rules=None, id_type: str = "identifier", allowed_queriers: list[str] | None = None,
                       connection: Connection | None = None,
                       schemes: str | tuple[str | Scheme, ...] = SCHEME_NAMES, dask_client=None,
                       dask_timeout: float = CONNECT_SECONDS, lookup_memory: int = DEFAULT_BUDGET_BYTES,
                       submit_window: int = SUBMIT_WINDOW, force: bool = False) -> Holder:
        """A holder ready to serve (``serve(once=...)``), keys computed once; it refuses rounds of a
        comparison scheme not in ``schemes`` (schemes or names, or a comma-separated string); with a
        ``distributed.Client`` its comparison batches run on that Dask cluster (a call to its
        scheduler waits at most ``dask_timeout`` seconds); each lookup session's bucket index is kept
        while the session lives, within ``lookup_memory`` bytes in all; up to ``submit_window`` batches
        of a round are sent to K at once; ``force`` links even when most of a field's values cannot be read."""
        if submit_window < 1:
            raise PartyError("--submit-window must be at least 1")
        try:
            if isinstance(schemes, str) or not all(isinstance(s, Scheme) for s in schemes):
                schemes = parse_scheme_list(schemes if isinstance(schemes, str) else ",".join(map(str, schemes)))
        except ValueError as error:
            raise PartyError(str(error)) from None
        rules = self._rules(rules)
        frame, keys = self._prepare(data, id_column, id_type, rules, "", "holder", force)
        release_columns = list(release_columns or [])
        require_columns(frame, release_columns, "release")
        return Holder(connection or self.connect(), self.dir, HolderData(frame, keys, release_columns, self.progress),
                      HolderOptions(release_columns=release_columns, allowed_queriers=allowed_queriers,
                                    matching_fields=matching_fields(rules),
                                    schemes=schemes, progress=self.progress,
                                    cluster=None if dask_client is None else Cluster(dask_client, dask_timeout),
                                    lookup_memory=lookup_memory, submit_window=submit_window))

    def hold(self, data, id_column: str | None = None, release_columns: list[str] | None = None, *,
             once: bool = True, poll_seconds: float = 20.0, on_ready: Callable[[], None] | None = None,
             on_served: Callable[[dict], None] | None = None, concurrency: int | None = None,
             **options) -> list[dict]:
        """Serve the rounds addressed to us; returns what each served round cost (rows, comparisons,
        blocked rules: candidate pairs per pass), which only the holder knows.  ``on_ready`` is
        called once the table's keys are ready, ``on_served`` with each round's summary as it ends;
        ``concurrency`` rounds are served at once (default: one per core; lookups in a lane of their own)."""
        holder = self.prepare_holder(data, id_column, release_columns, **options)
        try:
            if on_ready is not None:
                on_ready()
            return holder.serve(once=once, poll_seconds=poll_seconds, on_served=on_served,
                                concurrency=concurrency)
        finally:
            holder.connection.close()


__all__ = ["Party", "LinkResult", "assemble", "MODE_NAMES"]
