"""The key holder's quotas and timeouts, each against a real ``keyholder serve``: long-polls that cost
no thread (with a per-party cap), open sessions, rounds, the declared query size, spool quotas,
attachment length, pair-rule terms, stale spool files, private files, token lifetime, failed-auth
throttling, and idle sessions losing their key."""
from __future__ import annotations

import os
import stat
import subprocess
import time

import grpc
import pytest

from linkhelpers import TEST_KEY_BITS, keyholder_cmd, make_party, run_party
from proto import linkage_pb2 as pb
from proto import linkage_pb2_grpc as pb_grpc
from linkhelpers import stub_for

WIDTH = 2 * TEST_KEY_BITS // 8


def register(stub, name: str) -> list[tuple[str, str]]:
    token = stub.Register(pb.RegisterRequest(name=name, x25519_public_key=os.urandom(32)), timeout=10).token
    return [("authorization", f"Bearer {token}")]


def refused(call) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value.code(), caught.value.details()


def put(stub, meta, session_id: str, holder: str, size: int, chunk: int = 1 << 19):
    header = pb.MessageHeader(session_id=session_id, kind="query", recipient=holder)
    chunks = [pb.MessageChunk(header=header)] + [pb.MessageChunk(data=b"x" * min(chunk, size - i),
                                                                 last=i + chunk >= size)
                                                 for i in range(0, size, chunk)]
    return stub.PutMessage(iter(chunks), metadata=meta, timeout=30)


def test_long_polls_hold_no_thread_and_are_capped(fresh_keyholder):
    server = fresh_keyholder()
    stub = pb_grpc.KeyHolderStub(grpc.insecure_channel(server.address))
    busy, other = register(stub, "busy"), register(stub, "other")
    started = time.monotonic()
    answered: dict[int, float] = {}
    polls = []
    for _ in range(200):
        future = stub.ListWork.future(pb.ListWorkRequest(wait_seconds=4), metadata=busy, timeout=20)
        future.add_done_callback(lambda f: answered.setdefault(id(f), time.monotonic()))
        polls.append(future)
    time.sleep(1.5)
    refused_fast = [f for f in polls if f.done()]                 # the capped ones, answered at once
    assert len(refused_fast) == 200 - 16
    assert all(f.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "long-polls" in f.details()
               for f in refused_fast)
    assert max(answered.values()) - started < 1.5
    mark = time.monotonic()
    assert stub.GetParty(pb.GetPartyRequest(name="busy"), metadata=other, timeout=5).name == "busy"
    other_polls = [stub.ListWork.future(pb.ListWorkRequest(wait_seconds=0.2), metadata=other, timeout=5)
                   for _ in range(16)]                       # another party's own waits are not capped by busy's
    assert all(f.result().items == [] for f in other_polls)
    assert time.monotonic() - mark < 1.0
    waiting = [f for f in polls if f not in refused_fast]
    assert all(f.result(timeout=10).items == [] for f in waiting)       # the 16 came back empty after 4 s
    assert time.monotonic() - started >= 3.9


def test_quotas(fresh_keyholder, tmp_path):
    server = fresh_keyholder(extra=("--max-open-sessions", "3", "--max-rounds", "3", "--default-query-mb", "1",
                                    "--max-spool-session-mb", "2", "--max-attachment-bytes", "100",
                                    "--max-rule-terms", "4"))
    stub = pb_grpc.KeyHolderStub(grpc.insecure_channel(server.address))
    q, h = register(stub, "q"), register(stub, "h")

    def open_session(**fields):
        return stub.OpenSession(pb.OpenSessionRequest(mode=pb.JOIN, holder="h", key_bits=TEST_KEY_BITS, **fields),
                                metadata=q, timeout=30)

    declared = open_session(query_ciphertexts=4)                  # 4 ciphertexts * 256 B * 2 + 1 MiB
    assert declared.max_query_bytes == 4 * WIDTH * 2 + (1 << 20)
    code, details = refused(lambda: put(stub, q, declared.session_id, "h", (1 << 20) + 4 * WIDTH * 2 + 1))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "declared" in details
    assert not list((server.data_dir / "spool").rglob("*.partial"))

    spooled = open_session()                                      # undeclared: --default-query-mb 1
    assert spooled.max_query_bytes == 1 << 20
    put(stub, q, spooled.session_id, "h", 900_000)
    put(stub, q, spooled.session_id, "h", 900_000)
    code, details = refused(lambda: put(stub, q, spooled.session_id, "h", 300_000))  # --max-spool-session-mb 2
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "spool quota" in details
    put(stub, q, spooled.session_id, "h", 10)
    code, details = refused(lambda: put(stub, q, spooled.session_id, "h", 10))    # third round
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "3 rounds" in details
    third = open_session()
    code, details = refused(lambda: open_session())               # --max-open-sessions 3
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "open sessions" in details
    stub.CloseSession(pb.SessionRef(session_id=declared.session_id), metadata=q, timeout=10)
    fourth = open_session()

    # refused rounds leave the spool at once
    message = put(stub, q, third.session_id, "h", 1000)
    sealed = server.data_dir / "spool" / third.session_id / f"{message.message_id}.sealed"
    assert sealed.exists()
    stub.AbortRound(pb.AbortRoundRequest(session_id=third.session_id, round=message.round, reason="no"),
                    metadata=h, timeout=10)
    assert not sealed.exists()

    # attachments: at most --max-attachment-bytes, and one length per round
    def batch(seq: int, attachment: bytes, rule=None):
        return pb.ComparisonBatch(session_id=spooled.session_id, round=1, seq=seq, ciphertexts=(1).to_bytes(WIDTH, "big"),
                                  row_comparisons=[1], attachments=[attachment], rule=rule)
    code, details = refused(lambda: stub.SubmitComparisons(batch(0, b"a" * 101), metadata=h, timeout=10))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "attachment" in details
    stub.SubmitComparisons(batch(0, b"a" * 48), metadata=h, timeout=10)
    code, details = refused(lambda: stub.SubmitComparisons(batch(1, b"a" * 50), metadata=h, timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "48 bytes" in details
    rule = pb.PairRule(group_sizes=[1], terms=[pb.Conjunction(groups=[0])] * 5)
    code, details = refused(lambda: stub.SubmitComparisons(batch(1, b"a" * 48, rule), metadata=h, timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "4 terms" in details

    # one chunk over the gRPC message limit: RESOURCE_EXHAUSTED, and no traceback in the log
    code, details = refused(lambda: put(stub, q, fourth.session_id, "h", 70 << 20, chunk=70 << 20))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "\n" not in details
    assert "Traceback" not in server.log_path.read_text()

    # stale uploads and orphans are removed at start-up; the data are the owner's only
    private(server.data_dir)
    assert any(p.name.endswith("-wal") for p in server.data_dir.iterdir())
    live = sorted(p.name for p in (server.data_dir / "spool").rglob("*.sealed"))
    server.stop()
    stale = server.data_dir / "spool" / spooled.session_id / "0123.partial"
    stale.write_bytes(b"half")
    orphan = server.data_dir / "spool" / ("f" * 32)
    orphan.mkdir()
    (orphan / "x.sealed").write_bytes(b"old")
    server.start()
    assert not stale.exists() and not orphan.exists()
    assert sorted(p.name for p in (server.data_dir / "spool").rglob("*.sealed")) == live   # live queries stay
    private(server.data_dir)


def private(folder) -> None:
    """The data directory and its folders are 0700, its files (SQLite, WAL, SHM, spool) 0600."""
    for path in [folder, *folder.rglob("*")]:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))


def test_key_size_message_matches_what_is_accepted(fresh_keyholder):
    server = fresh_keyholder()
    stub = pb_grpc.KeyHolderStub(grpc.insecure_channel(server.address))
    q, _ = register(stub, "q"), register(stub, "h")
    code, details = refused(lambda: stub.OpenSession(pb.OpenSessionRequest(mode=pb.DEDUP, holder="h", key_bits=1000),
                                                     metadata=q, timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert f"multiple of 256 bits from {TEST_KEY_BITS} to 4096" in details
    assert stub.OpenSession(pb.OpenSessionRequest(mode=pb.DEDUP, holder="h", key_bits=1280),
                            metadata=q, timeout=30).key_bits == 1280


def test_tokens_expire_failures_are_throttled_idle_sessions_lose_their_key(fresh_keyholder, tmp_path):
    server = fresh_keyholder(extra=("--token-days", str(6 / 86400), "--max-auth-failures", "5",
                                    "--idle-timeout", "1.5"))
    hdir, hname = make_party(server, tmp_path)
    qdir, _ = make_party(server, tmp_path)
    registered = time.monotonic()
    q, qmeta = stub_for(server, qdir)
    session = q.OpenSession(pb.OpenSessionRequest(mode=pb.DEDUP, holder=hname, key_bits=TEST_KEY_BITS),
                            metadata=qmeta, timeout=30)
    time.sleep(max(0.0, registered + 6.2 - time.monotonic()))
    code, details = refused(lambda: q.GetSession(pb.SessionRef(session_id=session.session_id), metadata=qmeta))
    assert code == grpc.StatusCode.UNAUTHENTICATED and "expired" in details
    run_party("register", "--dir", str(qdir), *server.flags())           # renews with the old token
    q, qmeta = stub_for(server, qdir)
    code, details = refused(lambda: q.GetSession(pb.SessionRef(session_id=session.session_id), metadata=qmeta))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "expired" in details   # idle beyond 1.5 s
    audit = subprocess.run(keyholder_cmd("audit", "--data-dir", str(server.data_dir)), capture_output=True,
                           text=True, check=True).stdout
    assert f"idle_session\t{session.session_id}" in audit
    # 4 more failures from this address (one was the expired token) reach the limit of 5: a sixth failing
    # call is refused with a time to wait (and retry-after), while a valid token is never refused
    wrong = [("authorization", "Bearer wrong")]
    for _ in range(4):
        code, _ = refused(lambda: q.GetParty(pb.GetPartyRequest(name=hname), metadata=wrong))
        assert code == grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(grpc.RpcError) as caught:
        q.GetParty(pb.GetPartyRequest(name=hname), metadata=wrong)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "failed authentications from this address: retry in" in caught.value.details()
    assert 1 <= int(dict(caught.value.trailing_metadata())["retry-after"]) <= 60
    assert q.GetParty(pb.GetPartyRequest(name=hname), metadata=qmeta).name == hname


def test_a_party_client_waits_out_the_long_poll_cap(fresh_keyholder, tmp_path):
    """RESOURCE_EXHAUSTED on a long-poll (too many waits of this party) is retried with backoff, not a refusal
    that would end the querier's session."""
    import threading

    from party_client.identity import PartyDir
    from party_client.transport import Connection

    server = fresh_keyholder(extra=("--max-waits", "1"))
    hdir, _ = make_party(server, tmp_path)
    first = Connection(PartyDir.load(hdir), server.address, insecure=True)
    second = Connection(PartyDir.load(hdir), server.address, insecure=True)
    waiting = threading.Thread(target=first.call, args=("ListWork", pb.ListWorkRequest(wait_seconds=3)))
    waiting.start()
    time.sleep(0.5)                                       # the one allowed wait is now held
    started = time.monotonic()
    reply = second.call("ListWork", pb.ListWorkRequest(wait_seconds=0))
    assert list(reply.items) == [] and 1.5 < time.monotonic() - started < 10
    waiting.join(timeout=10)
    first.close(), second.close()
