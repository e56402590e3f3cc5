"""Back-pressure is waited out, not taken for a refusal: a party client whose OpenSession finds its key
queue full waits the "retry in N s" the key holder names and says so; a holder whose round is refused
on the way with a transient status serves the round again at a later poll (before, the round stayed
pending until ``party hold`` was restarted)."""
from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor

import grpc

from linkhelpers import canonical, make_parties, plaintext_join, tables
from party_client import Party
from party_client.identity import PartyDir
from party_client.transport import Connection, KeyHolderRefusal
from party_client.waiting import Notice
from proto import linkage_pb2 as pb


def test_a_full_key_queue_is_waited_out(fresh_keyholder, tmp_path):
    server = fresh_keyholder(extra=("--keygen-queue", "1", "--keygen-workers", "1"))
    (qdir, _), (_, hname) = make_parties(server, tmp_path, 2, cli=False)
    said: list[str] = []
    connection = Connection(PartyDir.load(qdir), server.address, insecure=True,
                            notice=Notice(sink=said.append, first_after=0.0))
    request = pb.OpenSessionRequest(mode=pb.JOIN, holder=hname, key_bits=2048)
    try:
        with ThreadPoolExecutor(4) as pool:
            sessions = list(pool.map(lambda _: connection.call("OpenSession", request, timeout=120), range(4)))
    finally:
        connection.close()
    assert len({s.session_id for s in sessions}) == 4
    assert any("asks to wait before OpenSession" in line and "key generations of" in line
               and "retry in" in line for line in said), said


def test_a_round_refused_on_the_way_is_served_again(fresh_keyholder, tmp_path, caplog):
    server = fresh_keyholder()
    (qdir, _), (hdir, hname) = make_parties(server, tmp_path, 2, cli=False)
    querier, holder = tables(45, n=60, m=200, overlap=30)
    serving = Party(hdir, progress=False).prepare_holder(holder, "health_no", ["diagnosis"])
    serving.options.batch_rows = 32
    original = serving.connection.call
    refused: list[int] = []

    def call(method, request, timeout=60.0, patient=True):
        if method == "SubmitComparisons" and request.seq == 2 and not refused:
            refused.append(request.seq)       # as if back-pressure outlasted the retry window
            raise KeyHolderRefusal("key holder refused (RESOURCE_EXHAUSTED): busy: retry in 1 s",
                                   grpc.StatusCode.RESOURCE_EXHAUSTED.name)
        return original(method, request, timeout, patient)
    serving.connection.call = call
    caplog.set_level(logging.WARNING, logger="party")
    stop = threading.Event()
    thread = threading.Thread(target=serving.serve, kwargs={"once": False, "poll_seconds": 0.5, "stop": stop.is_set},
                              daemon=True)
    thread.start()
    try:
        result = Party(qdir, progress=False).join(hname, querier, "hcn", scheme="ristretto", timeout=120)
    finally:
        stop.set()
        thread.join(timeout=30)
    assert refused == [2]
    assert canonical(result.frame) == canonical(plaintext_join(querier, holder, ["diagnosis"]))
    assert "not served yet" in caplog.text and "serving it again in 1 s (attempt 2)" in caplog.text
