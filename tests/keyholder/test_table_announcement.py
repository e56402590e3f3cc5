"""A holder announces its table size to K as it polls for work (``ListWork``), and K hands it out with
the holder's key (``GetParty``) for queriers to size lookup buckets (docs/protocol.md, "Lookup"):
checked, kept across restarts and re-registrations, audited when it changes; a data directory from
before announcements opens and serves.  Real ``keyholder serve`` processes."""
from __future__ import annotations

import os
import sqlite3
import subprocess

import grpc
import pytest

from keyholder.core import token_digest
from keyholder.store import STORE_FILE
from linkhelpers import keyholder_cmd, start_keyholder
from proto import linkage_pb2 as pb
from proto import linkage_pb2_grpc as pb_grpc

# The parties table as the first release made it: no table size
FIRST_RELEASE_PARTIES = """CREATE TABLE parties (
    name TEXT PRIMARY KEY, x25519 BLOB NOT NULL, fingerprint TEXT NOT NULL,
    token_sha256 TEXT NOT NULL UNIQUE, registered_at REAL NOT NULL)"""


def register(stub, name: str, token: str | None = None) -> list[tuple[str, str]]:
    metadata = [("authorization", f"Bearer {token}")] if token else []
    token = stub.Register(pb.RegisterRequest(name=name, x25519_public_key=os.urandom(32)), metadata=metadata,
                          timeout=10).token
    return [("authorization", f"Bearer {token}")]


def announced(server) -> list[tuple[str, str]]:
    lines = subprocess.run(keyholder_cmd("audit", "--data-dir", str(server.data_dir)), capture_output=True,
                           text=True, check=True).stdout.splitlines()[1:]
    return [(row[1], row[5]) for row in (line.split("\t") for line in lines) if row[2] == "announce_table"]


def test_a_holder_announces_its_table_size_to_queriers(fresh_keyholder):
    server = fresh_keyholder()
    stub = pb_grpc.KeyHolderStub(grpc.insecure_channel(server.address))
    holder, querier = register(stub, "h"), register(stub, "q")

    def table_rows() -> int:
        return stub.GetParty(pb.GetPartyRequest(name="h"), metadata=querier, timeout=10).table_rows

    def poll(rows: int) -> None:
        stub.ListWork(pb.ListWorkRequest(wait_seconds=0, table_rows=rows), metadata=holder, timeout=10)
    assert table_rows() == 0                                     # never served
    for rows in (16_384, 16_384, 0):                             # 0: no announcement, the last one stands
        poll(rows)
    assert table_rows() == 16_384
    poll(23_171)
    assert table_rows() == 23_171
    assert announced(server) == [("h", "16384"), ("h", "23171")]     # audited when it changes only
    with pytest.raises(grpc.RpcError) as refused:
        poll((1 << 40) + 1)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "table_rows" in refused.value.details()
    holder = register(stub, "h", holder[0][1].split()[1])        # renewing the token keeps the size
    assert table_rows() == 23_171
    server.stop()
    server.start()
    assert table_rows() == 23_171


def test_a_data_dir_from_before_announcements_serves(tmp_path):
    """A store whose parties table has no table size column: K adds it at start-up, the registered
    party keeps its token and key, and its announcements are kept."""
    data = tmp_path / "kh" / "data"
    data.mkdir(parents=True)
    old = sqlite3.connect(data / STORE_FILE)
    token, key = "an-old-token", os.urandom(32)
    with old:
        old.execute(FIRST_RELEASE_PARTIES)
        old.execute("INSERT INTO parties VALUES (?, ?, ?, ?, strftime('%s', 'now'))",
                    ("h", key, "fp", token_digest(token)))
    old.close()
    server = start_keyholder(tmp_path / "kh", tls=False)
    try:
        stub = pb_grpc.KeyHolderStub(grpc.insecure_channel(server.address))
        holder = [("authorization", f"Bearer {token}")]
        found = stub.GetParty(pb.GetPartyRequest(name="h"), metadata=holder, timeout=10)
        assert (found.x25519_public_key, found.table_rows) == (key, 0)
        stub.ListWork(pb.ListWorkRequest(wait_seconds=0, table_rows=1_024), metadata=holder, timeout=10)
        assert stub.GetParty(pb.GetPartyRequest(name="h"), metadata=holder, timeout=10).table_rows == 1_024
    finally:
        server.stop()
