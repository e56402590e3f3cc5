"""Every RPC of a real ``keyholder serve`` under random and adversarial fields (NaN, infinities,
negatives, huge numbers, empty and malformed ids, oversized repeated fields): each call is answered
within its deadline with a proper status (never INTERNAL or UNKNOWN), the server's CPU returns to
idle, and a well-formed call of another party still succeeds."""
from __future__ import annotations

import math
import os
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linkhelpers import TEST_KEY_BITS, start_keyholder
from proto import linkage_pb2 as pb
from proto import linkage_pb2_grpc as pb_grpc

CALL_TIMEOUT = 5.0
BAD_STATUSES = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN, grpc.StatusCode.DEADLINE_EXCEEDED}


class Service:
    """A key holder with three registered parties and one session with a pending round."""

    def __init__(self, folder) -> None:
        self.server = start_keyholder(folder, tls=False, extra=("--max-auth-failures", "1000000"))
        self.channel = grpc.insecure_channel(self.server.address)
        self.stub = pb_grpc.KeyHolderStub(self.channel)
        self.tokens = {name: self.stub.Register(pb.RegisterRequest(name=name, x25519_public_key=os.urandom(32)),
                                                timeout=10).token
                       for name in ("fq", "fh", "bystander")}
        session = self.stub.OpenSession(pb.OpenSessionRequest(mode=pb.JOIN, holder="fh", key_bits=TEST_KEY_BITS),
                                        metadata=self.meta("fq"), timeout=30)
        self.session_id = session.session_id
        header = pb.MessageHeader(session_id=self.session_id, kind="query", recipient="fh")
        message = self.stub.PutMessage(iter([pb.MessageChunk(header=header, data=b"sealed", last=True)]),
                                       metadata=self.meta("fq"), timeout=10)
        self.message_id = message.message_id

    def meta(self, name: str) -> list[tuple[str, str]]:
        return [("authorization", f"Bearer {self.tokens[name]}")]

    def cpu_seconds(self) -> float:
        fields = open(f"/proc/{self.server.process.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def idle_cpu(self, seconds: float = 1.0) -> float:
        """CPU seconds the server used per wall second, over ``seconds``."""
        before, started = self.cpu_seconds(), time.monotonic()
        time.sleep(seconds)
        return (self.cpu_seconds() - before) / (time.monotonic() - started)

    def bystander_works(self) -> None:
        """A well-formed call of a party the fuzzing never used answers at once."""
        started = time.monotonic()
        info = self.stub.GetParty(pb.GetPartyRequest(name="fq"), metadata=self.meta("bystander"), timeout=5)
        assert info.name == "fq"
        work = self.stub.ListWork(pb.ListWorkRequest(wait_seconds=0), metadata=self.meta("bystander"), timeout=5)
        assert list(work.items) == []
        assert time.monotonic() - started < 2.0


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    service = Service(tmp_path_factory.mktemp("fuzz"))
    yield service
    service.server.stop()


# -- strategies: each field is a well-formed value half of the time, an adversarial one otherwise ---
ADVERSARIAL_FLOATS = [math.nan, math.inf, -math.inf, -1.0, -0.0, -1e-300, 1e308, 3601.0, 1e9]
floats = st.floats(0.0, 0.2) | st.sampled_from(ADVERSARIAL_FLOATS)
uint32 = st.sampled_from([0, 1, 2, 64, 65, 2 ** 31, 2 ** 32 - 1]) | st.integers(0, 2 ** 32 - 1)
uint64 = st.sampled_from([0, 1, 2 ** 40, 2 ** 64 - 1]) | st.integers(0, 2 ** 64 - 1)
rounds = st.just(1) | uint32
names = st.sampled_from(["fq", "fh", "bystander"]) | st.sampled_from(
    ["", "-x", "a" * 65, "a" * 10000, "nobody", "x y", "\x00"]) | st.text(max_size=20)
blobs = st.binary(max_size=64) | st.sampled_from([b"", b"\x00" * 32, b"\xff" * 300, b"x" * (1 << 20)])
uint_lists = (st.lists(st.integers(1, 3), min_size=1, max_size=4) | st.lists(uint32, max_size=8)
              | st.sampled_from([[1] * 100_000, [70_000], [0], [2 ** 32 - 1] * 3]))
BAD_IDS = ["", "x", "0" * 32, "Z" * 32, "../../etc/passwd", "a" * 10_000, "\x00" * 32]


def requests(service: Service):
    session_ids = (st.sampled_from([service.session_id, service.message_id])
                   | st.sampled_from(BAD_IDS) | st.text(max_size=40))
    rule = st.builds(pb.PairRule, group_sizes=uint_lists,
                     terms=st.lists(st.builds(pb.Conjunction, groups=uint_lists), max_size=4)
                     | st.just([pb.Conjunction(groups=[0])] * 20_000))
    header = st.builds(pb.MessageHeader, session_id=session_ids, kind=st.sampled_from(["query", "", "x"]) | names,
                       recipient=names)
    chunks = st.lists(st.builds(pb.MessageChunk, data=blobs, last=st.booleans()), max_size=3)
    put = st.tuples(st.booleans(), header, blobs, chunks).map(
        lambda t: ([pb.MessageChunk(header=t[1], data=t[2], last=t[0] and not t[3])] if t[0] else []) + t[3])
    return st.one_of(
        st.tuples(st.just("Register"), st.builds(pb.RegisterRequest, name=names, x25519_public_key=blobs)),
        st.tuples(st.just("GetParty"), st.builds(pb.GetPartyRequest, name=names)),
        st.tuples(st.just("OpenSession"), st.builds(pb.OpenSessionRequest, mode=st.integers(-2, 5), holder=names,
                                                    key_bits=st.sampled_from([TEST_KEY_BITS, 256]) | uint32,
                                                    ttl_seconds=st.just(60) | uint32,
                                                    query_ciphertexts=uint64,
                                                    scheme=st.sampled_from(["", "paillier", "ec", "ristretto"]) | names)),
        st.tuples(st.sampled_from(["GetSession", "CloseSession"]), st.builds(pb.SessionRef, session_id=session_ids)),
        st.tuples(st.just("PutMessage"), put),
        st.tuples(st.sampled_from(["GetMessage", "AckMessage"]), st.builds(pb.MessageRef, message_id=session_ids)),
        st.tuples(st.just("ListWork"), st.builds(pb.ListWorkRequest, wait_seconds=floats,
                                                 table_rows=st.just(0) | st.sampled_from([1, 16384, 1 << 40]) | uint64)),
        st.tuples(st.just("SubmitComparisons"), st.builds(
            pb.ComparisonBatch, session_id=session_ids, round=rounds, seq=st.integers(0, 3) | uint32,
            ciphertexts=st.integers(1, 3).map(lambda n: (1).to_bytes(2 * TEST_KEY_BITS // 8, "big") * n) | blobs,
            row_comparisons=uint_lists,
            attachments=st.integers(1, 3).map(lambda n: [b"a" * 48] * n) | st.lists(blobs, max_size=4)
            | st.just([b"a"] * 70_000),
            rule=st.none() | rule)),
        st.tuples(st.just("FinishRound"), st.builds(pb.FinishRoundRequest, session_id=session_ids, round=rounds,
                                                    batches=uint32, holder_note=blobs)),
        st.tuples(st.just("AbortRound"), st.builds(pb.AbortRoundRequest, session_id=session_ids, round=rounds,
                                                   reason=names)),
        st.tuples(st.just("WaitRound"), st.builds(pb.WaitRoundRequest, session_id=session_ids, round=rounds,
                                                  wait_seconds=floats)),
        st.tuples(st.just("FetchResults"), st.builds(pb.RoundRef, session_id=session_ids, round=rounds)),
    )


def call(service: Service, method: str, request, caller: str) -> grpc.StatusCode:
    metadata = service.meta(caller) if caller in service.tokens else [("authorization", f"Bearer {caller}")]
    function = getattr(service.stub, method)
    started = time.monotonic()
    try:
        if method == "PutMessage":
            function(iter(request), metadata=metadata, timeout=CALL_TIMEOUT)
        elif method in ("GetMessage", "FetchResults"):
            list(function(request, metadata=metadata, timeout=CALL_TIMEOUT))
        else:
            reply = function(request, metadata=metadata, timeout=CALL_TIMEOUT)
            if method == "Register" and request.name in service.tokens:   # a re-registration renews the token
                service.tokens[request.name] = reply.token
        code = grpc.StatusCode.OK
    except grpc.RpcError as error:
        code = error.code()
        assert code not in BAD_STATUSES, f"{method} {request!r:.300}: {code} {error.details()}"
        assert error.details() and "\n" not in error.details(), f"{method}: {error.details()!r}"
    assert time.monotonic() - started < CALL_TIMEOUT
    return code


def test_every_rpc_answers_adversarial_fields(service):
    seen: dict[str, set] = {}

    @settings(max_examples=500, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
    @given(requests(service), st.sampled_from(["fq", "fh", "not-a-token"]))
    def fuzz(method_request, caller):
        method, request = method_request
        seen.setdefault(method, set()).add(call(service, method, request, caller))

    started = time.monotonic()
    fuzz()
    assert len(seen) == 14, sorted(seen)                  # every RPC was exercised
    assert time.monotonic() - started < 60
    assert service.idle_cpu() < 0.2                       # nothing spins after the storm
    service.bystander_works()
    log = service.server.log_path.read_text()
    assert "Traceback" not in log and "internal error" not in log


def test_an_unknown_scheme_or_a_key_size_it_does_not_have_is_refused(service):
    """OpenSession names the scheme: an unknown or retired one, or a ristretto key size other than 0/256, is
    INVALID_ARGUMENT."""
    for scheme, bits, expected in (("rsa", 0, "unknown comparison scheme 'rsa'"), ("EC", 0, "unknown"),
                                   ("ec", 0, "the comparison scheme 'ec' is no longer offered: use ristretto"),
                                   ("ristretto", TEST_KEY_BITS, "with the ristretto scheme"), ("\x00", 0, "unknown")):
        with pytest.raises(grpc.RpcError) as caught:
            service.stub.OpenSession(pb.OpenSessionRequest(mode=pb.JOIN, holder="fh", key_bits=bits, scheme=scheme),
                                     metadata=service.meta("fq"), timeout=5)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT and expected in caught.value.details()
    session = service.stub.OpenSession(pb.OpenSessionRequest(mode=pb.JOIN, holder="fh", scheme="ristretto"),
                                       metadata=service.meta("fq"), timeout=5)
    assert (session.scheme, session.key_bits, len(session.public_key)) == ("ristretto", 256, 32)
    service.stub.CloseSession(pb.SessionRef(session_id=session.session_id), metadata=service.meta("fq"), timeout=5)


def test_nan_and_infinite_waits_are_refused_at_once(service):
    """Forty NaN/inf long-polls once froze the key holder; now each is INVALID_ARGUMENT at once."""
    waits = [pb.ListWorkRequest(wait_seconds=v) for v in (math.nan, math.inf, -math.inf, -1.0)] * 5
    rounds = [pb.WaitRoundRequest(session_id=service.session_id, round=1, wait_seconds=v)
              for v in (math.nan, math.inf, -math.inf, -1.0)] * 5

    def one(request):
        method = service.stub.ListWork if isinstance(request, pb.ListWorkRequest) else service.stub.WaitRound
        with pytest.raises(grpc.RpcError) as caught:
            method(request, metadata=service.meta("fh" if method == service.stub.ListWork else "fq"), timeout=5)
        return caught.value.code(), caught.value.details()

    started = time.monotonic()
    with ThreadPoolExecutor(40) as pool:
        answers = list(pool.map(one, waits + rounds))
    assert time.monotonic() - started < 3.0
    assert all(code == grpc.StatusCode.INVALID_ARGUMENT and "wait_seconds" in details for code, details in answers)
    assert service.idle_cpu() < 0.2
    service.bystander_works()
