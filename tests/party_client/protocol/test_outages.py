"""Key-holder outages, misconfigured TLS and querier crashes, with real key holder processes and the
real ``party`` CLI: retries count from the last contact, a key holder never reached or a failed TLS
handshake fails fast with a one-line hint, waits are announced, and a re-run resumes a round."""
from __future__ import annotations

import socket
import subprocess
import threading
import time

import pandas as pd
import pytest

from linkhelpers import REPRESENTATIVE, TEST_KEY_BITS, free_port, keyholder_cmd, make_party, party_cmd, run_party, \
    scheme_flags
from party_client.identity import PartyDir
from party_client.transport import FIRST_CONTACT_SECONDS, RETRY_WINDOW_SECONDS, Contact, RetryPolicy, speaks_tls
from party_client.waiting import Notice, human_seconds
from linkhelpers import FakeClock, canonical, plaintext_join, relayed, tables


def test_retry_window_counts_from_the_last_contact():
    policy = RetryPolicy(window=20.0, first_contact=3.0)
    clock = FakeClock()
    contact = Contact(clock)
    contact.attempt()                          # first call at t=0: never reached yet
    assert contact.last() is None and policy.deadline(contact.last(), contact.first_attempt) == 3.0
    contact.heard()                            # a reply at t=0, then a long poll in flight on a live channel
    contact.channel(True)
    clock.now = 15.0                           # the key holder dies 15 s into the call
    contact.channel(False)
    clock.now = 30.0                           # 30 s after the call started: still within 20 s of the contact
    assert contact.last() == 15.0
    assert policy.deadline(contact.last(), contact.first_attempt) == 35.0
    contact.timed_out()                        # a timed-out call: a live channel alone no longer counts
    contact.channel(True)
    clock.now = 50.0
    assert contact.last() == 15.0
    contact.heard()
    assert contact.last() == 50.0


def test_backoff_is_exponential_capped_and_jittered():
    policy = RetryPolicy(window=600.0)
    assert FIRST_CONTACT_SECONDS <= 30 and RETRY_WINDOW_SECONDS == 600
    assert [policy.delay(n, lambda: 1.0) for n in (1, 2, 3, 4, 10)] == [0.25, 0.5, 1.0, 2.0, 5.0]
    assert policy.delay(3, lambda: 0.0) == 0.5
    assert RetryPolicy(window=20.0).max_delay == 2.0


def test_wait_notices_are_throttled():
    clock, lines = FakeClock(), []
    notice = Notice(lines.append, clock=clock)
    for t in (0.0, 1.0, 2.5, 5.0, 12.0, 13.0):
        clock.now = t
        notice.say("holder", 0.0, f"t={t}")
    assert lines == ["t=2.5", "t=13.0"]


def test_wait_notices_back_off_to_every_five_minutes():
    # the defect: a line every 10 s, 60 lines for a 10-minute wait. Now 10 s, 30 s, 1 min, then every 5 min
    clock, lines = FakeClock(), []
    notice = Notice(lines.append, clock=clock)
    for t in range(0, 1801):
        clock.now = float(t)
        notice.say("holder", 0.0, str(t))
    assert lines == ["2", "12", "42", "102", "402", "702", "1002", "1302", "1602"]
    assert len([x for x in lines if int(x) <= 600]) == 5
    clock.now = 2000.0
    notice.say("holder", 1990.0, "new wait")  # a new wait starts the backoff again
    clock.now = 2013.0
    notice.say("holder", 1990.0, "new wait, 10 s on")
    assert lines[-2:] == ["new wait", "new wait, 10 s on"]
    assert human_seconds(580) == "9 min 40 s" and human_seconds(3540) == "59 min" and human_seconds(28.4) == "28 s"


def test_insecure_client_against_tls_key_holder_fails_fast_naming_tls(keyholder, tmp_path):
    run_party("init", "--dir", str(tmp_path / "p"), "--name", "plainclient")
    started = time.monotonic()
    result = run_party("register", "--dir", str(tmp_path / "p"), "--keyholder", keyholder.address, "--insecure",
                       check=False)
    elapsed = time.monotonic() - started
    assert result.returncode == 2 and elapsed < 5, (elapsed, result.stderr)
    assert len(result.stderr.strip().splitlines()) == 1 and "TLS" in result.stderr and "--insecure" in result.stderr


def test_client_certificate_from_another_ca_fails_fast_naming_tls(keyholder, tmp_path):
    other = tmp_path / "otherca"
    subprocess.run(keyholder_cmd("pki", "init", "--tls-dir", str(other)), check=True, capture_output=True)
    run_party("init", "--dir", str(tmp_path / "p"), "--name", "stranger")
    subprocess.run(keyholder_cmd("pki", "issue", "--tls-dir", str(other), "--name", "stranger", "--out",
                                 str(tmp_path / "p" / "tls")), check=True, capture_output=True)
    (tmp_path / "p" / "tls" / "ca.pem").write_bytes((keyholder.tls_dir / "ca.pem").read_bytes())
    started = time.monotonic()
    result = run_party("register", "--dir", str(tmp_path / "p"), "--keyholder", keyholder.address, check=False)
    assert result.returncode == 2 and time.monotonic() - started < 5, result.stderr
    assert "TLS" in result.stderr and "ca.pem" in result.stderr


def test_a_server_closing_at_once_is_busy_not_tls_and_the_handshake_probe_tells_them_apart(keyholder, fresh_keyholder):
    """A key holder at its connection cap closes new connections on arrival, which a plaintext client sees
    as "Socket closed", as it does a TLS key holder refusing plaintext.  Calling that a TLS problem made an
    honest party give up beside a party holding 2,000 connections; the client now asks the server itself
    (a TLS handshake, nothing checked) before it names TLS."""
    closing = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def close_on_arrival():
        while not stop.is_set():
            try:
                closing.accept()[0].close()
            except OSError:
                return
    threading.Thread(target=close_on_arrival, daemon=True).start()
    try:
        assert speaks_tls(keyholder.address) is True
        assert speaks_tls(fresh_keyholder().address) is False
        assert speaks_tls(f"127.0.0.1:{closing.getsockname()[1]}") is None
        assert speaks_tls(f"127.0.0.1:{free_port()}") is None
    finally:
        stop.set()
        closing.close()


def test_tls_client_against_plaintext_key_holder_fails_fast_naming_tls(keyholder, fresh_keyholder, tmp_path):
    plain = fresh_keyholder()
    client = make_party(keyholder, tmp_path)[0]
    started = time.monotonic()
    result = run_party("register", "--dir", str(client), "--keyholder", plain.address, check=False)
    assert result.returncode == 2 and time.monotonic() - started < 10, result.stderr
    assert "TLS" in result.stderr and "serves TLS" in result.stderr


def test_key_holder_never_reached_fails_with_its_address(tmp_path):
    address = f"127.0.0.1:{free_port()}"                  # nothing listens there
    run_party("init", "--dir", str(tmp_path / "p"), "--name", "lonely")
    started = time.monotonic()
    result = run_party("register", "--dir", str(tmp_path / "p"), "--keyholder", address, "--insecure",
                       "--connect-timeout", "3", check=False)
    elapsed = time.monotonic() - started
    assert result.returncode == 1 and 2.5 < elapsed < 10, (elapsed, result.stderr)
    assert address in result.stderr and "is it running?" in result.stderr
    assert "party: error:" in result.stderr.strip().splitlines()[-1]


def _join(server, qdir, hname, tmp_path, *extra: str, scheme: str = "paillier") -> subprocess.Popen:
    return subprocess.Popen(party_cmd("join", "--dir", str(qdir), *server.flags(), "--holder", hname,
                                      "--input", str(tmp_path / "q.csv"), "--id-column", "hcn", "--out",
                                      str(tmp_path / "j.csv"), *scheme_flags(scheme), "--quiet", *extra),
                            stderr=subprocess.PIPE, text=True)


def _hold(server, hdir, tmp_path) -> subprocess.CompletedProcess:
    return run_party("hold", "--dir", str(hdir), *server.flags(), "--input", str(tmp_path / "h.csv"),
                     "--id-column", "health_no", "--release-columns", "diagnosis", "--once", "--quiet")


def _linked_pair(server, tmp_path, seed: int):
    (qdir, _), (hdir, hname) = make_party(server, tmp_path, cli=False), make_party(server, tmp_path, cli=False)
    querier, holder = tables(seed, n=40, m=60, overlap=20)
    querier.to_csv(tmp_path / "q.csv", index=False)
    holder.to_csv(tmp_path / "h.csv", index=False)
    return qdir, hdir, hname, plaintext_join(querier, holder, ["diagnosis"])


def _audit(server) -> list[str]:
    result = subprocess.run(keyholder_cmd("audit", "--data-dir", str(server.data_dir)), capture_output=True,
                            text=True, check=True)
    return [line.split("\t")[2] for line in result.stdout.splitlines()]


def test_outage_longer_than_the_call_in_flight_allows_is_survived(fresh_keyholder, tmp_path):
    """K is killed 8.5 s into the querier's 10-s long poll and comes back 4 s later: a 12 s window
    counted from that call's start would have run out (3.5 s after the kill); counted from the last
    contact (the kill) it has not, with 8 s left for K's restart and the querier's next attempt."""
    server = fresh_keyholder()
    qdir, hdir, hname, expected = _linked_pair(server, tmp_path, 11)
    join = _join(server, qdir, hname, tmp_path, "--retry-window", "12")
    relayed(qdir)
    line = join.stderr.readline()                       # printed just before the next 10-s long poll starts
    assert "waiting for holder" in line and "to serve round 1" in line, line
    time.sleep(8.5)
    server.stop(kill=True)                              # SIGKILL during the round
    killed = time.monotonic()
    time.sleep(4.0)
    server.start()
    _hold(server, hdir, tmp_path)
    assert join.wait(timeout=120) == 0, join.stderr.read()
    assert time.monotonic() - killed < 40
    assert "unreachable" in join.stderr.read()          # the outage was announced
    joined = pd.read_csv(tmp_path / "j.csv", dtype=str, keep_default_na=False)
    assert canonical(joined) == canonical(expected)
    assert not list((qdir / "sessions").glob("*.state"))   # done: the local state is gone


@pytest.mark.parametrize("scheme", REPRESENTATIVE)
def test_querier_killed_mid_round_resumes_without_new_comparisons(fresh_keyholder, tmp_path, scheme):
    server = fresh_keyholder()
    qdir, hdir, hname, expected = _linked_pair(server, tmp_path, 12)
    join = _join(server, qdir, hname, tmp_path, scheme=scheme)
    session_id = relayed(qdir)
    assert "waiting for holder" in join.stderr.readline()   # a late holder: the wait is announced
    join.kill()                                          # kill -9 the querier
    join.wait()
    listed = run_party("sessions", "list", "--dir", str(qdir)).stdout
    assert session_id in listed and hname in listed and "round 1 relayed" in listed
    assert "served 1 round(s)" in _hold(server, hdir, tmp_path).stdout
    again = _join(server, qdir, hname, tmp_path, scheme=scheme)
    assert again.wait(timeout=120) == 0, again.stderr.read()
    assert f"resuming session {session_id} round 1" in again.stderr.read()
    joined = pd.read_csv(tmp_path / "j.csv", dtype=str, keep_default_na=False)
    assert canonical(joined) == canonical(expected)
    assert "served 0 round(s)" in _hold(server, hdir, tmp_path).stdout
    actions = _audit(server)
    assert actions.count("open_session") == 1 and actions.count("relay_query") == 1
    assert actions.count("finish_round") == 1 and actions.count("close_session") == 1
    assert session_id not in run_party("sessions", "list", "--dir", str(qdir)).stdout


def test_sessions_left_open_are_listed_and_closed(fresh_keyholder, tmp_path):
    server = fresh_keyholder()
    qdir, _, hname, _ = _linked_pair(server, tmp_path, 13)
    late = _join(server, qdir, hname, tmp_path, "--timeout", "1")
    assert late.wait(timeout=60) == 2
    message = late.stderr.read()
    assert "did not serve round 1" in message and "party sessions close" in message, message
    listed = run_party("sessions", "list", "--dir", str(qdir)).stdout.splitlines()
    assert listed[0].split("\t") == ["id", "holder", "mode", "round", "status", "created", "at key holder"]
    assert len(listed) == 2 and listed[1].split("\t")[1:4] == [hname, "join", "1"]
    assert listed[1].split("\t")[6] == "open"                  # read from the key holder
    unknown = run_party("sessions", "close", "--dir", str(qdir), *server.flags(), "nosuchsession", check=False)
    assert unknown.returncode == 2 and "nosuchsession" in unknown.stderr
    closed = run_party("sessions", "close", "--dir", str(qdir), *server.flags(), "--all")
    assert "closed 1 session(s)" in closed.stdout
    assert len(run_party("sessions", "list", "--dir", str(qdir)).stdout.splitlines()) == 1
    assert _audit(server).count("close_session") == 1


def test_a_relayed_message_resumes_where_the_stream_stopped(fresh_keyholder, tmp_path):
    """K is killed after the first chunk of a 32 MB message reached the holder; the stream restarts
    once K is back and the holder gets every byte exactly once."""
    import os
    import threading

    from party_client.transport import Connection
    from proto import linkage_pb2 as pb
    server = fresh_keyholder()
    (qdir, _), (hdir, hname) = make_party(server, tmp_path, cli=False), make_party(server, tmp_path, cli=False)
    payload = os.urandom(32 << 20)     # more than gRPC buffers ahead (its flow-control window grows to a few MB)
    with Connection(PartyDir.load(qdir), server.address, insecure=True) as querier:
        session = querier.call("OpenSession", pb.OpenSessionRequest(mode=pb.JOIN, holder=hname,
                                                                   key_bits=TEST_KEY_BITS))
        header = pb.MessageChunk(header=pb.MessageHeader(session_id=session.session_id, kind="query",
                                                         recipient=hname))
        info = querier.upload("PutMessage", lambda: iter([header] + [pb.MessageChunk(data=payload[i:i + 65536], last=i + 65536 >= len(payload))
                                                                    for i in range(0, len(payload), 65536)]))
    with Connection(PartyDir.load(hdir), server.address, insecure=True, retry_window=30) as holder:
        calls = []
        original = holder.stub.GetMessage
        holder.stub.GetMessage = lambda *args, **kwargs: calls.append(1) or original(*args, **kwargs)   # counted
        chunks = holder.stream("GetMessage", pb.MessageRef(message_id=info.message_id),
                               split=lambda message: [message.data], length=len)
        received = bytearray(next(chunks))
        assert 0 < len(received) < len(payload)
        server.stop(kill=True)
        threading.Timer(2.0, server.start).start()
        for chunk in chunks:
            received += chunk
    assert bytes(received) == payload
    assert len(calls) >= 2                                # the stream was restarted
