"""A session opened under a scheme since retired (``ec``; docs/protocol.md, "Comparison schemes"), as a
key holder of an earlier version stored it, against the real ``keyholder serve`` and ``party`` CLIs: K
refuses its query in one gRPC status saying how to go on, the holder refuses its round with the same
line, the querier's lookup registry that names it lists and closes it, and the retired name is
refused in one line wherever it is typed."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import time

import grpc
import pandas as pd

from common.schemes import RetiredScheme
from keyholder.store import STORE_FILE
from linkhelpers import keyholder_cmd, make_party, run_party, stub_for
from proto import linkage_pb2 as pb


def _query(session_id: str, holder: str) -> list[pb.MessageChunk]:
    return [pb.MessageChunk(header=pb.MessageHeader(session_id=session_id, kind="query", recipient=holder),
                            data=b"sealed bytes K cannot open", last=True)]


def _one_line(result: subprocess.CompletedProcess, expected: str) -> None:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert expected in lines[0], lines[0]


def test_a_stored_ec_session_is_refused_in_one_line_and_closed(fresh_keyholder, tmp_path):
    server = fresh_keyholder()
    (qdir, _), (hdir, hname) = make_party(server, tmp_path, cli=False), make_party(server, tmp_path)
    q, qmeta = stub_for(server, qdir)
    opened = [q.OpenSession(pb.OpenSessionRequest(mode=pb.JOIN, holder=hname, scheme="ristretto"), metadata=qmeta)
              for _ in range(2)]
    relayed, lookup = (session.session_id for session in opened)
    q.PutMessage(iter(_query(relayed, hname)), metadata=qmeta)     # a query relayed before the upgrade
    server.stop()
    with sqlite3.connect(server.data_dir / STORE_FILE) as db:       # as an earlier version stored them
        db.execute("UPDATE sessions SET scheme = 'ec'")
    db.close()
    server.start()
    q, qmeta = stub_for(server, qdir)

    try:                                                             # K: no query into such a session
        q.PutMessage(iter(_query(lookup, hname)), metadata=qmeta)
        raise AssertionError("the query was accepted")
    except grpc.RpcError as error:
        assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert error.details() == RetiredScheme("ec").of_session(lookup) == (
            f"session {lookup} uses the comparison scheme 'ec', no longer offered: close it "
            f"(party sessions close {lookup}) and link again with --scheme ristretto")

    pd.DataFrame({"hcn": ["000001"]}).to_csv(tmp_path / "h.csv", index=False)
    served = run_party("hold", "--dir", str(hdir), *server.flags(), "--input", str(tmp_path / "h.csv"),
                       "--id-column", "hcn", "--once", "--quiet")           # the holder refuses the round
    assert json.loads(served.stdout.splitlines()[1])["refused"] == RetiredScheme("ec").of_session(relayed)
    assert q.WaitRound(pb.WaitRoundRequest(session_id=relayed, round=1), metadata=qmeta).status == pb.ABORTED

    now = time.time()                                                # the querier's lookup registry names one
    (qdir / "lookups").mkdir(exist_ok=True)
    (qdir / "lookups" / "sessions.json").write_text(json.dumps({
        "sessions": {lookup: {"session_id": lookup, "secret": "00" * 32, "buckets": 16, "key_bits": 0,
                              "expires_at": now + 3600, "scheme": "ec", "holder": hname, "created": now}},
        "current": {hname: lookup}, "users": {}}))
    listed = run_party("sessions", "list", "--dir", str(qdir), *server.flags()).stdout
    assert f"{lookup}\t{hname}\tlookup\t0\tretired (closed once unused)" in listed and "\topen" in listed
    closed = run_party("sessions", "close", "--all", "--dir", str(qdir), *server.flags()).stdout
    assert lookup in closed
    try:
        q.GetSession(pb.SessionRef(session_id=lookup), metadata=qmeta)
        raise AssertionError("the session is still open")
    except grpc.RpcError as error:
        assert error.details() == f"session {lookup} is closed"

    retired = "the comparison scheme 'ec' is no longer offered: use ristretto"   # typed: one line, exit 2
    _one_line(run_party("join", "--dir", str(qdir), *server.flags(), "--holder", hname, "--input",
                        str(tmp_path / "h.csv"), "--id-column", "hcn", "--out", str(tmp_path / "o.csv"),
                        "--scheme", "ec", check=False), retired)
    _one_line(run_party("hold", "--dir", str(hdir), *server.flags(), "--input", str(tmp_path / "h.csv"),
                        "--id-column", "hcn", "--schemes", "paillier,ec", check=False), retired)
    _one_line(subprocess.run(keyholder_cmd("serve", "--data-dir", str(tmp_path / "never"), "--listen",
                                           "127.0.0.1:0", "--insecure", "--schemes", "paillier,ec"),
                             capture_output=True, text=True), retired)
    assert "Traceback" not in server.log_path.read_text()
