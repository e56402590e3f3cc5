"""A party cannot take the connections (file descriptors) every other party needs.  Under ``ulimit -n 1024``
a party that opened 1,100 streams on connections of their own ran K out of descriptors, and an honest party
could not connect.  Now K accepts at most ``--max-connections`` connections (below its descriptor limit;
more are closed on arrival), a party's calls on more than ``--max-connections-party`` connections at once
are refused, and a connection left without a call is closed after ``--connection-idle-timeout``
(:mod:`keyholder.connections`)."""
from __future__ import annotations

import os
import resource
import threading
import time

import grpc
import pytest

from keyholder.connections import Connections
from keyholder.errors import ServiceError
from linkhelpers import TEST_KEY_BITS, FakeClock, canonical, make_parties, plaintext_join, serve_and_join, stub_for, tables
from proto import linkage_pb2 as pb
from proto import linkage_pb2_grpc as pb_grpc

STREAMS = 2000
NOFILE = 1024
PER_PARTY = 32
IDLE = 2.0


def test_a_party_uses_at_most_its_connections_and_an_idle_one_is_given_back():
    clock = FakeClock()
    connections = Connections(2, idle=30.0, flag="keyholder serve --max-connections-party", clock=clock)
    a, b, c = (connections.call(f"ipv4:127.0.0.1:{port}") for port in (1001, 1002, 1003))
    a.enter("p")
    b.enter("p")
    connections.call("ipv4:127.0.0.1:1001").enter("p")          # a second call on a connection in use
    connections.call("ipv4:127.0.0.1:1003").enter("q")          # another party's calls count for it alone
    with pytest.raises(ServiceError) as refused:
        c.enter("p")
    assert refused.value.code == "RESOURCE_EXHAUSTED"
    assert str(refused.value) == ("2 connections of 'p' are already in use (keyholder serve "
                                  "--max-connections-party): retry in 1 s")
    b.end()
    clock.now = 29.0                                            # ended, but not yet closed by the server
    with pytest.raises(ServiceError):
        connections.call("ipv4:127.0.0.1:1004").enter("p")
    clock.now = 30.0
    connections.call("ipv4:127.0.0.1:1004").enter("p")
    assert connections.in_use("p") == 2 and connections.in_use("q") == 1


def test_a_call_over_before_it_entered_never_holds_its_connection():
    connections = Connections(1, idle=30.0)
    call = connections.call("ipv4:127.0.0.1:1001")
    call.end()                    # cancelled while it was being authenticated
    call.enter("p")
    call.end()
    assert connections.in_use("p") == 0


def stalled(session, hname: str, release: threading.Event):
    yield pb.MessageChunk(header=pb.MessageHeader(session_id=session.session_id, kind="query", recipient=hname),
                          data=b"\x00" * 64)
    release.wait(120)


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_2000_streams_of_one_party_leave_an_honest_join_its_connection(fresh_keyholder, tmp_path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 3 * STREAMS:                                        # the attacker's own 2,000 sockets
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4 * STREAMS), hard))
    server = fresh_keyholder(extra=("--max-connections-party", str(PER_PARTY),
                                    "--connection-idle-timeout", str(IDLE)), nofile=NOFILE)
    (hostile, hostile_name), (honest, _), (hdir, hname) = make_parties(server, tmp_path, 3, cli=False)
    stub, metadata = stub_for(server, hostile)
    session = stub.OpenSession(pb.OpenSessionRequest(mode=pb.JOIN, holder=hname, key_bits=TEST_KEY_BITS),
                               metadata=metadata, timeout=60)
    release = threading.Event()
    channels, calls, most = [], [], 0
    try:
        for _ in range(STREAMS):                                  # each stream on a connection of its own
            channel = grpc.insecure_channel(server.address, options=[("grpc.use_local_subchannel_pool", 1)])
            calls.append(pb_grpc.KeyHolderStub(channel).PutMessage.future(
                stalled(session, hname, release), metadata=metadata, timeout=120))
            channels.append(channel)
            if len(calls) % 200 == 0:
                most = max(most, descriptors(server.process.pid))
        time.sleep(1.0)
        most = max(most, descriptors(server.process.pid))
        querier, holder = tables(61, n=40, m=60, overlap=20)
        started = time.monotonic()
        joined = serve_and_join(honest, hdir, hname, querier, holder,
                                holder={"id_column": "health_no", "release_columns": ["diagnosis"]},
                                join={"id_column": "hcn", "key_bits": TEST_KEY_BITS, "timeout": 120})
        seconds = time.monotonic() - started
        most = max(most, descriptors(server.process.pid))
        outcomes: dict = {}
        for call in calls:
            if call.done():
                code = call.exception().code() if call.exception() else grpc.StatusCode.OK
                outcomes[code] = outcomes.get(code, 0) + 1
        print(f"honest join {seconds:.1f} s beside {STREAMS} streams of one party; K's descriptors at most "
              f"{most} of {NOFILE}; the attacker's calls: {outcomes} (load {os.getloadavg()[0]:.1f})")
        assert canonical(joined.frame) == canonical(plaintext_join(querier, holder, ["diagnosis"]))
        assert most < NOFILE - 64
        assert "File descriptor limit" not in server.log_path.read_text()
        refused = [c.exception() for c in calls if c.done() and c.exception() is not None
                   and c.exception().code() == grpc.StatusCode.RESOURCE_EXHAUSTED]
        assert refused and {e.details() for e in refused} == {
            f"{PER_PARTY} connections of '{hostile_name}' are already in use (keyholder serve "
            "--max-connections-party): retry in 1 s"}
        assert outcomes.get(grpc.StatusCode.UNAVAILABLE, 0) > 0   # connections beyond K's cap closed on arrival
    finally:
        release.set()
        for channel in channels:
            channel.close()
