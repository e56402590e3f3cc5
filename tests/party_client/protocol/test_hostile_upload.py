"""A querier that starts a streamed query and never finishes it cannot stall the holder: K aborts an upload
that sends nothing for ``--upload-idle-timeout`` seconds, the holder's reader is told and moves on, and an
honest querier's join beside it finishes.  Two such uploads used to hold a holder's join lanes for as long
as the attacker kept them open (90 s in the attack; up to the session's lifetime).  The attacker holding
all the streams K allows a party (``--max-streams``) is refused one more, with "retry in N s", while the
honest join goes through."""
from __future__ import annotations

import os
import subprocess
import threading
import time

import grpc
import pytest

from linkhelpers import TEST_KEY_BITS, make_parties, make_party, party_cmd, stub_for, tables
from party_client.api import Party
from proto import linkage_pb2 as pb

IDLE = 2.0
STREAMS = 2


def one_lane_holder(server, hdir, tmp_path, seed: int):
    """A polling ``--concurrency 1`` holder of 40 rows, and an honest querier's 20 rows (8 of them shared)."""
    querier, holder = tables(seed, n=20, m=40, overlap=8)
    holder.to_csv(tmp_path / "h.csv", index=False)
    hold = subprocess.Popen(party_cmd("hold", "--dir", str(hdir), *server.flags(), "--input", str(tmp_path / "h.csv"),
                                      "--id-column", "health_no", "--poll-seconds", "1", "--concurrency", "1",
                                      "--quiet"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return hold, querier


def hostile_session(server, hostile, hname):
    """The hostile party's raw stub, its metadata and a join session it opened with the holder."""
    stub, metadata = stub_for(server, hostile)
    session = stub.OpenSession(pb.OpenSessionRequest(mode=pb.JOIN, holder=hname, key_bits=TEST_KEY_BITS),
                               metadata=metadata, timeout=60)
    return stub, metadata, session


def stalled(session, hname: str, release: threading.Event, seconds: float, stream: bool = True):
    """A query's header and first bytes, then nothing until ``release`` (at most ``seconds``)."""
    yield pb.MessageChunk(header=pb.MessageHeader(session_id=session.session_id, kind="query", recipient=hname,
                                                  stream=stream), data=b"\x00" * 64)
    release.wait(seconds)


def test_a_stalled_upload_is_aborted_and_the_holder_serves_others(fresh_keyholder, tmp_path):
    server = fresh_keyholder(extra=("--upload-idle-timeout", str(IDLE), "--max-streams", str(STREAMS)))
    (hostile, hostile_name), (honest, _), (hdir, hname) = (make_party(server, tmp_path) for _ in range(3))
    hold, querier = one_lane_holder(server, hdir, tmp_path, 31)
    stub, metadata, session = hostile_session(server, hostile, hname)
    release = threading.Event()
    outcome: dict = {}

    def upload():
        started = time.monotonic()
        try:
            stub.PutMessage(stalled(session, hname, release, 60), metadata=metadata, timeout=90)
            outcome["code"] = grpc.StatusCode.OK
        except grpc.RpcError as error:
            outcome["code"], outcome["details"] = error.code(), error.details()
        outcome["seconds"] = time.monotonic() - started
    attacker = threading.Thread(target=upload, daemon=True)
    try:
        attacker.start()
        silent = [stub.PutMessage.future(stalled(session, hname, release, 60, stream=False), metadata=metadata,
                                          timeout=90)
                  for _ in range(STREAMS - 1)]      # the rest of its streams: started, then silent
        time.sleep(1.0)                             # the holder has taken the stalled query into its one lane
        with pytest.raises(grpc.RpcError) as over:
            stub.PutMessage(stalled(session, hname, release, 60), metadata=metadata, timeout=10)
        assert over.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert over.value.details() == (f"{STREAMS} streams of '{hostile_name}' are already open "
                                        "(keyholder serve --max-streams): retry in 1 s")
        started = time.monotonic()
        result = Party(honest, progress=False).join(hname, querier, "hcn", key_bits=TEST_KEY_BITS, timeout=60)
        seconds = time.monotonic() - started
        attacker.join(timeout=30)
        print(f"honest join {seconds:.1f} s beside a stalled upload; the upload refused after "
              f"{outcome.get('seconds', 0):.1f} s: {outcome}")
        assert outcome["code"] == grpc.StatusCode.DEADLINE_EXCEEDED and "no data for 2 s" in outcome["details"]
        assert outcome["seconds"] < IDLE + 5
        assert result.frame["matched"].sum() >= 1 and seconds < 30
        assert all(future.exception().code() == grpc.StatusCode.DEADLINE_EXCEEDED for future in silent)
    finally:
        release.set()
        hold.terminate()
        hold.wait(timeout=30)


def test_an_unfinished_upload_holds_no_lane_of_a_one_lane_holder(fresh_keyholder, tmp_path):
    """A querier's streamed upload that never finishes (K's upload idle timeout at its default, 120 s) took
    the only lane of a ``--concurrency 1`` holder while the holder waited for its bytes, and every join at
    that holder waited with it.  Now a query still coming in is read by a reader of its own: an honest join
    at the same holder finishes in its normal time while the upload is still open."""
    server = fresh_keyholder()
    (hostile, _), (honest, _), (hdir, hname) = make_parties(server, tmp_path, 3, cli=False)
    hold, querier = one_lane_holder(server, hdir, tmp_path, 32)
    stub, metadata, session = hostile_session(server, hostile, hname)
    release = threading.Event()
    party = Party(honest, progress=False)

    def join() -> float:
        started = time.monotonic()
        result = party.join(hname, querier, "hcn", key_bits=TEST_KEY_BITS, timeout=60)
        assert result.frame["matched"].sum() >= 1
        return time.monotonic() - started
    try:
        quiet = join()
        upload = stub.PutMessage.future(stalled(session, hname, release, 90), metadata=metadata, timeout=120)
        time.sleep(1.5)                             # the holder has found the query coming in and reads it
        beside = join()
        print(f"honest join alone {quiet:.1f} s, beside an unfinished upload {beside:.1f} s "
              f"(load {os.getloadavg()[0]:.1f})")
        assert not upload.done()                    # the upload is still open: the holder is still reading it
        assert beside < max(3 * quiet, quiet + 5)
    finally:
        release.set()
        hold.terminate()
        hold.wait(timeout=30)
