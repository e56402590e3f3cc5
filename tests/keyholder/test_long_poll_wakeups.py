"""Long-polls woken by what they wait on, against a real ``keyholder serve``: a holder's ``ListWork``
answers as soon as a query for it arrives, a querier's ``WaitRound`` as soon as its round is finished
(well before the key holder's periodic re-check), while another party's traffic wakes neither; and
the keys K hands out with a session and a work item are the parties' registered keys."""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

import grpc

from proto import linkage_pb2 as pb
from proto import linkage_pb2_grpc as pb_grpc

PROMPT_SECONDS = 2.0        # K re-checks a long-poll every 5 s on its own


def register(stub, name: str) -> tuple[list[tuple[str, str]], bytes]:
    key = os.urandom(32)
    token = stub.Register(pb.RegisterRequest(name=name, x25519_public_key=key), timeout=10).token
    return [("authorization", f"Bearer {token}")], key


def query(stub, meta, session_id: str, holder: str):
    header = pb.MessageHeader(session_id=session_id, kind="query", recipient=holder)
    return stub.PutMessage(iter([pb.MessageChunk(header=header, data=b"sealed query", last=True)]), metadata=meta, timeout=30)


def test_long_polls_wake_on_their_own_change(fresh_keyholder):
    server = fresh_keyholder()
    stub = pb_grpc.KeyHolderStub(grpc.insecure_channel(server.address))
    (querier, querier_key), (holder, holder_key) = register(stub, "q"), register(stub, "h")
    (other, _), (other_holder, _) = register(stub, "other"), register(stub, "other-holder")
    session = stub.OpenSession(pb.OpenSessionRequest(mode=pb.LOOKUP, holder="h", scheme="ristretto"), metadata=querier,
                               timeout=30)
    assert session.holder_x25519_public_key == holder_key
    elsewhere = stub.OpenSession(pb.OpenSessionRequest(mode=pb.LOOKUP, holder="other-holder", scheme="ristretto"),
                                 metadata=other, timeout=30)
    with ThreadPoolExecutor(max_workers=2) as pool:
        started = time.monotonic()
        work = pool.submit(stub.ListWork, pb.ListWorkRequest(wait_seconds=20), metadata=holder, timeout=30)
        time.sleep(0.5)
        query(stub, other, elsewhere.session_id, "other-holder")          # not h's work: h keeps waiting
        time.sleep(0.5)
        assert not work.done()
        query(stub, querier, session.session_id, "h")
        [item] = work.result(timeout=PROMPT_SECONDS).items
        assert time.monotonic() - started < 1.0 + PROMPT_SECONDS
        assert item.querier == "q" and item.querier_x25519_public_key == querier_key

        waiting = pool.submit(stub.WaitRound, pb.WaitRoundRequest(session_id=session.session_id, round=1,
                                                                  wait_seconds=20), metadata=querier, timeout=30)
        time.sleep(0.5)
        [other_item] = stub.ListWork(pb.ListWorkRequest(wait_seconds=0), metadata=other_holder, timeout=10).items
        stub.FinishRound(pb.FinishRoundRequest(session_id=elsewhere.session_id, round=other_item.round, batches=0),
                         metadata=other_holder, timeout=10)               # another session's round: still waiting
        time.sleep(0.5)
        assert not waiting.done()
        finished_at = time.monotonic()
        stub.FinishRound(pb.FinishRoundRequest(session_id=session.session_id, round=1, batches=0), metadata=holder,
                         timeout=10)
        info = waiting.result(timeout=PROMPT_SECONDS)
        assert info.status == pb.DONE and time.monotonic() - finished_at < PROMPT_SECONDS
    # Finishing acknowledged the query: K has deleted it, so a later fetch is refused.
    try:
        list(stub.GetMessage(pb.MessageRef(message_id=item.message_id), metadata=holder, timeout=10))
    except grpc.RpcError as error:
        assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    else:
        raise AssertionError("the finished round's query is still spooled")
