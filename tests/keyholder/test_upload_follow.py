"""A query the holder reads while it streams in (docs/protocol.md, "Streaming the query"), driven in
process on the key holder's core with its real SQLite store and spool: K lists a streamed upload at
once as round 0, a follower reads what was written and no more, learns the round at the end, and is
refused (``ABORTED``) when the upload breaks off or its session ends; no round is opened then, and
the querier's next upload opens the same round number.  Uploads not marked as streamed are listed
only when complete (a lookup's query), and a session's concurrent uploads each open their own round.
The servicer's path (``KeyHolder.put_message``) aborts a refused or cancelled upload."""
from __future__ import annotations

import asyncio
import secrets
from pathlib import Path

import pytest

from common.schemes import get_scheme
from core_calls import open_session, put_message
from keyholder.core import KeyHolder
from keyholder.errors import ServiceError
from keyholder.limits import Limits
from keyholder.proto_enums import PENDING

JOIN = 1


@pytest.fixture
def core(tmp_path: Path):
    keyholder = KeyHolder(tmp_path / "keyholder", b"test passphrase", Limits(max_rounds=2))
    for name in ("querier", "holder", "stranger"):
        keyholder.register(name, secrets.token_bytes(32), None, None)
    yield keyholder
    keyholder.close()


def open_ristretto(core: KeyHolder):
    return open_session(core, "querier", JOIN, "holder", 256, 0, scheme=get_scheme("ristretto"))


def refused(code: str, call, *args) -> str:
    with pytest.raises(ServiceError) as caught:
        call(*args)
    assert caught.value.code == code, caught.value.message
    return caught.value.message


def test_the_holder_reads_a_query_while_it_streams_in_and_learns_its_round(core):
    session = open_ristretto(core)
    changes: list[tuple[str, ...]] = []
    core.add_listener(changes.append)
    upload = core.begin_message("querier", session.id, "query", "holder", streamed=True)
    assert ("holder",) in changes                                   # the holder's long-poll wakes at once
    [(listed, work, seqs)] = core.list_work("holder")
    assert (listed.id, work.round, work.status, work.message_id, seqs) == (session.id, 0, PENDING, upload.id, [])
    assert core.store.get_session(session.id).rounds == 0            # no round is open yet
    refused("PERMISSION_DENIED", core.follow_message, "querier", upload.id)   # only the recipient reads it
    assert core.follow_message("stranger", upload.id) is None          # a third party is told nothing
    _, follower = core.follow_message("holder", upload.id)
    assert follower.read() == b""                                     # nothing written yet: no wait either
    core.write_upload(upload, b"header")
    assert follower.read() == b"header" and follower.read() == b""
    core.write_upload(upload, b" and the rest")
    refused("FAILED_PRECONDITION", core.ack_message, "holder", upload.id)
    message = core.commit_upload(upload)
    assert follower.read() == b" and the rest"
    assert follower.read() is None and upload.round == message.round == 1
    [(_, work, _)] = core.list_work("holder")                        # now the round itself, listed once
    assert (work.round, work.message_id) == (1, upload.id)
    fetched, chunks = core.get_message("holder", upload.id)
    assert b"".join(chunks) == b"header and the rest" and fetched.round == 1


def test_a_broken_upload_refuses_its_follower_opens_no_round_and_leaves_no_bytes(core):
    session = open_ristretto(core)
    upload = core.begin_message("querier", session.id, "query", "holder", streamed=True)
    core.write_upload(upload, b"half a query")
    _, follower = core.follow_message("holder", upload.id)
    assert follower.read() == b"half a query"
    core.abort_upload(upload)                         # the stream broke (what KeyHolder.put_message does then)
    assert "broke off" in refused("ABORTED", follower.read)
    assert core.list_work("holder") == [] and core.store.get_session(session.id).rounds == 0
    assert not list((core.spool / session.id).iterdir())              # its bytes are gone
    again = put_message(core, "querier", session.id, "query", "holder", [b"the whole query"])
    assert again.round == 1                                           # the retry opens the same round


def test_uploads_not_streamed_are_listed_when_complete_and_concurrent_ones_open_their_own_rounds(core):
    session = open_ristretto(core)
    whole = core.begin_message("querier", session.id, "query", "holder")      # a lookup's query
    core.write_upload(whole, b"small")
    assert core.list_work("holder") == []
    first = core.begin_message("querier", session.id, "query", "holder", streamed=True)
    second = core.begin_message("querier", session.id, "query", "holder", streamed=True)
    core.write_upload(first, b"one")
    core.write_upload(second, b"two")
    assert sorted((w.round, w.message_id) for _, w, _ in core.list_work("holder")) == \
        sorted([(0, first.id), (0, second.id)])
    followers = [core.follow_message("holder", u.id)[1] for u in (first, second)]
    # rounds in the order of completion
    assert (core.commit_upload(second).round, core.commit_upload(whole).round) == (1, 2)
    assert [f.read() for f in followers] == [b"one", b"two"]
    assert followers[1].read() is None and second.round == 1
    assert followers[0].read() == b"" and first.round == 0               # still coming in
    refused("RESOURCE_EXHAUSTED", core.commit_upload, first)             # the session's two rounds are taken
    assert "2 rounds" in refused("ABORTED", followers[0].read)


def test_put_message_aborts_a_refused_upload_before_raising_and_a_cancelled_one_once_open(core):
    """The servicer's path (:meth:`KeyHolder.put_message`): a stream refused mid-way has its upload aborted
    (followers refused, bytes gone) before the refusal reaches the querier; a call cancelled while the
    upload is open leaves it aborted too, by a clean-up the cancelled call does not await."""
    session = open_ristretto(core)

    async def refused_midway():
        async def rest():
            yield b" more"
            raise ServiceError("INVALID_ARGUMENT", "a chunk came after the one marked last")
        with pytest.raises(ServiceError):
            await core.put_message("querier", session.id, "query", "holder", True, b"head", rest())
        return list((core.spool / session.id).iterdir()), core.list_work("holder")

    assert asyncio.run(refused_midway()) == ([], [])                  # already gone when the error is raised

    async def cancelled_while_open():
        waiting = asyncio.Event()

        async def stalled():
            waiting.set()
            await asyncio.Event().wait()                               # the querier sends nothing more
            yield b""
        call = asyncio.create_task(core.put_message("querier", session.id, "query", "holder", True, b"head",
                                                    stalled()))
        await waiting.wait()
        [(_, work, _)] = core.list_work("holder")
        _, follower = core.follow_message("holder", work.message_id)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        return follower

    follower = asyncio.run(cancelled_while_open())                    # its pool's work done on return
    assert "broke off" in refused("ABORTED", follower.read)
    assert core.list_work("holder") == [] and not list((core.spool / session.id).iterdir())


def test_ending_the_session_aborts_its_upload(core):
    session = open_ristretto(core)
    upload = core.begin_message("querier", session.id, "query", "holder", streamed=True)
    core.write_upload(upload, b"part")
    _, follower = core.follow_message("holder", upload.id)
    core.close_session("querier", session.id)
    assert "session ended" in refused("ABORTED", follower.read)
    refused("ABORTED", core.commit_upload, upload)
    assert core.list_work("holder") == []


def test_concurrent_uploads_cannot_pass_the_round_cap_together(core, monkeypatch):
    """Two uploads commit at the same moment into a session with one round left of its cap (2): each
    commit takes its round in the transaction that counts them, so only one does.  With the count checked
    before that transaction both passed (79 rounds were committed under a cap of 64).  The refused upload
    leaves no bytes."""
    import os
    import threading
    session = open_ristretto(core)
    first = core.begin_message("querier", session.id, "query", "holder")
    core.write_upload(first, b"query bytes")
    assert core.commit_upload(first).round == 1
    uploads = [core.begin_message("querier", session.id, "query", "holder") for _ in range(2)]
    for upload in uploads:
        core.write_upload(upload, b"query bytes")
    together = threading.Barrier(2, timeout=5)
    replace = os.replace

    def in_step(source, target):                  # both commits are past their checks before either records
        try:
            together.wait()
        except threading.BrokenBarrierError:
            pass
        return replace(source, target)
    monkeypatch.setattr(os, "replace", in_step)
    outcomes: list = []

    def commit(upload):
        try:
            outcomes.append(core.commit_upload(upload).round)
        except ServiceError as error:
            outcomes.append(error.code)
    threads = [threading.Thread(target=commit, args=(u,)) for u in uploads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(outcomes, key=str) == [2, "RESOURCE_EXHAUSTED"]
    assert core.store.get_session(session.id).rounds == 2
    kept = sorted(p.name for p in core.spool.rglob("*") if p.is_file())
    assert kept == sorted(Path(core.store.round_message_path(session.id, r)).name for r in (1, 2))


def test_uploads_in_flight_count_against_the_spool_quotas(tmp_path):
    """Each upload used to be given the whole room left when it began, so 8 concurrent uploads under a
    1 MB session quota were all committed (6.1 MB on disk).  Bytes in flight now count at every write."""
    core = KeyHolder(tmp_path / "kh", b"test passphrase", Limits(max_spool_session_bytes=1000, max_spool_bytes=1500))
    for name in ("querier", "holder"):
        core.register(name, secrets.token_bytes(32), None, None)
    try:
        first, second = open_ristretto(core), open_ristretto(core)
        uploads = [core.begin_message("querier", first.id, "query", "holder") for _ in range(3)]
        core.write_upload(uploads[0], b"x" * 400)
        core.write_upload(uploads[1], b"x" * 400)
        assert "this session's spool quota" in refused("RESOURCE_EXHAUSTED", core.write_upload, uploads[2],
                                                       b"x" * 400)
        core.write_upload(uploads[2], b"x" * 200)                          # what is left, exactly
        other = core.begin_message("querier", second.id, "query", "holder")
        assert "the key holder's spool quota" in refused("RESOURCE_EXHAUSTED", core.write_upload, other, b"x" * 600)
        assert [core.commit_upload(u).round for u in uploads] == [1, 2, 3]
        uploads_left = core.begin_message("querier", second.id, "query", "holder")
        core.write_upload(uploads_left, b"x" * 400)                         # 1,000 kept + 400 < 1,500
    finally:
        core.close()
