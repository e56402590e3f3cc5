"""The key holder's gRPC servicer: a thin ``grpc.aio`` servicer over :class:`KeyHolder`.

Each call is checked field by field (:mod:`keyholder.validation`), authenticates
the party (bearer token, and under mTLS the client certificate's common name),
runs a plain method of the core on the thread pool (:mod:`keyholder.pool`), and turns a
:class:`ServiceError` into the gRPC status with its one-line message.  Long-polls
are async waits that hold no thread (:mod:`keyholder.long_polls`); streamed calls at most
``Limits.max_streams`` per party and ``max_streams_total`` in all (:mod:`keyholder.slots`).
Serving it is :mod:`keyholder.serving`'s.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import AsyncIterator, Callable, Iterator, TypeVar

from keyholder import validation
from keyholder.connections import Call, Connections
from keyholder.core import KeyHolder
from keyholder.errors import ServiceError
from keyholder.lanes import FairLanes
from keyholder.long_polls import Changes, LongPolls
from keyholder.pool import on_pool
from keyholder.proto_convert import message_info, pair_rule, round_info, session_info
from keyholder.slots import Slot, Slots
from keyholder.proto_enums import PENDING
from keyholder.grpc_errors import refuse
from keyholder.store import Round, Session
from keyholder.uploads import Follower, Upload
from proto import linkage_pb2 as pb
from proto import linkage_pb2_grpc as pb_grpc

log = logging.getLogger("keyholder")
T = TypeVar("T")


@dataclass(frozen=True)
class Caller:
    """What a call says of its caller before it is authenticated, and its use of its connection."""
    token: str | None
    cert_name: str | None
    peer: str | None          # its address without the port (the failed-authentication throttle's key)
    call: Call


def peer_address(context) -> str | None:
    """The caller's address without its port ("ipv4:127.0.0.1:5123" -> "ipv4:127.0.0.1")."""
    peer = context.peer() or ""
    return peer.rpartition(":")[0] or None


class KeyHolderServicer(pb_grpc.KeyHolderServicer):
    """Async and thin: checks the request (:mod:`keyholder.validation`), authenticates, and runs the
    core's blocking work (SQLite, cryptography) on the thread pool.  Long-polls hold no thread."""

    def __init__(self, core: KeyHolder, mtls: bool, changes: Changes) -> None:
        self.core = core
        self.mtls = mtls
        self.limits = core.limits
        self.polls = LongPolls(changes, core.limits, lambda: core.stopping)
        self.streams = Slots("streams", core.limits.max_streams, core.limits.max_streams_total,
                             flags=("keyholder serve --max-streams", "keyholder serve --max-streams-total"))
        self.connections = Connections(core.limits.max_connections_party, core.limits.connection_idle,
                                       flag="keyholder serve --max-connections-party")
        self.zero_tests = FairLanes(core.limits.max_zero_tests, core.limits.max_zero_tests_party,
                                    core.limits.max_zero_tests_queued,
                                    flags=("keyholder serve --max-zero-tests-party",
                                           "keyholder serve --max-zero-tests-queued"))
        core.add_listener(changes.notify)

    # -- plumbing -------------------------------------------------------------
    def _credentials(self, context) -> Caller:
        """Who the call says it is (token, certificate name, peer address), and its use of its
        connection, given back when the call ends (:mod:`keyholder.connections`)."""
        cert_name = None
        if self.mtls:
            names = context.auth_context().get("x509_common_name") or []
            if not names:
                raise ServiceError("UNAUTHENTICATED", "a client certificate is required")
            cert_name = names[0].decode()
        token = None
        for key, value in context.invocation_metadata() or ():
            if key == "authorization" and isinstance(value, str) and value.startswith("Bearer "):
                token = value[len("Bearer "):]
        call = self.connections.call(context.peer() or "")
        context.add_done_callback(lambda _: call.end())
        return Caller(token, cert_name, peer_address(context), call)

    def _authenticate(self, caller: Caller) -> str:
        """The caller's party (:meth:`KeyHolder.authenticate`), its connection counted against the
        party's cap (:class:`Connections`); blocking: run on the pool."""
        party = self.core.authenticate(caller.token, caller.cert_name, caller.peer)
        caller.call.enter(party)
        return party

    def _screened(self, context, method: str | None, request) -> Caller:
        """Check ``request`` (``method`` None: nothing to check); the caller."""
        if method is not None:
            validation.check(method, request, self.limits)
        caller = self._credentials(context)
        self.core.screen(caller.token)            # a token that keeps failing: refused on the event loop
        return caller

    async def _run(self, context, method: str | None, request, work: Callable[[str], T],
                   lanes: FairLanes | None = None) -> T:
        """Check ``request``, authenticate, run ``work(party)`` on the pool; refusals become statuses.  With
        ``lanes`` (a zero test) the party is authenticated first and ``work`` waits for its turn on no thread."""
        try:
            caller = self._screened(context, method, request)
            if lanes is not None:
                party = await on_pool(self._authenticate, caller)
                async with lanes.turn(party):
                    return await on_pool(work, party)

            def job() -> T:
                return work(self._authenticate(caller))
            return await on_pool(job)
        except Exception as error:
            await self._fail(context, error)

    async def _stream(self, context, method: str, request, opened: Callable[[str], T]) -> tuple[Slot, T]:
        """A streamed answer: check, authenticate, take one of the party's stream slots (:attr:`streams`)
        before anything is opened, then ``opened(party)`` on the pool.  Returns the slot (the caller
        gives it back when its stream ends) and what ``opened`` gave."""
        try:
            party = await on_pool(self._authenticate, self._screened(context, method, request))
            slot = self.streams.hold(party)
            try:
                return slot, await on_pool(opened, party)
            except BaseException:
                slot.release()
                raise
        except Exception as error:
            await self._fail(context, error)

    async def _fail(self, context, error: Exception):
        """A :class:`ServiceError` becomes its status; anything else INTERNAL, never echoing internals
        (they could carry data) to the caller."""
        if not isinstance(error, ServiceError):
            log.error("internal error", exc_info=error)
            error = ServiceError("INTERNAL", "internal error in the key holder (see its log)")
        await refuse(context, error)

    # -- parties --------------------------------------------------------------
    async def Register(self, request, context):
        try:
            validation.check("Register", request, self.limits)
            caller = self._credentials(context)
            issued, fingerprint = await on_pool(self.core.register, request.name, request.x25519_public_key,
                                                     caller.cert_name, caller.token, caller.peer)
        except ServiceError as error:
            return await refuse(context, error)
        return pb.RegisterReply(name=request.name, token=issued, fingerprint=fingerprint)

    async def GetParty(self, request, context):
        found, matching = await self._run(context, "GetParty", request, lambda party: (
            self.core.party(request.name), self.core.matching(request.name)))
        return pb.PartyInfo(name=found.name, x25519_public_key=found.x25519, fingerprint=found.fingerprint,
                            registered_at=found.registered_at, table_rows=found.table_rows,
                            matching=[pb.MatchingAnnouncement(spec=spec, fields=fields) for spec, fields in matching])

    # -- sessions -------------------------------------------------------------
    async def OpenSession(self, request, context):
        """The querier's slot under its cap is taken at once; the key is awaited from the fair key factory
        (:mod:`keyholder.keygen`) holding no thread; a cancelled call gives slot and queue place back."""
        plan = await self._run(context, "OpenSession", request, lambda party: self.core.plan_session(
            party, request.mode, request.holder, request.key_bits, request.ttl_seconds,
            request.query_ciphertexts, validation.scheme(request.scheme)))
        try:
            session, holder_key = await self.core.open_session(plan)
        except Exception as error:
            return await self._fail(context, error)
        return session_info(session, holder_key)

    async def GetSession(self, request, context):
        def found(party: str) -> tuple[Session, bytes]:
            session = self.core.session(party, request.session_id)
            return session, self.core.party_key(session.holder)
        return session_info(*await self._run(context, "GetSession", request, found))

    async def CloseSession(self, request, context):
        return session_info(await self._run(context, "CloseSession", request,
                                            lambda party: self.core.close_session(party, request.session_id)))

    # -- relay ----------------------------------------------------------------
    async def PutMessage(self, request_iterator, context):
        """The first chunk's header is checked before the caller is authenticated, as every request is;
        the party's stream slot (:attr:`streams`) is taken before the upload opens its spool file; the
        core spools and keeps the query (:meth:`KeyHolder.put_message`).  Only a stream whose final chunk
        is marked ``last`` is kept (docs/protocol.md, "Streaming the query")."""
        with contextlib.ExitStack() as slot:
            try:
                chunks = request_iterator.__aiter__()
                first = await self._next_chunk(chunks)
                if first is None or not first.HasField("header"):
                    raise ServiceError("INVALID_ARGUMENT", "the first chunk must carry the header")
                header = first.header
                validation.message_header(header, self.limits)
                party = await on_pool(self._authenticate, self._screened(context, None, None))
                slot.enter_context(self.streams.hold(party))
                async with contextlib.aclosing(self._rest(chunks, first.last)) as rest:
                    message = await self.core.put_message(party, header.session_id, header.kind, header.recipient,
                                                          header.stream, first.data, rest)
                return message_info(message)
            except ServiceError as error:
                failure = error
            except Exception as error:  # the stream broke (e.g. a chunk over the gRPC size limit)
                failure = ServiceError("RESOURCE_EXHAUSTED", f"the message stream failed: {type(error).__name__}")
                log.warning("PutMessage stream failed: %s", type(error).__name__)
        await refuse(context, failure)

    async def _rest(self, chunks, last: bool) -> AsyncIterator[bytes]:
        """The data of the chunks after the first (``last``: the first was marked last), read in the
        call's own task; a chunk with a header or after the one marked ``last`` is refused, and so is a
        stream that ends without it: a client that died mid-stream can look like a clean end of stream."""
        while (chunk := await self._next_chunk(chunks)) is not None:
            if chunk.HasField("header"):
                raise ServiceError("INVALID_ARGUMENT", "only the first chunk carries a header")
            if last:
                raise ServiceError("INVALID_ARGUMENT", "a chunk came after the one marked last")
            yield chunk.data
            last = chunk.last
        if not last:
            raise ServiceError("ABORTED", "the upload ended without its last chunk (the querier broke "
                                          "off mid-upload); nothing was kept")

    async def _next_chunk(self, chunks) -> pb.MessageChunk | None:
        """The upload's next chunk (None at its end); a querier that sends nothing for the upload idle
        timeout loses its upload: no reader, quota or stream slot waits on it."""
        idle = self.limits.upload_idle
        try:
            async with asyncio.timeout(idle):       # in this task: a cancelled call stays cancelled
                return await anext(chunks, None)
        except TimeoutError:
            raise ServiceError("DEADLINE_EXCEEDED", f"no data for {idle:g} s: the upload was aborted "
                                                    "(keyholder serve --upload-idle-timeout)") from None

    async def GetMessage(self, request, context):
        def opened(party: str) -> tuple:
            followed = self.core.follow_message(party, request.message_id)
            if followed is not None:                 # still streaming in: read as it grows
                return followed
            message, chunks = self.core.get_message(party, request.message_id)
            return message, chunks, read_ahead(chunks)
        slot, found = await self._stream(context, "GetMessage", request, opened)
        with slot:
            if len(found) == 2:
                async for chunk in self._follow(context, *found):
                    yield chunk
                return
            message, chunks, ready = found
            header = pb.MessageHeader(session_id=message.session_id, kind=message.kind,
                                      recipient=message.recipient)
            first = True
            for data in ready:
                yield pb.MessageChunk(header=header, data=data, round=message.round or 0) if first \
                    else pb.MessageChunk(data=data)
                first = False
            while len(ready) == READ_AHEAD and (data := await on_pool(next, chunks, None)) is not None:
                yield pb.MessageChunk(data=data)

    async def _follow(self, context, upload: Upload, follower: Follower):
        """Stream a query as its upload grows (:class:`keyholder.uploads.Follower`), woken by each
        write; the last chunk names the round the query opened.  No thread waits."""
        header = pb.MessageHeader(session_id=upload.session.id, kind="query", recipient=upload.recipient)
        first = True
        try:
            async with contextlib.aclosing(self.polls.follow(upload.key, follower.read)) as pieces:
                async for data in pieces:
                    yield pb.MessageChunk(header=header, data=data) if first else pb.MessageChunk(data=data)
                    first = False
            yield pb.MessageChunk(round=upload.round)
        except ServiceError as error:
            await refuse(context, error)
        finally:
            follower.close()

    async def AckMessage(self, request, context):
        return message_info(await self._run(context, "AckMessage", request,
                                            lambda party: self.core.ack_message(party, request.message_id)))

    # -- rounds ---------------------------------------------------------------
    async def ListWork(self, request, context):
        def announced(party: str) -> str:
            self.core.announce_table(party, request.table_rows)
            if request.HasField("matching"):
                self.core.announce_matching(party, request.matching.spec, list(request.matching.fields))
            return party
        party = await self._run(context, "ListWork", request, announced)
        known = set(request.known_message_ids)

        def listed() -> list:
            return [(*item, self.core.party_key(item[0].querier)) for item in self.core.list_work(party)]

        def news() -> list | None:                 # the list, once it holds work the holder does not know
            items = listed()
            return items if any(item[1].message_id not in known for item in items) else None
        try:
            items = await self.polls.wait(party, party, min(request.wait_seconds, self.limits.max_wait),
                                          news if known else listed)
            if items is None and known:            # nothing new: the whole list all the same
                items = await on_pool(listed)
        except ServiceError as error:
            return await refuse(context, error)
        return pb.WorkList(items=[
            pb.WorkItem(session=session_info(session), round=found.round, message_id=found.message_id,
                        querier=session.querier, received_seqs=seqs, querier_x25519_public_key=querier_key)
            for session, found, seqs, querier_key in items or []])

    def _submit(self, party: str, batch: pb.ComparisonBatch) -> tuple[int, bool]:
        """Zero-test one batch (checked by :mod:`keyholder.validation`): (comparisons, duplicate)."""
        rule = pair_rule(batch.rule) if batch.HasField("rule") else None
        return self.core.submit_batch(party, batch.session_id, batch.round, batch.seq, batch.ciphertexts,
                                      list(batch.row_comparisons), list(batch.attachments), rule,
                                      batch.round_comparisons)

    async def SubmitComparisons(self, request, context):
        count, duplicate = await self._run(context, "SubmitComparisons", request,
                                           lambda party: self._submit(party, request), self.zero_tests)
        return pb.BatchAck(seq=request.seq, comparisons=count, duplicate=duplicate)

    async def FinishRound(self, request, context):
        def finish(party: str) -> Round:
            if request.HasField("last_batch"):
                self._submit(party, request.last_batch)
            return self.core.finish_round(party, request.session_id, request.round, request.batches,
                                          request.holder_note)
        lanes = self.zero_tests if request.HasField("last_batch") else None
        return round_info(await self._run(context, "FinishRound", request, finish, lanes), for_querier=False)

    async def AbortRound(self, request, context):
        return round_info(await self._run(context, "AbortRound", request, lambda party: self.core.abort_round(
            party, request.session_id, request.round, request.reason)), for_querier=False)

    async def WaitRound(self, request, context):
        def current(party: str) -> Round:
            return self.core.round_for_querier(party, request.session_id, request.round)
        key = request.session_id
        with self.polls.changes.watch(key):
            looked = self.polls.changes.event(key)    # before the first look: a change after it wakes the wait
            party, found = await self._run(context, "WaitRound", request, lambda party: (party, current(party)))
            if found.status == PENDING:
                try:
                    found = await self.polls.wait(party, key, min(request.wait_seconds, self.limits.max_wait),
                                                  lambda: finished(current(party)), looked) \
                        or await on_pool(current, party)
                except ServiceError as error:
                    return await refuse(context, error)
        return round_info(found, for_querier=True, progress=self.core.progress(found))

    async def FetchResults(self, request, context):
        def opened(party: str) -> tuple[Iterator[list], list[list]]:
            pages = self.core.fetch_results(party, request.session_id, request.round)
            return pages, read_ahead(pages)
        slot, (pages, ready) = await self._stream(context, "FetchResults", request, opened)
        with slot:
            for page in ready:
                yield pb.ResultBatch(matches=[pb.Match(match_indices=indices, attachment=blob)
                                              for indices, blob in page])
            while len(ready) == READ_AHEAD and (page := await on_pool(next, pages, None)) is not None:
                yield pb.ResultBatch(matches=[pb.Match(match_indices=indices, attachment=blob)
                                              for indices, blob in page])


READ_AHEAD = 2     # pieces of a streamed answer read with the call's checks (a lookup's whole answer)


def read_ahead(pieces: Iterator[T]) -> list[T]:
    """The first ``READ_AHEAD`` pieces of a stream, read in the thread that checked the call: fewer
    means the stream is all there (a small message, a lookup's results), saving a thread hop each."""
    return [piece for piece in (next(pieces, None) for _ in range(READ_AHEAD)) if piece is not None]


def finished(found: Round) -> Round | None:
    return found if found.status != PENDING else None
