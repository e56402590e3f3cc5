"""Caps that hold under concurrency, against a real ``keyholder serve``: the open-session cap under 64
concurrent OpenSession calls of one party (both schemes) and 500 calls over 8 threads; key generation
queued per party and served fairly, so another party's OpenSession stays fast while one party churns
costly keys; streams capped per party and in total, a refused party client waiting its turn;
undecodable request bytes answered INVALID_ARGUMENT on every RPC."""
from __future__ import annotations

import os
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from grpc_health.v1 import health_pb2

from linkhelpers import TEST_KEY_BITS, make_parties, stub_for
from party_client.identity import PartyDir
from party_client.transport import Connection
from party_client.waiting import Notice
from proto import linkage_pb2 as pb
from proto import linkage_pb2_grpc as pb_grpc

CAP = 8


def register(stub, name: str) -> list[tuple[str, str]]:
    token = stub.Register(pb.RegisterRequest(name=name, x25519_public_key=os.urandom(32)), timeout=30).token
    return [("authorization", f"Bearer {token}")]


def open_status(stub, meta, scheme: str, key_bits: int, holder: str = "h") -> tuple[grpc.StatusCode, str]:
    try:
        stub.OpenSession(pb.OpenSessionRequest(mode=pb.JOIN, holder=holder, key_bits=key_bits, scheme=scheme),
                         metadata=meta, timeout=120)
        return grpc.StatusCode.OK, ""
    except grpc.RpcError as error:
        return error.code(), error.details()


def open_count(server, name: str) -> int:
    """Open sessions of ``name`` as K's store has them."""
    import sqlite3
    with sqlite3.connect(server.data_dir / "keyholder.sqlite3") as db:
        (count,) = db.execute("SELECT COUNT(*) FROM sessions WHERE querier = ? AND status = 1", (name,)).fetchone()
    return count


@pytest.mark.parametrize("scheme,key_bits", [("paillier", 2048), ("ristretto", 0)])
def test_the_open_session_cap_holds_under_64_concurrent_opens(fresh_keyholder, scheme, key_bits):
    """Before, the cap was checked before the key existed: 64 concurrent opens all passed the check."""
    server = fresh_keyholder(extra=("--max-open-sessions", str(CAP), "--keygen-queue", "64",
                                    "--keygen-seconds", "600"))
    stub = pb_grpc.KeyHolderStub(grpc.insecure_channel(server.address))
    q, _ = register(stub, "q"), register(stub, "h")
    barrier = threading.Barrier(64)

    def one(_):
        barrier.wait()
        return open_status(stub, q, scheme, key_bits)
    with ThreadPoolExecutor(64) as pool:
        answers = list(pool.map(one, range(64)))
    codes = [code for code, _ in answers]
    assert codes.count(grpc.StatusCode.OK) == CAP, [(c.name, d) for c, d in answers if c != grpc.StatusCode.OK][:3]
    assert all(code == grpc.StatusCode.RESOURCE_EXHAUSTED and f"{CAP} open sessions" in details
               for code, details in answers if code != grpc.StatusCode.OK)
    assert open_count(server, "q") == CAP


@pytest.mark.parametrize("scheme,key_bits", [("paillier", TEST_KEY_BITS), ("ristretto", 0)])
def test_the_cap_holds_over_500_calls_on_8_threads(fresh_keyholder, scheme, key_bits):
    """A cap below the thread count: before, the first eight calls all passed the check."""
    server = fresh_keyholder(extra=("--max-open-sessions", "5"))
    stub = pb_grpc.KeyHolderStub(grpc.insecure_channel(server.address))
    q, _ = register(stub, "q"), register(stub, "h")
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: open_status(stub, q, scheme, key_bits), range(500)))
    assert [code for code, _ in answers].count(grpc.StatusCode.OK) == 5
    assert open_count(server, "q") == 5


def test_key_generation_is_queued_per_party_and_others_stay_fast(fresh_keyholder):
    """A party churning costly keys beyond its budget waits in its own queue (then is told when to retry);
    another party's OpenSession, of either scheme, is served meanwhile without waiting for the churner."""
    server = fresh_keyholder(extra=("--keygen-seconds", "0.5", "--keygen-queue", "4", "--keygen-workers", "1"))
    stub = pb_grpc.KeyHolderStub(grpc.insecure_channel(server.address))
    churner, other, _ = register(stub, "churner"), register(stub, "other"), register(stub, "h")
    answers: list[tuple[grpc.StatusCode, str]] = []
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            futures = [stub.OpenSession.future(pb.OpenSessionRequest(mode=pb.JOIN, holder="h", key_bits=2048),
                                               metadata=churner, timeout=30) for _ in range(6)]
            for future in futures:
                try:
                    session = future.result()
                    answers.append((grpc.StatusCode.OK, ""))
                    stub.CloseSession(pb.SessionRef(session_id=session.session_id), metadata=churner, timeout=30)
                except grpc.RpcError as error:
                    answers.append((error.code(), error.details()))
                    if error.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                        return
    thread = threading.Thread(target=churn, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not any(code == grpc.StatusCode.RESOURCE_EXHAUSTED for code, _ in answers):
            assert time.monotonic() < deadline, answers
            time.sleep(0.1)                      # the churner's budget is spent and its queue full
        latencies = {"ristretto": [], "paillier": []}
        for scheme, bits in [("ristretto", 0), ("paillier", TEST_KEY_BITS)] * 4:
            started = time.monotonic()
            assert open_status(stub, other, scheme, bits)[0] == grpc.StatusCode.OK
            latencies[scheme].append(time.monotonic() - started)
    finally:
        stop.set()
        seen = list(answers)                 # the churner's calls still queued end with the server
    refusal = next(details for code, details in seen if code == grpc.StatusCode.RESOURCE_EXHAUSTED)
    assert "4 key generations of 'churner' are already queued" in refusal and "retry in" in refusal
    assert {code for code, _ in seen} <= {grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED}
    # the churner's queued keys wait for its budget (0.5 s a minute); the other party's never do
    print("other party's OpenSession, median s:", {k: round(statistics.median(v), 3) for k, v in latencies.items()})
    assert statistics.median(latencies["ristretto"]) < 1.0
    assert statistics.median(latencies["paillier"]) < 5.0


def test_streams_are_capped_per_party_and_in_total_and_a_refused_client_waits(fresh_keyholder, tmp_path):
    """One party could hold streams open until K had no file descriptor left (1,100 streams under
    ``ulimit -n 1024``: an honest party could not connect).  Now a party's streams beyond ``--max-streams``
    and all parties' beyond ``--max-streams-total`` are refused, before anything is opened, with
    RESOURCE_EXHAUSTED and "retry in N s"; a party client so refused waits and gets through once a
    stream ends."""
    server = fresh_keyholder(extra=("--max-streams", "2", "--max-streams-total", "3"))
    (adir, a), (bdir, b), (_, h) = make_parties(server, tmp_path, 3, cli=False)
    release = threading.Event()
    (a_stub, a_meta), (b_stub, b_meta) = stub_for(server, adir), stub_for(server, bdir)
    request = pb.OpenSessionRequest(mode=pb.JOIN, holder=h, scheme="ristretto")
    a_session, b_session = (stub.OpenSession(request, metadata=meta, timeout=30)
                            for stub, meta in ((a_stub, a_meta), (b_stub, b_meta)))

    def chunk(session: pb.SessionInfo) -> pb.MessageChunk:
        return pb.MessageChunk(header=pb.MessageHeader(session_id=session.session_id, kind="query", recipient=h),
                               data=b"sealed", last=True)

    def stalled(session: pb.SessionInfo):          # an upload that starts, then waits to be released
        yield chunk(session)
        release.wait(30)

    def refusal(call) -> tuple[grpc.StatusCode, str, dict]:
        with pytest.raises(grpc.RpcError) as caught:
            call()
        return caught.value.code(), caught.value.details(), dict(caught.value.trailing_metadata() or ())
    held = [a_stub.PutMessage.future(stalled(a_session), metadata=a_meta, timeout=30) for _ in range(2)]
    time.sleep(0.5)
    code, details, trailers = refusal(lambda: a_stub.PutMessage(iter([chunk(a_session)]), metadata=a_meta,
                                                                timeout=10))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and trailers.get("retry-after") == "1"
    assert details == f"2 streams of '{a}' are already open (keyholder serve --max-streams): retry in 1 s"
    held.append(b_stub.PutMessage.future(stalled(b_session), metadata=b_meta, timeout=30))
    time.sleep(0.5)
    total = ("3 streams of all parties are open at the key holder, its most (keyholder serve --max-streams-total): "
             "retry in 1 s")
    for call in (lambda: b_stub.PutMessage(iter([chunk(b_session)]), metadata=b_meta, timeout=10),   # uploads
                 lambda: list(b_stub.GetMessage(pb.MessageRef(message_id="0" * 32), metadata=b_meta, timeout=10))):
        code, details, _ = refusal(call)                                                            # and reads
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and details == total

    said: list[str] = []
    connection = Connection(PartyDir.load(bdir), server.address, insecure=True,
                            notice=Notice(sink=said.append, first_after=0.0))
    try:
        session = connection.call("OpenSession", request)
        threading.Timer(1.5, release.set).start()
        started = time.monotonic()
        info = connection.upload("PutMessage", lambda: iter([chunk(session)]))
        waited = time.monotonic() - started
    finally:
        release.set()
        connection.close()
    assert info.round == 1 and waited >= 1.0
    assert any("asks to wait before PutMessage" in line and "retry in 1 s" in line for line in said), said
    assert sorted(future.result(timeout=10).round for future in held) == [1, 1, 2]   # the stalled ones end too
    assert "Traceback" not in server.log_path.read_text()


def _garbage_call(channel, path: str, request_streaming: bool, response_streaming: bool, garbage: bytes):
    identity = dict(request_serializer=lambda b: b, response_deserializer=lambda b: b)
    if request_streaming and response_streaming:
        return list(channel.stream_stream(path, **identity)(iter([garbage]), timeout=10))
    if request_streaming:
        return channel.stream_unary(path, **identity)(iter([garbage]), timeout=10)
    if response_streaming:
        return list(channel.unary_stream(path, **identity)(garbage, timeout=10))
    return channel.unary_unary(path, **identity)(garbage, timeout=10)


@pytest.mark.parametrize("garbage", [b"\xff\xff\xff\xff", b"\x0a\x05ab"], ids=["bad-tag", "truncated"])
def test_undecodable_request_bytes_are_invalid_argument_on_every_rpc(fresh_keyholder, garbage):
    server = fresh_keyholder()
    channel = grpc.insecure_channel(server.address)
    stub = pb_grpc.KeyHolderStub(channel)
    meta = register(stub, "caller")
    service = pb.DESCRIPTOR.services_by_name["KeyHolder"]
    methods = [(f"/{service.full_name}/{m.name}", m.client_streaming, m.server_streaming) for m in service.methods]
    methods += [("/grpc.health.v1.Health/Check", False, False),
                ("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", True, True)]
    assert len(methods) == 16
    for path, request_streaming, response_streaming in methods:
        with pytest.raises(grpc.RpcError) as caught:
            _garbage_call(channel, path, request_streaming, response_streaming, garbage)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (path, caught.value.code(),
                                                                         caught.value.details())
        assert "not a decodable protobuf message" in caught.value.details()
    with pytest.raises(grpc.RpcError) as caught:              # a string field that is not UTF-8
        _garbage_call(channel, f"/{service.full_name}/GetParty", False, False, b"\x0a\x02\xc3\x28")
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    # the server is fine afterwards
    assert stub.GetParty(pb.GetPartyRequest(name="caller"), metadata=meta, timeout=10).name == "caller"
    health = channel.unary_unary("/grpc.health.v1.Health/Check",
                                 request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                                 response_deserializer=health_pb2.HealthCheckResponse.FromString)
    assert health(health_pb2.HealthCheckRequest(), timeout=10).status == health_pb2.HealthCheckResponse.SERVING
    assert "Traceback" not in server.log_path.read_text()
