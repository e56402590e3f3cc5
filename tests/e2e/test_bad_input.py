"""Bad input gets a clear error and loses nothing: CLIs exit 2 with one line,
the service answers with a gRPC status and message, no partial output is
written and no input is modified."""
from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path

import grpc
import pandas as pd
import pytest

from linkhelpers import TEST_KEY_BITS, keyholder_cmd, make_party, run_party
from proto import linkage_pb2 as pb
from linkhelpers import stub_for


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def one_line_error(result: subprocess.CompletedProcess, expected: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert expected.lower() in lines[0].lower(), lines[0]


@pytest.fixture
def querier_setup(keyholder, tmp_path):
    (qdir, _), (_, hname) = make_party(keyholder, tmp_path), make_party(keyholder, tmp_path)
    good = tmp_path / "good.csv"
    pd.DataFrame({"hcn": ["1", "2"], "x": ["a", "b"]}).to_csv(good, index=False)

    def query(*extra: str, input_path: Path = good, mode: str = "join", out: Path | None = None):
        out = out or tmp_path / "out.csv"
        before = digest(input_path) if input_path.exists() else None
        result = run_party(mode, "--dir", str(qdir), *keyholder.flags(), "--holder", hname, "--input",
                           str(input_path), "--out", str(out), "--key-bits", str(TEST_KEY_BITS),
                           "--timeout", "5", "--quiet", *extra, check=False)
        if before is not None:
            assert digest(input_path) == before, "the input was modified"
        assert not out.exists(), "a failed run wrote an output"
        assert not list(out.parent.glob("*.partial")), "a partial output was left behind"
        return result
    return query, tmp_path, hname


def test_cli_input_errors(querier_setup):
    query, folder, hname = querier_setup
    empty = folder / "empty.csv"
    empty.write_text("")
    garbage = folder / "garbage.csv"
    garbage.write_bytes(b"\xff\xfe\x00\x01binary\x00\x00")
    ragged = folder / "ragged.csv"
    ragged.write_text('hcn,x\n1,"unterminated\n2,b,c,d\n')
    one_line_error(query("--id-column", "hcn", input_path=empty), "empty")
    one_line_error(query("--id-column", "hcn", input_path=garbage), "")
    one_line_error(query("--id-column", "hcn", input_path=ragged), "cannot read")
    one_line_error(query("--id-column", "nope"), "id column(s) nope not in the input")
    one_line_error(query("--id-column", "hcn", input_path=folder / "missing.csv"), "does not exist")
    one_line_error(query("--id-column", "hcn", out=folder / "no-such-dir" / "o.csv"), "output folder")
    one_line_error(query("--id-column", "hcn", "--key-bits", "1000"), "key size 1000 not allowed")
    one_line_error(query("--id-column", "hcn", "--population", "1000", "--buckets", "900", mode="lookup"),
                   "above the threshold")
    one_line_error(query("--id-column", "hcn", "--population", "1000", "--max-risk", "1.5", mode="lookup"),
                   "--max-risk")
    one_line_error(query("--id-column", "hcn", "--bogus-flag"), "unrecognized arguments")


def test_cli_refusals_from_the_key_holder(keyholder, querier_setup, tmp_path):
    query, folder, _ = querier_setup
    result = run_party("join", "--dir", str(folder / "party-missing"), *keyholder.flags(), "--holder", "x",
                       "--input", str(folder / "good.csv"), "--id-column", "hcn", "--out",
                       str(folder / "o.csv"), check=False)
    one_line_error(result, "not a party directory")
    lone = folder / "lone"
    run_party("init", "--dir", str(lone), "--name", "lone-party")
    subprocess.run(keyholder_cmd("pki", "issue", "--tls-dir", str(keyholder.tls_dir), "--name", "lone-party",
                                 "--out", str(lone / "tls")), check=True, capture_output=True)
    result = run_party("dedup", "--dir", str(lone), *keyholder.flags(), "--holder", "x", "--input",
                       str(folder / "good.csv"), "--id-column", "hcn", "--out", str(folder / "o.csv"), check=False)
    one_line_error(result, "unauthenticated")                                  # not registered
    (qdir, _), = [make_party(keyholder, tmp_path)]
    result = run_party("join", "--dir", str(qdir), *keyholder.flags(), "--holder", "nobody", "--input",
                       str(folder / "good.csv"), "--id-column", "hcn", "--out", str(folder / "o.csv"), check=False)
    one_line_error(result, "party 'nobody' is not registered")
    result = run_party("init", "--dir", str(qdir), "--name", "again", check=False)
    one_line_error(result, "already holds a party")


def test_keyholder_cli_errors(tmp_path):
    def serve(*args):
        return subprocess.run(keyholder_cmd("serve", "--data-dir", str(tmp_path / "d"), *args),
                              capture_output=True, text=True, timeout=60)
    one_line_error(serve("--listen", "0.0.0.0:0", "--insecure"), "refused on the non-loopback address")
    one_line_error(serve("--listen", "127.0.0.1:0"), "choose --tls-dir")
    one_line_error(serve("--listen", "127.0.0.1:0", "--tls-dir", str(tmp_path / "none")), "lacks")
    one_line_error(serve("--listen", "nonsense", "--insecure"), "HOST:PORT")
    (tmp_path / "a file").write_text("kept")
    one_line_error(subprocess.run(keyholder_cmd("serve", "--data-dir", str(tmp_path / "a file"), "--listen",
                                                "127.0.0.1:0", "--insecure"), capture_output=True, text=True,
                                  timeout=60), "is a file, not a folder")
    assert (tmp_path / "a file").read_text() == "kept"
    (tmp_path / "pass").write_text("one")
    first = subprocess.Popen(keyholder_cmd("serve", "--data-dir", str(tmp_path / "d2"), "--listen",
                                           "127.0.0.1:0", "--insecure", "--passphrase-file", str(tmp_path / "pass")),
                             stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    first.terminate()
    first.wait(timeout=20)
    (tmp_path / "pass").write_text("two")
    one_line_error(subprocess.run(keyholder_cmd("serve", "--data-dir", str(tmp_path / "d2"), "--listen",
                                                "127.0.0.1:0", "--insecure", "--passphrase-file",
                                                str(tmp_path / "pass")), capture_output=True, text=True),
                   "passphrase does not open")


def test_unknown_schemes_are_refused_in_one_line(querier_setup, tmp_path):
    """``--scheme``/``--schemes`` with an unknown name: exit 2, one line naming it, nothing written."""
    query, folder, hname = querier_setup
    one_line_error(query("--id-column", "hcn", "--scheme", "rsa"), "invalid choice: 'rsa'")
    one_line_error(query("--id-column", "hcn", "--scheme", "ristretto", "--key-bits", "2048"),
                   "key size 2048 not allowed with the ristretto scheme")
    one_line_error(run_party("hold", "--dir", str(folder / "nobody"), "--input", str(folder / "good.csv"),
                             "--id-column", "hcn", "--schemes", "paillier,rsa", check=False),
                   "unknown comparison scheme 'rsa'")
    data_dir = tmp_path / "never"
    one_line_error(subprocess.run(keyholder_cmd("serve", "--data-dir", str(data_dir), "--listen", "127.0.0.1:0",
                                                "--insecure", "--schemes", "ristretto,rsa"),
                                  capture_output=True, text=True, env={**os.environ, "KEYHOLDER_PASSPHRASE": "x"}),
                   "unknown comparison scheme 'rsa'")
    assert not data_dir.exists()


def test_a_key_holder_refuses_a_scheme_it_does_not_offer(fresh_keyholder, tmp_path):
    server = fresh_keyholder(extra=("--schemes", "ristretto"))
    (qdir, _), (_, hname) = make_party(server, tmp_path, cli=False), make_party(server, tmp_path, cli=False)
    q, qmeta = stub_for(server, qdir)
    for scheme in ("", "paillier"):
        with pytest.raises(grpc.RpcError) as caught:
            q.OpenSession(pb.OpenSessionRequest(mode=pb.JOIN, holder=hname, key_bits=TEST_KEY_BITS, scheme=scheme),
                          metadata=qmeta)
        assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "does not offer the paillier scheme (it offers: ristretto)" in caught.value.details()
    assert q.OpenSession(pb.OpenSessionRequest(mode=pb.JOIN, holder=hname, scheme="ristretto"), metadata=qmeta).scheme == "ristretto"


def test_service_errors_carry_status_and_message(fresh_keyholder, tmp_path):
    server = fresh_keyholder(extra=("--max-message-mb", "1"))
    (qdir, _), (hdir, hname) = make_party(server, tmp_path, cli=False), make_party(server, tmp_path, cli=False)
    q, qmeta = stub_for(server, qdir)
    h, hmeta = stub_for(server, hdir)

    def status(call):
        with pytest.raises(grpc.RpcError) as caught:
            call()
        return caught.value.code(), caught.value.details()

    code, details = status(lambda: q.GetSession(pb.SessionRef(session_id="nope"), metadata=qmeta))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "session_id" in details
    code, details = status(lambda: q.GetSession(pb.SessionRef(session_id="0" * 32), metadata=qmeta))
    assert code == grpc.StatusCode.NOT_FOUND and "no session" in details
    code, details = status(lambda: q.OpenSession(pb.OpenSessionRequest(mode=pb.MODE_UNSPECIFIED, holder=hname),
                                                 metadata=qmeta))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    session = q.OpenSession(pb.OpenSessionRequest(mode=pb.JOIN, holder=hname, key_bits=TEST_KEY_BITS),
                            metadata=qmeta)
    header = pb.MessageHeader(session_id=session.session_id, kind="query", recipient=hname)
    big = [pb.MessageChunk(header=header)] + [pb.MessageChunk(data=b"x" * (1 << 19), last=i == 2) for i in range(3)]
    code, details = status(lambda: q.PutMessage(iter(big), metadata=qmeta))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than" in details
    assert not list((server.data_dir / "spool").rglob("*.partial"))
    code, _ = status(lambda: h.PutMessage(iter([pb.MessageChunk(header=pb.MessageHeader(
        session_id=session.session_id, kind="query", recipient=hname), data=b"x", last=True)]), metadata=hmeta))
    assert code == grpc.StatusCode.PERMISSION_DENIED                         # wrong role
    message = q.PutMessage(iter([pb.MessageChunk(header=header, data=b"sealed", last=True)]), metadata=qmeta)
    width = 2 * TEST_KEY_BITS // 8
    n = int.from_bytes(session.public_key, "big")
    for bad in (0, n * n, n * n + 1):
        batch = pb.ComparisonBatch(session_id=session.session_id, round=message.round, seq=0,
                                   ciphertexts=(bad % (1 << (8 * width))).to_bytes(width, "big"),
                                   row_comparisons=[1], attachments=[b"a"])
        code, details = status(lambda: h.SubmitComparisons(batch, metadata=hmeta))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "outside Z*" in details
    batch = pb.ComparisonBatch(session_id=session.session_id, round=message.round, seq=0,
                               ciphertexts=b"\x01" * width * 2, row_comparisons=[1], attachments=[b"a"])
    code, details = status(lambda: h.SubmitComparisons(batch, metadata=hmeta))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "expected 1 ciphertexts" in details
    huge = pb.ComparisonBatch(session_id=session.session_id, round=message.round, seq=0,
                              ciphertexts=b"", row_comparisons=[70000], attachments=[b"a"])
    assert status(lambda: h.SubmitComparisons(huge, metadata=hmeta))[0] == grpc.StatusCode.RESOURCE_EXHAUSTED
    code, details = status(lambda: h.FinishRound(pb.FinishRoundRequest(
        session_id=session.session_id, round=message.round, batches=2), metadata=hmeta))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "missing" in details
    short = q.OpenSession(pb.OpenSessionRequest(mode=pb.DEDUP, holder=hname, key_bits=TEST_KEY_BITS,
                                                ttl_seconds=1), metadata=qmeta)
    time.sleep(1.5)
    code, details = status(lambda: q.GetSession(pb.SessionRef(session_id=short.session_id), metadata=qmeta))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "expired" in details


@pytest.mark.parametrize("date_format", ["%Q%%%", "%d/%m/%Y%", "%d{x}%"])
def test_a_date_format_that_is_none_is_refused_in_one_line(tmp_path, date_format):
    """A ``--date-format`` pandas cannot read dates in (a bad directive, a stray ``%``): exit 2, one line
    naming the flag and why, before anything is read or asked (it used to end in a ValueError's traceback)."""
    (tmp_path / "q.csv").write_text("first,last,dob\nann,lee,1970-01-02\n")
    run_party("init", "--dir", str(tmp_path / "q"), "--name", "querier")
    result = run_party("join", "--dir", str(tmp_path / "q"), "--holder", "registry", "--input", str(tmp_path / "q.csv"),
                       "--out", str(tmp_path / "out.csv"), "--preset", "person", "--map", "first=first,last=last,dob=dob",
                       "--date-format", date_format, check=False)
    one_line_error(result, f"--date-format {date_format!r} is not a date format")
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize("damaged_at", [30, "late"])
def test_a_damaged_gzip_table_is_refused_in_one_line(tmp_path, damaged_at):
    """A ``.gz`` table whose deflate stream is damaged, near its start or far into it: gzip raises
    ``zlib.error`` mid-read, which used to end ``party join`` and ``party hold`` in a traceback."""
    import gzip
    packed = bytearray(gzip.compress(b"hcn\n" + b"".join(b"%010d\n" % (i * 7919) for i in range(200_000)), 6))
    start = 30 if damaged_at == 30 else len(packed) * 3 // 4
    for i in range(start, start + 30):
        packed[i] ^= 0x5A
    (tmp_path / "t.csv.gz").write_bytes(bytes(packed))
    run_party("init", "--dir", str(tmp_path / "p"), "--name", "party")
    common = ("--dir", str(tmp_path / "p"), "--input", str(tmp_path / "t.csv.gz"), "--id-column", "hcn")
    for result in (run_party("join", *common, "--holder", "registry", "--out", str(tmp_path / "out.csv"), check=False),
                   run_party("hold", *common, "--once", check=False)):
        one_line_error(result, "cannot read")
        assert "t.csv.gz" in result.stderr
    assert not (tmp_path / "out.csv").exists()


def test_a_damaged_key_holder_store_is_refused_in_one_line_and_kept(tmp_path):
    """``keyholder serve`` and ``keyholder audit`` on a store that is not a SQLite database: one line saying
    what to do, exit 2, the file unchanged and nothing made beside it (it used to be sqlite3's traceback)."""
    data_dir = tmp_path / "k"
    data_dir.mkdir()
    (data_dir / "keyholder.sqlite3").write_bytes(b"not a database, but someone's only copy\n" * 10)
    before = digest(data_dir / "keyholder.sqlite3")
    env = {**os.environ, "KEYHOLDER_PASSPHRASE": "x"}
    for args in (("audit",), ("serve", "--listen", "127.0.0.1:0", "--insecure")):
        result = subprocess.run(keyholder_cmd(*args, "--data-dir", str(data_dir)), capture_output=True, text=True,
                                env=env, timeout=60)
        one_line_error(result, "is not a key holder store K can open")
        assert "restore it from a backup" in result.stderr
    assert digest(data_dir / "keyholder.sqlite3") == before
    assert sorted(p.name for p in data_dir.iterdir()) == ["keyholder.sqlite3"]
