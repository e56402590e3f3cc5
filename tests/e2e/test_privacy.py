"""Leak tests: the key holder's store, spool and log hold no identifier,
encoding or released value; only the session's holder may submit
comparisons, only its querier may see results; K is no decryption oracle."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import numpy as np
import pandas as pd
import pytest

from linkhelpers import SCHEMES, all_bytes, blinded_comparisons, encoding_length, key_bits_for, make_party, needles, \
    party_cmd, run_party, scheme_flags, stub_for
from party_client import Party
from party_client.crypto.encoding import encode_to, lookup_words
from party_client.matching.normalize import normalize_identifiers
from proto import linkage_pb2 as pb
from proto import linkage_pb2_grpc as pb_grpc
from common.schemes.ristretto import IDENTITY
from schemecases import BAD_POINTS, NOT_DECODABLE

@pytest.mark.parametrize("scheme", SCHEMES)
def test_keyholder_store_spool_and_log_hold_no_identifiers(fresh_keyholder, tmp_path, scheme):
    server = fresh_keyholder()
    (qdir, _), (hdir, hname) = make_party(server, tmp_path), make_party(server, tmp_path)
    rng = np.random.default_rng(5)
    ids = [f"{v:012d}" for v in rng.choice(10 ** 12, 80, replace=False)]
    secrets_released = [f"released-{v:08x}" for v in rng.integers(0, 2 ** 31, 60)]
    querier = pd.DataFrame({"hcn": ids[:50]})
    holder = pd.DataFrame({"hcn": ids[20:80], "note": secrets_released})
    querier.to_csv(tmp_path / "q.csv", index=False)
    holder.to_csv(tmp_path / "h.csv", index=False)
    common = ["--dir", str(qdir), *server.flags(), "--holder", hname, "--input", str(tmp_path / "q.csv"),
              "--id-column", "hcn", *scheme_flags(scheme), "--quiet"]
    hold = ["hold", "--dir", str(hdir), *server.flags(), "--input", str(tmp_path / "h.csv"), "--id-column", "hcn",
            "--release-columns", "note", "--once", "--quiet"]
    run_party(*hold)             # the holder has served before: the table size lookups are sized from is known
    join = subprocess.Popen(party_cmd("join", *common, "--out", str(tmp_path / "j.csv")),
                            stderr=subprocess.PIPE, text=True)
    lookup = subprocess.Popen(party_cmd("lookup", *common, "--out", str(tmp_path / "l.csv"),
                                        "--population", "1000000"), stderr=subprocess.PIPE, text=True)
    spool = server.data_dir / "spool"
    for _ in range(600):                       # wait until both sealed queries sit in the spool
        if len(list(spool.rglob("*.sealed"))) >= 2:
            break
        join.poll()
        time.sleep(0.1)
    spooled = all_bytes(spool)
    assert spooled, "the sealed queries should be spooled to disk"
    hold = run_party("--log-level", "INFO", *hold)
    assert join.wait(timeout=300) == 0 and lookup.wait(timeout=300) == 0, join.stderr.read() + lookup.stderr.read()
    joined = pd.read_csv(tmp_path / "j.csv", dtype=str, keep_default_na=False)
    assert joined["matched"].eq("True").sum() == 30 and set(joined["note"]) - {""} <= set(secrets_released)

    lookup_state = json.loads((qdir / "lookups" / "sessions.json").read_text())
    secret = bytes.fromhex(lookup_state["sessions"][lookup_state["current"][hname]]["secret"])
    encodings = [encode_to(secret, "id", v, encoding_length(scheme)) for v in normalize_identifiers(pd.Series(ids))]
    server.stop()                              # flush the SQLite WAL into the files we scan
    stored = all_bytes(server.data_dir) + spooled
    logs = server.log_path.read_bytes() + hold.stderr.encode() + hold.stdout.encode()
    for value in ids + secrets_released:
        for needle in needles(value):
            assert needle not in stored, f"{value} found in the key holder's store"
            assert needle not in logs, f"{value} found in a log"
    for x in encodings:
        for needle in (x, x.hex().encode(), str(int.from_bytes(x, "big")).encode()):
            assert needle not in stored and needle not in logs
    words = lookup_words("id", normalize_identifiers(pd.Series(ids)).tolist())      # the unkeyed lookup digests
    for low, high in words.T:
        digest = ((int(high) << 32) | int(low)).to_bytes(8, "big")
        assert digest not in stored and digest.hex().encode() not in logs
    assert not list(spool.rglob("*.sealed")), "acknowledged messages must leave the spool"


def _pending_round(server, qdir: Path, hname: str, scheme: str = "paillier") -> tuple[str, int, pb.SessionInfo]:
    stub, meta = stub_for(server, qdir)
    session = stub.OpenSession(pb.OpenSessionRequest(mode=pb.JOIN, holder=hname, key_bits=key_bits_for(scheme),
                                                     scheme=scheme), metadata=meta)
    assert session.scheme == scheme
    chunks = [pb.MessageChunk(header=pb.MessageHeader(session_id=session.session_id, kind="query",
                                                      recipient=hname), data=b"sealed bytes K cannot open", last=True)]
    message = stub.PutMessage(iter(chunks), metadata=meta)
    return session.session_id, message.round, session


@pytest.mark.parametrize("scheme", SCHEMES)
def test_only_the_holder_submits_and_only_the_querier_sees_results(keyholder, tmp_path, scheme):
    (qdir, qname), (hdir, hname), (odir, _) = (make_party(keyholder, tmp_path) for _ in range(3))
    session_id, round_no, session = _pending_round(keyholder, qdir, hname, scheme)
    q, qmeta = stub_for(keyholder, qdir)
    h, hmeta = stub_for(keyholder, hdir)
    other, ometa = stub_for(keyholder, odir)
    batch = pb.ComparisonBatch(session_id=session_id, round=round_no, seq=0,
                               ciphertexts=blinded_comparisons(scheme, session.public_key, [True, False]),
                               row_comparisons=[1, 1], attachments=[b"a" * 48, b"b" * 48])

    def denied(call, code=grpc.StatusCode.PERMISSION_DENIED):
        with pytest.raises(grpc.RpcError) as caught:
            call()
        assert caught.value.code() == code, caught.value.details()
        return caught.value.details()

    denied(lambda: q.SubmitComparisons(batch, metadata=qmeta))                      # querier cannot submit
    denied(lambda: other.SubmitComparisons(batch, metadata=ometa), grpc.StatusCode.NOT_FOUND)  # nor a stranger
    denied(lambda: other.GetSession(pb.SessionRef(session_id=session_id), metadata=ometa),  # as if unknown
           grpc.StatusCode.NOT_FOUND)
    denied(lambda: h.SubmitComparisons(batch, metadata=[]), grpc.StatusCode.UNAUTHENTICATED)
    ack = h.SubmitComparisons(batch, metadata=hmeta)                                 # the first encrypts 0
    assert set(f.name for f, _ in ack.ListFields()) <= {"seq", "comparisons", "duplicate"}
    assert h.SubmitComparisons(batch, metadata=hmeta).duplicate                      # idempotent
    finished = h.FinishRound(pb.FinishRoundRequest(session_id=session_id, round=round_no, batches=1),
                             metadata=hmeta)
    assert finished.matched_rows == 0 and finished.comparisons == 2                  # holder learns no match
    denied(lambda: list(h.FetchResults(pb.RoundRef(session_id=session_id, round=round_no), metadata=hmeta)))
    denied(lambda: h.WaitRound(pb.WaitRoundRequest(session_id=session_id, round=round_no), metadata=hmeta))
    denied(lambda: list(other.FetchResults(pb.RoundRef(session_id=session_id, round=round_no), metadata=ometa)),
           grpc.StatusCode.NOT_FOUND)
    info = q.WaitRound(pb.WaitRoundRequest(session_id=session_id, round=round_no), metadata=qmeta)
    assert info.status == pb.DONE and info.matched_rows == 1 and info.comparisons == 0   # no holder size
    results = [m for page in q.FetchResults(pb.RoundRef(session_id=session_id, round=round_no), metadata=qmeta)
               for m in page.matches]
    assert [(list(m.match_indices), m.attachment) for m in results] == [([0], b"a" * 48)]  # non-match dropped
    q.CloseSession(pb.SessionRef(session_id=session_id), metadata=qmeta)
    denied(lambda: q.GetSession(pb.SessionRef(session_id=session_id), metadata=qmeta),
           grpc.StatusCode.FAILED_PRECONDITION)


def test_mtls_certificate_must_match_the_token(keyholder, tmp_path):
    (adir, _), (bdir, _) = make_party(keyholder, tmp_path), make_party(keyholder, tmp_path)
    channel = keyholder.channel(adir / "tls")                  # a's certificate ...
    token = (bdir / "token").read_text().strip()               # ... with b's token
    stub = pb_grpc.KeyHolderStub(channel)
    with pytest.raises(grpc.RpcError) as caught:
        stub.GetParty(pb.GetPartyRequest(name="x"), metadata=[("authorization", f"Bearer {token}")])
    assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
    plaintext = pb_grpc.KeyHolderStub(grpc.insecure_channel(keyholder.address))
    with pytest.raises(grpc.RpcError):
        plaintext.GetParty(pb.GetPartyRequest(name="x"), timeout=5)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_pair_rule_forwards_final_matches_only(keyholder, tmp_path, scheme):
    """Blocked fuzzy rounds: K evaluates the rule per pair and reports the terms that held, never groups.

    Rule: groups of 1, 3 and 1 comparisons; terms (g0 and g1) or g2.  "0": a comparison of equal values.
    """
    (qdir, _), (hdir, hname) = make_party(keyholder, tmp_path), make_party(keyholder, tmp_path)
    session_id, round_no, session = _pending_round(keyholder, qdir, hname, scheme)
    q, qmeta = stub_for(keyholder, qdir)
    h, hmeta = stub_for(keyholder, hdir)
    rule = pb.PairRule(group_sizes=[1, 3, 1], terms=[pb.Conjunction(groups=[0, 1]), pb.Conjunction(groups=[2])])
    rows = ["0" "505" "5",      # g0 and g1 agree: term 0
            "0" "555" "5",      # only g0 agrees: a partial agreement, never forwarded
            "5" "555" "0",      # g2: term 1
            "0" "000" "0",      # everything: both terms
            "5" "550" "5"]      # only g1
    blob = blinded_comparisons(scheme, session.public_key, [c == "0" for row in rows for c in row])
    width = len(blob) // len("".join(rows))
    attachments = [bytes([65 + i]) * 48 for i in range(len(rows))]

    def batch(seq, **changes):
        fields = dict(session_id=session_id, round=round_no, seq=seq, ciphertexts=blob,
                      row_comparisons=[5] * len(rows), attachments=attachments, rule=rule)
        fields.update(changes)
        return pb.ComparisonBatch(**fields)

    for bad in (batch(0, row_comparisons=[5, 5, 5, 5, 4], ciphertexts=blob[:-width]),
                batch(0, rule=pb.PairRule(group_sizes=[1, 3, 1], terms=[pb.Conjunction(groups=[3])]))):
        with pytest.raises(grpc.RpcError) as caught:
            h.SubmitComparisons(bad, metadata=hmeta)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    h.SubmitComparisons(batch(0), metadata=hmeta)
    h.FinishRound(pb.FinishRoundRequest(session_id=session_id, round=round_no, batches=1), metadata=hmeta)
    results = [(m.attachment[:1].decode(), list(m.match_indices))
               for page in q.FetchResults(pb.RoundRef(session_id=session_id, round=round_no), metadata=qmeta)
               for m in page.matches]
    assert results == [("A", [0]), ("C", [1]), ("D", [0, 1])]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_audit_log_records_counts_only(fresh_keyholder, tmp_path, scheme):
    """K's audit log says who did what with counts and parameters (the scheme too), never a value."""
    server = fresh_keyholder()
    (qdir, _), (hdir, hname) = make_party(server, tmp_path), make_party(server, tmp_path)
    frame = pd.DataFrame({"id": [f"{i:09d}" for i in range(40)], "v": [f"value-{i}" for i in range(40)]})
    frame.head(25).to_csv(tmp_path / "q.csv", index=False)
    frame.tail(25).to_csv(tmp_path / "h.csv", index=False)
    stop = threading.Event()
    serving = Party(hdir, progress=False).prepare_holder(tmp_path / "h.csv", "id", ["v"])
    thread = threading.Thread(target=serving.serve, kwargs={"once": False, "poll_seconds": 0.5, "stop": stop.is_set})
    thread.start()
    try:
        result = Party(qdir, progress=False).join(hname, tmp_path / "q.csv", "id", key_bits=key_bits_for(scheme),
                                                  scheme=scheme)
    finally:
        stop.set()
        thread.join(timeout=30)
    assert result.frame["matched"].sum() == 10 and result.report["scheme"].name == scheme
    audit = subprocess.run([sys.executable, "-m", "keyholder.cli", "audit", "--data-dir",
                            str(server.data_dir)], capture_output=True, text=True).stdout
    assert "finish_round" in audit and "matched_rows=10" in audit and f"scheme={scheme}" in audit
    for value in frame["id"]:
        assert value not in audit


@pytest.mark.parametrize("scheme", SCHEMES)
def test_fresh_r_for_every_comparison_and_padded_table_sizes(fresh_keyholder, tmp_path, monkeypatch, scheme):
    """Every blinded comparison draws its own r, and the querier's table size only shows a padded step.

    Scheme-neutral: every comparison the holder sends is distinct, and comparing the same pairs
    again gives different bytes in every comparison (a fresh r each time, none derived from the pair)."""
    import party_client.protocol.batches as batches_module
    server = fresh_keyholder()
    (qdir, _), (hdir, hname) = make_party(server, tmp_path), make_party(server, tmp_path)
    calls, lock = [], threading.Lock()
    original = batches_module.compare_units

    def recording(scheme_name, public, query, positions, encodings):
        out = original(scheme_name, public, query, positions, encodings)
        with lock:
            calls.append((scheme_name, public, query, list(positions), list(encodings), out))
        return out
    monkeypatch.setattr(batches_module, "compare_units", recording)
    holder_frame = pd.DataFrame({"id": [f"{i:08d}" for i in range(60)]})
    stop = threading.Event()
    serving = Party(hdir, progress=False).prepare_holder(holder_frame, "id", [])
    thread = threading.Thread(target=serving.serve, kwargs={"once": False, "poll_seconds": 0.5, "stop": stop.is_set})
    thread.start()
    try:
        querier = Party(qdir, progress=False)
        options = dict(key_bits=key_bits_for(scheme), scheme=scheme)
        small = querier.dedup(hname, pd.DataFrame({"id": [f"{i:08d}" for i in range(20)]}), "id", **options)
        larger = querier.dedup(hname, pd.DataFrame({"id": [f"{i:08d}" for i in range(20, 42)]}), "id", **options)
    finally:
        stop.set()
        thread.join(timeout=30)
    assert small.report["matched_records"] == 20 and larger.report["matched_records"] == 22
    assert {call[0] for call in calls} == {scheme}
    items = []
    for name, public, query, positions, encodings, out in calls:
        width = len(out) // len(positions)
        items += [out[i:i + width] for i in range(0, len(out), width)]
        again = original(name, public, query, positions, encodings)      # the same pairs once more
        assert all(again[i:i + width] != out[i:i + width] for i in range(0, len(out), width))
    assert len(items) == 2 * 2 * 60                         # h = 2 comparisons per holder row, two sessions
    assert len(set(items)) == len(items)                    # no two comparisons alike, not per row or session
    assert small.report["table_slots"] == larger.report["table_slots"]   # 20 and 22 keys pad to one size (23)
    sizes = [int(line.split("\t")[5]) for line in subprocess.run(
        [sys.executable, "-m", "keyholder.cli", "audit", "--data-dir", str(server.data_dir)],
        capture_output=True, text=True).stdout.splitlines() if "\trelay_query\t" in line]
    assert len(sizes) == 2 and sizes[0] == sizes[1]         # K sees the same sealed size


def test_nothing_is_pickled_across_processes():
    """Messages are protobuf or raw bytes: no pickle, no multiprocessing (which pickles) in the services."""
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    pattern = re.compile(r"^\s*(import|from)\s+(pickle|cPickle|cloudpickle|dill|multiprocessing|marshal)\b", re.M)
    offenders = [str(path.relative_to(root)) for package in ("keyholder", "party_client", "proto")
                 for path in (root / package).rglob("*.py") if pattern.search(path.read_text())]
    assert offenders == []


# -- checks of the ristretto scheme (docs/protocol.md, "Comparison schemes"): every received point is
# validated, the failed check named; the bad encodings are in tests/schemecases.py
def _bad_comparisons(good: bytes) -> dict[str, bytes]:
    """Two comparisons with one bad point each, by the check that must refuse it (a bad point
    as either half; the identity only as the first, as a second half it is legitimate)."""
    cases = {}
    for point, check in BAD_POINTS:
        cases.setdefault(f"first point: {check}", point + good[32:])
        if point != IDENTITY:
            cases.setdefault(f"second point: {check}", good[:32] + point + good[64:])
    return cases


@pytest.mark.parametrize("route", ["SubmitComparisons", "FinishRound"])
def test_key_holder_refuses_bad_points_naming_the_check(keyholder, tmp_path, route):
    """A comparison batch with a bad point is refused with INVALID_ARGUMENT naming the check, whether
    it comes alone or as the last batch a FinishRound carries, and the refusal changes nothing: the
    holder's correct batch is accepted afterwards (and a last batch of another round is refused)."""
    scheme = "ristretto"
    (qdir, _), (hdir, hname) = make_party(keyholder, tmp_path), make_party(keyholder, tmp_path)
    session_id, round_no, session = _pending_round(keyholder, qdir, hname, scheme)
    h, hmeta = stub_for(keyholder, hdir)

    def send(batch: pb.ComparisonBatch):
        if route == "SubmitComparisons":
            return h.SubmitComparisons(batch, metadata=hmeta)
        return h.FinishRound(pb.FinishRoundRequest(session_id=session_id, round=round_no, batches=1,
                                                   last_batch=batch), metadata=hmeta)
    good = blinded_comparisons(scheme, session.public_key, [False, True])
    for check, ciphertexts in _bad_comparisons(good).items():
        batch = pb.ComparisonBatch(session_id=session_id, round=round_no, seq=0, ciphertexts=ciphertexts,
                                   row_comparisons=[1, 1], attachments=[b"x" * 9, b"y" * 9])
        with pytest.raises(grpc.RpcError) as caught:
            send(batch)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, check
        assert f"comparison 0: {check}" in caught.value.details()
    good_batch = pb.ComparisonBatch(session_id=session_id, round=round_no, seq=0, ciphertexts=good,
                                    row_comparisons=[1, 1], attachments=[b"a" * 48, b"b" * 48])
    if route == "FinishRound":
        elsewhere = pb.ComparisonBatch()
        elsewhere.CopyFrom(good_batch)
        elsewhere.round = round_no + 1
        with pytest.raises(grpc.RpcError) as caught:
            send(elsewhere)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "last_batch must belong to the round being finished" in caught.value.details()
        done = send(good_batch)
    else:
        send(good_batch)
        done = h.FinishRound(pb.FinishRoundRequest(session_id=session_id, round=round_no, batches=1),
                             metadata=hmeta)
    assert done.comparisons == 2


def _join_with_holder(keyholder, tmp_path, **holder_options) -> tuple[Party, str, threading.Event,
                                                                         threading.Thread, list]:
    (qdir, _), (hdir, hname) = make_party(keyholder, tmp_path), make_party(keyholder, tmp_path)
    ids = pd.DataFrame({"id": [f"{i:06d}" for i in range(20)]})
    serving = Party(hdir, progress=False).prepare_holder(ids, "id", [], **holder_options)
    served, stop = [], threading.Event()
    thread = threading.Thread(target=lambda: served.extend(serving.serve(once=False, poll_seconds=0.5,
                                                                         stop=stop.is_set)))
    thread.start()
    return Party(qdir, progress=False), hname, stop, thread, served


def corrupt_slot(monkeypatch, slot: int, bad: bytes) -> None:
    """The querier's ciphertext of ``slot`` gets ``bad`` as its first point (the rest of its encryption is
    the product's)."""
    import party_client.protocol.encryption as encryption
    original = encryption.SlotEncryption._fill

    def corrupted(self, stop: int) -> None:
        original(self, stop)
        if len(self._done) > slot and not self._done[slot].startswith(bad):
            self._done[slot] = bad + self._done[slot][32:]
    monkeypatch.setattr(encryption.SlotEncryption, "_fill", corrupted)


def test_holder_refuses_a_query_with_a_bad_point(keyholder, tmp_path, monkeypatch):
    """A query whose ciphertext holds a bad point: the holder aborts the round, naming the check."""
    from party_client.errors import PartyError
    scheme, bad, check = "ristretto", NOT_DECODABLE, "not the encoding of a group element"
    corrupt_slot(monkeypatch, 0, bad)
    querier, hname, stop, thread, served = _join_with_holder(keyholder, tmp_path)
    try:
        with pytest.raises(PartyError, match=f"refused the query: malformed query: ciphertext 0: first point: "
                                             f"{check}"):
            querier.dedup(hname, pd.DataFrame({"id": ["000001", "999999"]}), "id", scheme=scheme, timeout=60)
    finally:
        stop.set()
        thread.join(timeout=30)
    assert check in served[0]["refused"]


def test_holder_refuses_a_streamed_query_with_a_bad_point_in_a_late_piece(keyholder, tmp_path, monkeypatch):
    """A query large enough to be streamed (docs/protocol.md, "Streaming the query"), validated piece by
    piece as it comes in: a bad point in its third piece aborts the round, naming the check and the item."""
    from party_client.errors import PartyError
    from party_client.protocol.querier import STREAM_MIN_SLOTS
    scheme, bad, check = "ristretto", NOT_DECODABLE, "not the encoding of a group element"
    late = 4500                                     # of the 4,916 slots of 2,000 keys: the third piece of 2,048
    corrupt_slot(monkeypatch, late, bad)
    querier, hname, stop, thread, served = _join_with_holder(keyholder, tmp_path)
    try:
        with pytest.raises(PartyError, match=f"malformed query: ciphertext {late}: first point: {check}"):
            querier.dedup(hname, pd.DataFrame({"id": [f"{i:06d}" for i in range(2000)]}), "id", scheme=scheme,
                          timeout=60)
    finally:
        stop.set()
        thread.join(timeout=30)
    assert check in served[0]["refused"] and 4916 >= STREAM_MIN_SLOTS


def test_holder_refuses_a_scheme_it_does_not_serve_or_a_header_of_another_scheme(keyholder, tmp_path,
                                                                                  monkeypatch):
    """``party hold --schemes paillier`` refuses a ristretto round; a query header naming another scheme than
    the session's is refused too; both with the reason."""
    import party_client.protocol.querier as querier_module
    from party_client.errors import PartyError
    querier, hname, stop, thread, served = _join_with_holder(keyholder, tmp_path, schemes="paillier")
    try:
        with pytest.raises(PartyError, match="does not serve the ristretto scheme"):
            querier.dedup(hname, pd.DataFrame({"id": ["000001"]}), "id", scheme="ristretto", timeout=60)
    finally:
        stop.set()
        thread.join(timeout=30)
    original = querier_module.query_records

    def relabelled(prepared, ciphertexts):
        records = original(prepared, ciphertexts)
        header = pb.QueryHeader.FromString(next(records))
        header.scheme = "paillier"
        yield header.SerializeToString()
        yield from records
    monkeypatch.setattr(querier_module, "query_records", relabelled)
    querier, hname, stop, thread, served = _join_with_holder(keyholder, tmp_path)
    try:
        with pytest.raises(PartyError, match=r"comparison scheme \(paillier\) is not the session's \(ristretto\)"):
            querier.dedup(hname, pd.DataFrame({"id": ["000001"]}), "id", scheme="ristretto", timeout=60)
    finally:
        stop.set()
        thread.join(timeout=30)
