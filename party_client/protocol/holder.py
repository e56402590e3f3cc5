"""The holder's driver (docs/protocol.md, "The blinded comparison"): fetch the
sealed query, check it against the session and its own keys, let the round's
engine (:mod:`party_client.protocol.engines.choice`) plan the comparison units, order
its rows by a permutation fixed per session from a local secret (a resumed
holder resends identical batches), cut them into batches compared through the
scheme with a fresh blinding factor each, every row with a sealed attachment
(:mod:`party_client.protocol.batches`), computed on the process's GIL-free thread
pool or the holder's Dask cluster (:mod:`party_client.protocol.scheduling`), and
stream the batches to K, several calls in flight (:mod:`party_client.protocol.submitting`).  H never learns what matched.  Rounds are served in lanes so a lookup never waits behind a join, and a query still coming in is read by a reader of its own, never in a lane, so a querier that stalls its upload delays only itself.
"""
from __future__ import annotations

import hashlib
import hmac
import logging
import os
import threading
import time
from contextlib import nullcontext
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field as dataclass_field
from typing import Any, Callable, Iterable

import numpy as np

from common.schemes import RETIRED, RetiredScheme, Scheme, all_schemes
from common.schemes.pool import release_gil, worker_pool
from party_client.crypto.cuckoo import padded_floor
from party_client.crypto.encoding import SECRET_BYTES
from party_client.crypto.seal import SessionCipher, open_records
from party_client.errors import PartyError
from party_client.identity import PartyDir
from party_client.progress import bar
from party_client.protocol.batches import BatchBuilder, cut_batches
from party_client.protocol.engines.choice import engine_for
from party_client.protocol.engines.interface import HolderContext, HolderData, ReceivedQuery, RoundPlan
from party_client.protocol.engines.session_indexes import DEFAULT_BUDGET_BYTES
from party_client.protocol.wire import (MODE_NAMES, IncomingQuery, attachment_cipher, message_context,
                                        note_cipher, known_scheme, party_key, read_query, session_scheme)
from party_client.protocol.round_watch import RoundWatch
from party_client.protocol.scheduling import BatchScheduler, Inline, cluster_validation
from party_client.protocol.submitting import SUBMIT_WINDOW, SubmitWindow
from party_client.transport import Connection, ConnectionProblem, KeyHolderRefusal
from proto import linkage_pb2 as pb

log = logging.getLogger("party")
BUSY_POLL_SECONDS = 0.2     # a holder with work waiting for a lane looks for a freed one this often
BUSY_WAIT_SECONDS = 1.0     # a holder serving rounds long-polls at most this long (new work ends it at once)
LOOKUP_LANE = 32            # lookup rounds served at once (each a few rows: mostly waiting on the network)
READERS = 16                # queries still coming in read at once (each mostly waiting on its querier) ...
READERS_PER_QUERIER = 2     # ... and of one querier: one that stalls its uploads holds at most these
#: Refusals after which a round is served again (K still lists it), after 1, 2, 4 ... at most 30 s.
TRANSIENT = ("RESOURCE_EXHAUSTED", "UNAVAILABLE", "ABORTED", "DEADLINE_EXCEEDED", "INTERNAL", "UNKNOWN")
RETRY_ROUND_SECONDS = 30.0
STOP_SECONDS = 2.0          # interrupted: the rounds in flight get this long to stop, then are left behind


@dataclass
class HolderOptions:
    release_columns: list[str] = dataclass_field(default_factory=list)
    allowed_queriers: list[str] | None = None
    schemes: tuple[Scheme, ...] = dataclass_field(default_factory=all_schemes)   # comparison schemes served
    batch_rows: int = 256
    submit_window: int = SUBMIT_WINDOW   # SubmitComparisons calls in flight per round
    progress: bool | None = None
    cluster: Any = None              # a common.distributed.Cluster: comparisons run on the holder's Dask workers
    lookup_memory: int = DEFAULT_BUDGET_BYTES     # bytes of per-session lookup indexes kept
    matching_fields: list[str] = dataclass_field(default_factory=list)   # announced with the keys' digest


def work_key(item: pb.WorkItem) -> tuple[str, str]:
    """Names a work item across listings: a streamed query is listed as round 0 while it comes in,
    then as its round, with the same message."""
    return item.session.session_id, item.message_id


def described(item: pb.WorkItem) -> str:
    return f"round {item.round}" if item.round else "(a query still coming in)"


@dataclass
class Received:
    """A round's query, read, checked and planned (:meth:`Holder.receive`): what its comparison needs."""

    item: pb.WorkItem                # with its round
    header: pb.QueryHeader
    ciphertexts: bytes
    plan: RoundPlan


class Holder:
    """Serves the rounds addressed to this party."""

    def __init__(self, connection: Connection, party: PartyDir, data: HolderData,
                 options: HolderOptions) -> None:
        self.connection = connection
        self.party = party
        self.data = data
        self.options = options
        self._stopping = threading.Event()
        # announced to K with each poll (as table_rows): lookups are sized so that a bucket hides a
        # queried person among enough of these people, not rows, since a person's rows share its
        # bucket (docs/protocol.md, "Lookup"); a lower bound, told up to its step
        self.announced_people = padded_floor(data.keys.people)

    def pending(self, wait_seconds: float = 0.0, known: Iterable[str] = ()) -> list[pb.WorkItem]:
        """The rounds waiting for us (long-polling up to ``wait_seconds`` while every one listed is among the
        ``known`` message ids), announcing our table size and what we link on
        (:mod:`party_client.matching.agreement`)."""
        matching = pb.MatchingAnnouncement(spec=self.data.keys.spec, fields=self.options.matching_fields) \
            if self.options.matching_fields else None
        return list(self.connection.call("ListWork", pb.ListWorkRequest(wait_seconds=wait_seconds,
                                                                         table_rows=self.announced_people,
                                                                         matching=matching,
                                                                         known_message_ids=sorted(known)),
                                         timeout=wait_seconds + 60).items)

    def serve(self, once: bool, poll_seconds: float = 20.0,
              stop: Callable[[], bool] = lambda: False,
              on_served: Callable[[dict], None] | None = None,
              concurrency: int | None = None) -> list[dict]:
        """Process pending rounds; with ``once`` until none is left, else until ``stop()``.

        Up to ``concurrency`` join and dedup rounds (default: one per core) are served at once.
        Lookup rounds have a lane of their own, ``LOOKUP_LANE`` wide, so a lookup never queues
        behind a join's comparisons nor behind other lookups: join and dedup rounds share the
        process-wide comparison pool (one thread per core, :func:`common.schemes.pool.worker_pool`),
        a lookup compares its few rows in its own lane thread.  Each lookup session's bucket index
        is built once and kept while the session lives, within ``lookup_memory`` bytes.  A round is
        taken once per call (K lists a round as pending until it is finished, so the rounds in flight
        are remembered).

        A query still coming in (a streamed upload, listed as round 0) is read, checked and planned
        by one of ``READERS`` readers, at most ``READERS_PER_QUERIER`` of one querier, and takes its
        lane only once read: a querier that stalls its upload holds a reader of its own, never a lane
        another querier's round needs.

        A round refused by K on the way with a transient status (back-pressure beyond the retry window,
        an interruption) is served again at a later poll, after a growing pause, while K lists it.

        Returns what each served round cost (:meth:`process`), for the holder's eyes only;
        ``on_served`` receives each summary as soon as its round is served (one call at a time).
        """
        width = (os.cpu_count() or 1) if concurrency is None else concurrency
        if width < 1:
            raise PartyError("--concurrency must be at least 1")
        self.data.keep_lookup_indexes(self.options.lookup_memory)
        if len(self.data.keys.names) == 1 and self.data.keys.blocked is None:    # exact keys: lookups possible
            threading.Thread(target=self.data.lookup_words, name="holder-lookup-digests", daemon=True).start()
        self._stopping.clear()
        served: list[dict] = []
        taken: set[tuple[str, int]] = set()          # in flight or done in this call: never taken again
        again: dict[tuple[str, int], tuple[float, int]] = {}   # refused on the way: (serve again at, attempts)
        lock = threading.Lock()
        finished = threading.Event()
        widths = {"round": width, "lookup": LOOKUP_LANE, "read": READERS}
        lanes = {name: ThreadPoolExecutor(max_workers=size, thread_name_prefix=f"holder-{name}",
                                          initializer=release_gil) for name, size in widths.items()}
        running: dict[Future, tuple[str, pb.WorkItem]] = {}
        ready: list[Received] = []                   # read by a reader, waiting for their lane

        def guarded(item: pb.WorkItem, work: Callable[[], Any]) -> Any:
            """``work()`` for ``item``, or None when K or the query refused it (logged; a transient
            refusal is served again later)."""
            try:
                return work()
            except ConnectionProblem:
                raise
            except PartyError as error:  # e.g. the querier closed or the session expired meanwhile
                key = work_key(item)
                if isinstance(error, KeyHolderRefusal) and error.code in TRANSIENT:
                    with lock:
                        attempts = again.get(key, (0.0, 0))[1] + 1
                        pause = min(RETRY_ROUND_SECONDS, 2.0 ** (attempts - 1))
                        again[key] = (time.monotonic() + pause, attempts)
                        taken.discard(key)
                    log.warning("session %s %s not served yet: %s; serving it again in %.0f s (attempt %d)",
                                key[0], described(item), error, pause, attempts + 1)
                    return None
                log.warning("session %s %s not served: %s", key[0], described(item), error)
                return None

        def record(summary: dict | None) -> None:
            if summary is not None:
                with lock:
                    served.append(summary)
                    if on_served is not None:
                        on_served(summary)

        def serve_one(item: pb.WorkItem) -> None:
            log.info("serving session %s round %d (%s)", item.session.session_id, item.round,
                     MODE_NAMES.get(item.session.mode, "?"))
            record(guarded(item, lambda: self.process(item)))

        def read_one(item: pb.WorkItem) -> None:
            log.info("reading session %s (a %s query still coming in)", item.session.session_id,
                     MODE_NAMES.get(item.session.mode, "?"))
            received = guarded(item, lambda: self.receive(item))
            if isinstance(received, Received):
                with lock:
                    ready.append(received)
            else:
                record(received)                     # refused, or None

        def compare_one(received: Received) -> None:
            record(guarded(received.item, lambda: self.compare(received)))

        def reap() -> None:
            for future in [f for f in running if f.done()]:
                del running[future]
                future.result()                      # a lost key holder ends the serve loop

        def room(lane: str, querier: str | None = None) -> bool:
            """A lane has room; a reader's (``querier`` given) also counts the queries read and still
            waiting for their lane (held in memory), all and the querier's."""
            held = [item for name, item in running.values() if name == lane]
            if querier is not None:
                with lock:
                    held += [received.item for received in ready]
            return len(held) < widths[lane] and (
                querier is None or sum(item.querier == querier for item in held) < READERS_PER_QUERIER)

        def start(lane: str, item: pb.WorkItem, job: Callable, *args) -> None:
            future = lanes[lane].submit(job, *args)
            future.add_done_callback(lambda _: finished.set())
            running[future] = (lane, item)

        def start_ready() -> int:
            """Compare the rounds read meanwhile as their lanes have room; how many started."""
            with lock:
                waiting, ready[:] = list(ready), []
            started = 0
            for received in waiting:
                lane = self._lane(received.item)
                if room(lane):
                    start(lane, received.item, compare_one, received)
                    started += 1
                else:
                    with lock:
                        ready.append(received)
            return started

        known: set[str] = set()                      # the last listing's messages: served, read or left waiting
        backlog, deferred = False, []
        try:
            while not stop():
                reap()
                # K lists the rounds in flight as pending: a busy holder names what it knows, so its
                # long-poll returns at once only for new work (a stalled upload's reader, always busy,
                # once made it poll every 0.2 s, and every lookup waited for the next poll)
                if once:
                    wait_for = 0.0
                elif ready or backlog:               # work waits for a lane: look again soon
                    wait_for = min(poll_seconds, BUSY_POLL_SECONDS)
                elif running:                        # a round refused meanwhile is served again within it
                    wait_for = min(poll_seconds, BUSY_WAIT_SECONDS)
                else:                                # only new work ends the long-poll
                    wait_for = poll_seconds
                if deferred:                         # or a round due to be served again
                    wait_for = min(wait_for, max(0.0, min(deferred) - time.monotonic()))
                items = self.pending(wait_for, known if wait_for else ())
                known = {item.message_id for item in items}
                now = time.monotonic()
                with lock:
                    new = sorted((i for i in items if work_key(i) not in taken
                                  and again.get(work_key(i), (0.0, 0))[0] <= now),
                                 key=lambda i: i.session.mode != pb.LOOKUP)
                started = start_ready()
                backlog = False                      # work left waiting only for a lane to free
                for item in new:
                    lane = self._lane(item)
                    if not item.round:              # still coming in: read by a reader, not in the lane
                        if not room("read", item.querier):
                            backlog |= not room("read")   # all readers busy (not this querier's own cap)
                            continue                 # left pending: taken at a later poll
                        job, lane = read_one, "read"
                    elif room(lane):
                        job = serve_one
                    else:
                        backlog = True
                        continue
                    with lock:
                        taken.add(work_key(item))
                    start(lane, item, job, item)
                    started += 1
                with lock:
                    deferred = [again[key][0] for key in map(work_key, items)
                                if key not in taken and key in again and again[key][0] > now]
                if once and not started and not running and not deferred and not ready:
                    break
                if once and running and (started == 0 or len(new) > started or ready):
                    finished.wait()
                    finished.clear()
                elif once and deferred and not started:   # only rounds waiting to be served again
                    finished.wait(max(0.05, min(deferred) - time.monotonic()))
                    finished.clear()
            while running or ready:                  # stopped: let the rounds in flight end
                start_ready()
                wait(list(running), return_when=FIRST_COMPLETED)
                reap()
        except BaseException:                        # Ctrl-C or a lost key holder: rounds in flight stop at their
            self._stopping.set()                     # next check (scheduling.STOP_POLL_SECONDS); K keeps the
            for lane in lanes.values():              # batches it has.  One stuck in a call (a frozen Dask scheduler,
                lane.shutdown(wait=False, cancel_futures=True)   # a slow K) is left behind after STOP_SECONDS.
            _, left = wait(list(running), timeout=STOP_SECONDS)
            if left:
                log.warning("stopping: %d round(s) still in a call after %.0f s were left behind (the next "
                            "`party hold` sends what the key holder is missing)", len(left), STOP_SECONDS)
            raise
        for lane in lanes.values():
            lane.shutdown(wait=True)
        return served

    @staticmethod
    def _lane(item: pb.WorkItem) -> str:
        return "lookup" if item.session.mode == pb.LOOKUP else "round"

    def _abort(self, item: pb.WorkItem, reason: str) -> dict:
        log.warning("refusing session %s round %d: %s", item.session.session_id, item.round, reason)
        self.connection.call("AbortRound", pb.AbortRoundRequest(
            session_id=item.session.session_id, round=item.round, reason=reason))
        return {"session_id": item.session.session_id, "round": item.round, "refused": reason}

    def process(self, item: pb.WorkItem) -> dict:
        """Serve one round: :meth:`receive` its query, then :meth:`compare`."""
        received = self.receive(item)
        return received if isinstance(received, dict) else self.compare(received)

    def compare(self, received: Received) -> dict:
        """Compare a received round's rows, submit the batches, finish the round."""
        return self._compare(received.item, received.header, received.ciphertexts, received.plan)

    def receive(self, item: pb.WorkItem) -> Received | dict:
        """Open the round's query (a streamed one as it arrives, validating it and, where the engine
        needs only the header, planning meanwhile) and plan its comparisons; a refused query gives
        the summary of its refusal (the round aborted at K)."""
        session = item.session
        if self.options.allowed_queriers is not None and item.querier not in self.options.allowed_queriers:
            return self._abort(item, f"querier '{item.querier}' is not on the holder's allow-list")
        if session.scheme in RETIRED:
            return self._abort(item, RetiredScheme(session.scheme).of_session(session.session_id))
        scheme = known_scheme(session)
        if scheme not in self.options.schemes:
            return self._abort(item, f"the holder does not serve the {scheme or session.scheme} scheme "
                                     f"(it serves: {', '.join(s.name for s in self.options.schemes)})")
        # a streamed query arrives as fast as the querier encrypts it: its bytes are shown as they come
        receiving = bar(None, f"{self.party.name}: query coming in", self.options.progress if not item.round
                        else False, unit="B")
        message = IncomingQuery(self.connection, item, receiving.update)
        planner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="holder-plan")
        early: list[tuple[int, Future]] = []

        def on_header(header: pb.QueryHeader) -> None:
            """Plan from the header while the rest streams in, where the engine needs no more."""
            expected = engine_for(session.mode, bool(header.passes)).planned_from_header(header)
            if expected is not None:
                early.append((expected, planner.submit(self._plan, session, ReceivedQuery(header, expected, [], []),
                                                       scheme)))
        try:
            records = open_records(message.chunks, self.party.private_key,
                                   party_key(self.connection, item.querier, item.querier_x25519_public_key),
                                   message_context(session.session_id, "query"))
            cluster = self.options.cluster if session.mode != pb.LOOKUP else None
            query, ciphertexts = read_query(records, scheme, session.public_key,
                                            None if cluster is None else
                                            cluster_validation(cluster, scheme, session.public_key), on_header)
            item = message.in_round()
            if early:
                expected, planning = early[0]
                if query.ciphertexts != expected:
                    raise ValueError(f"{query.ciphertexts} ciphertexts where its header declares {expected}")
                plan = planning.result()
            else:
                plan = self._plan(session, query, scheme)
        except KeyHolderRefusal as refusal:        # e.g. the querier's upload broke off: not the query's fault
            if not item.round and refusal.code == "NOT_FOUND":    # that upload is gone: it broke off and K has
                # already deleted it, or K restarted under it (either way the querier sends the query again)
                raise KeyHolderRefusal("the querier's upload of this query ended before it was complete (it broke "
                                       "off, or the key holder restarted); the querier sends it again",
                                       "ABORTED") from None
            raise
        except ConnectionProblem:
            raise
        except (ValueError, PartyError) as error:
            return self._abort(message.in_round(), f"malformed query: {error}")
        finally:
            planner.shutdown(wait=False, cancel_futures=True)
            receiving.close()
        if isinstance(plan, str):
            return self._abort(item, plan)
        return Received(item, query.header, ciphertexts, plan)

    def _plan(self, session: pb.SessionInfo, query: ReceivedQuery, scheme: Scheme) -> RoundPlan | str:
        """The comparison units (row, [(query position, the row's encoding)]) or a refusal reason.

        A row without a key is still compared (against random positions with a random value), so K
        sees the same number of comparisons for every row (or pair of a pass).
        """
        header, keys = query.header, self.data.keys
        if header.mode != session.mode or header.key_bits != session.key_bits:
            return "the query does not match the session (mode or key size)"
        named = known_scheme(header)
        if named is not scheme:
            return f"the query's comparison scheme ({named or header.scheme}) is not the session's ({scheme})"
        if len(header.session_secret) != SECRET_BYTES:
            return "bad session secret"
        if header.key_spec != keys.spec or ([t.name for t in header.tables] != keys.names and not header.passes):
            return (f"the parties' matching keys differ (querier: {header.key_spec}, holder: {keys.spec}); "
                    "field names, encoders, rule and blocking must agree")
        context = HolderContext(session.session_id, self.data, scheme, scheme.encoding_bytes(session.public_key),
                                self._shuffle, self._rank, self.options.progress, session.expires_at)
        return engine_for(session.mode, bool(header.passes)).plan(context, query)

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

    def _compare(self, item: pb.WorkItem, header: pb.QueryHeader, ciphertexts: bytes, plan: RoundPlan) -> dict:
        """Compare the round's batches (those K lacks), send each as it is ready, then finish the round."""
        session = item.session
        scheme = session_scheme(session)
        releasing = session.mode == pb.JOIN and self.data.payloads is not None   # dedup, lookup: no payload
        builder = BatchBuilder(session.session_id, item.round, scheme, session.public_key, ciphertexts,
                               attachment_cipher(header.session_secret, session.session_id, item.round), plan.units,
                               payloads=self.data.payloads if releasing else None,
                               longest_payload=self.data.longest_payload,
                               row_tag=None if plan.segments is None else
                               (lambda row: self._row_tag(session.session_id, row)))
        batches = cut_batches(plan, self.options.batch_rows, scheme.name)
        skip = set(item.received_seqs)
        todo = [batch for batch in batches if batch[0] not in skip]
        started = time.perf_counter()
        # Lookups (a few rows) compare in their own lane thread, never queued behind a join's batches.
        lookup = session.mode == pb.LOOKUP
        watch = self._stopping if lookup else RoundWatch(self.connection, session.session_id, self._stopping)
        scheduler = BatchScheduler(builder, Inline() if lookup else worker_pool(),
                                   None if lookup else self.options.cluster, watch,
                                   f"session {session.session_id} round {item.round}")
        comparisons = 0
        planned = sum(len(c) for _, chunk, _ in batches for _, c in chunk)   # the round's, for K's progress
        with watch if isinstance(watch, RoundWatch) else nullcontext(), \
                bar(sum(len(c) for _, chunk, _ in todo for _, c in chunk), f"{self.party.name}: compare round "
                    f"{item.round}", self.options.progress, unit="comparison") as progress:
            def sent(message: pb.ComparisonBatch) -> None:
                nonlocal comparisons
                comparisons += sum(message.row_comparisons)
                progress.update(sum(message.row_comparisons))
            last = None
            if lookup and len(todo) == len(batches) == 1:     # the whole round in one batch: sent as it finishes
                [(_, last)] = scheduler.messages(todo)
            else:
                window = SubmitWindow(self.connection, 1 if lookup else self.options.submit_window, sent)
                try:
                    for _, message in scheduler.messages(todo):
                        message.round_comparisons = planned
                        window.send(message)
                    window.drain()
                except ConnectionProblem:
                    if isinstance(watch, RoundWatch) and watch.closed.is_set():
                        raise PartyError("the session was closed or expired at the key holder while its round was "
                                         "being compared; its work stopped") from None
                    raise
                finally:
                    window.close()
            self._finish(item, header.session_secret, self.data.release_columns if releasing else [],
                         len(batches), last)
            if last is not None:
                sent(last)
        elapsed = time.perf_counter() - started
        log.info("session %s round %d: %d rows compared (%d comparisons) in %.1f s", session.session_id,
                 item.round, len(plan.units), comparisons, elapsed)
        served = {"session_id": session.session_id, "round": item.round, "rows": len(plan.units),
                  "comparisons": comparisons, "seconds": round(elapsed, 3)}
        if plan.segments is not None:
            served["candidate_pairs"] = plan.pass_pairs          # per pass
        return served

    def _finish(self, item: pb.WorkItem, secret: bytes, release_columns: list[str], batches: int,
                last: pb.ComparisonBatch | None = None) -> None:
        """Finish the round with the holder's sealed note, and its ``last`` batch if not yet sent (K then
        deletes the spooled query: finishing acknowledges it, so no ``AckMessage`` call is needed)."""
        session = item.session
        note = pb.HolderNote(release_columns=release_columns)
        sealed_note = note_cipher(secret, session.session_id, item.round).seal(
            note.SerializeToString(), SessionCipher.padded_width(len(note.SerializeToString())))
        self.connection.call("FinishRound", pb.FinishRoundRequest(
            session_id=session.session_id, round=item.round, batches=batches, holder_note=sealed_note,
            last_batch=last))
