"""K keeps an upload only when its final chunk is marked ``last`` (docs/protocol.md, "Streaming the
query"): gRPC can end the request stream of a client that died mid-upload as if it were complete, and
a cut-off query must never be relayed or open a round.  Against a real ``keyholder serve``."""
from __future__ import annotations

import os

import grpc

from linkhelpers import TEST_KEY_BITS
from proto import linkage_pb2 as pb
from proto import linkage_pb2_grpc as pb_grpc


def register(stub, name: str) -> list[tuple[str, str]]:
    token = stub.Register(pb.RegisterRequest(name=name, x25519_public_key=os.urandom(32)), timeout=10).token
    return [("authorization", f"Bearer {token}")]


def test_only_a_stream_marked_complete_is_kept(fresh_keyholder):
    server = fresh_keyholder()
    stub = pb_grpc.KeyHolderStub(grpc.insecure_channel(server.address))
    querier, _ = register(stub, "q"), register(stub, "h")
    session = stub.OpenSession(pb.OpenSessionRequest(mode=pb.JOIN, holder="h", key_bits=TEST_KEY_BITS),
                               metadata=querier, timeout=30)
    header = pb.MessageHeader(session_id=session.session_id, kind="query", recipient="h")

    def put(*chunks: pb.MessageChunk) -> grpc.RpcError | pb.MessageInfo:
        try:
            return stub.PutMessage(iter(chunks), metadata=querier, timeout=30)
        except grpc.RpcError as error:
            return error

    cut = put(pb.MessageChunk(header=header, data=b"sealed"), pb.MessageChunk(data=b"more"))   # no end mark
    assert cut.code() == grpc.StatusCode.ABORTED and "without its last chunk" in cut.details()
    late = put(pb.MessageChunk(header=header, data=b"sealed", last=True), pb.MessageChunk(data=b"more"))
    assert late.code() == grpc.StatusCode.INVALID_ARGUMENT and "after the one marked last" in late.details()
    assert stub.GetSession(pb.SessionRef(session_id=session.session_id), metadata=querier).rounds == 0
    assert [p for p in (server.data_dir / "spool").rglob("*") if p.is_file()] == []       # nothing kept
    kept = put(pb.MessageChunk(header=header, data=b"sealed"), pb.MessageChunk(data=b"end", last=True))
    assert kept.round == 1
    streamed = pb.MessageHeader(session_id=session.session_id, kind="query", recipient="h", stream=True)
    alone = put(pb.MessageChunk(header=streamed, data=b"sealed", last=True))               # the first is the last
    assert alone.round == 2 and alone.size == 6

