"""The key holder's session state machine, driven in process (no server): ``keyholder.core.KeyHolder``,
opening sessions and spooling queries by the awaitable calls the servicer makes (``core_calls``).

docs/protocol.md: K opens a session with a fresh key, relays the querier's query to the holder,
zero-tests the holder's comparison batches, hands matching rows' attachments to the querier only,
and destroys the key when the session ends.  Every refusal is a ``ServiceError`` with a gRPC
status name (the servicer in keyholder/servicer.py only converts it).
"""
from __future__ import annotations

import secrets
import time
from pathlib import Path

import pytest

from common.schemes import SCHEME_NAMES, RetiredScheme, get_scheme
from core_calls import open_session, put_message
from keyholder import validation
from keyholder.errors import ServiceError
from keyholder.limits import Limits
from keyholder.core import KeyHolder
from keyholder.store import STORE_FILE
from keyholder.pair_rule import PairRule
from keyholder.proto_enums import ABORTED, CLOSED, DONE, EXPIRED, OPEN, PENDING
from linkhelpers import blinded_comparisons

JOIN = 1
BITS = 1024
LIMITS = Limits(min_key_bits=BITS, max_open_sessions=2, max_rounds=2)


@pytest.fixture
def holder(tmp_path: Path):
    core = KeyHolder(tmp_path / "keyholder", b"test passphrase", LIMITS)
    for name in ("querier", "holder", "stranger"):
        core.register(name, secrets.token_bytes(32), None, None)
    yield core
    core.close()


def comparisons(session, zero: list[bool]) -> bytes:
    """Blinded comparisons of the session's scheme with ``X = Y`` exactly where ``zero`` says so."""
    return blinded_comparisons(session.scheme, session.public_key, zero)


def refused(code: str, call, *args, **kwargs) -> str:
    with pytest.raises(ServiceError) as caught:
        call(*args, **kwargs)
    assert caught.value.code == code, caught.value.message
    return caught.value.message


def bits(scheme: str) -> int:
    """The key size a test asks for: small Paillier keys, the ristretto group's one size."""
    return BITS if scheme == "paillier" else 256


def open_with_query(core: KeyHolder, query: bytes = b"sealed query", scheme: str = "paillier") -> tuple[object, object]:
    session = open_session(core, "querier", JOIN, "holder", bits(scheme), 0, scheme=get_scheme(scheme))
    message = put_message(core, "querier", session.id, "query", "holder", [query[:5], query[5:]])
    return session, message


@pytest.mark.parametrize("scheme", SCHEME_NAMES)
def test_a_session_from_open_to_close(holder: KeyHolder, scheme: str) -> None:
    session = open_session(holder, "querier", JOIN, "holder", bits(scheme), 0, scheme=get_scheme(scheme))
    assert (session.status, session.key_bits, session.querier, session.holder, session.scheme) == \
        (OPEN, bits(scheme), "querier", "holder", scheme)
    assert holder.store.get_session(session.id).wrapped_key                 # the private key, wrapped at rest
    assert f"scheme={scheme}" in [row for row in holder.store.audit_rows() if row[2] == "open_session"][-1][6]
    assert holder.list_work("holder") == []

    message = put_message(holder, "querier", session.id, "query", "holder", [b"sealed ", b"query"])
    assert (message.round, message.size, message.recipient) == (1, 12, "holder")
    [(work_session, work_round, seqs)] = holder.list_work("holder")
    assert (work_session.id, work_round.round, work_round.status, work_round.message_id, seqs) == \
        (session.id, 1, PENDING, message.id, [])
    fetched, chunks = holder.get_message("holder", message.id)
    assert b"".join(chunks) == b"sealed query" and fetched.id == message.id
    assert holder.ack_message("holder", message.id).path is None

    # three rows of two comparisons each per batch; rows 1 (batch 0) and 0 (batch 1) match
    batch0 = comparisons(session, [False, False, False, True, False, False])
    batch1 = comparisons(session, [True, True, False, False, False, False])
    attachments = [[b"row-%d-%d" % (seq, row) for row in range(3)] for seq in range(2)]
    assert holder.submit_batch("holder", session.id, 1, 0, batch0, [2, 2, 2], attachments[0]) == (6, False)
    assert holder.submit_batch("holder", session.id, 1, 0, batch0, [2, 2, 2], attachments[0]) == (6, True)
    assert holder.list_work("holder")[0][2] == [0]                     # a resumed holder skips seq 0
    assert holder.round_for_querier("querier", session.id, 1).status == PENDING
    refused("FAILED_PRECONDITION", holder.fetch_results, "querier", session.id, 1)
    assert "missing" in refused("FAILED_PRECONDITION", holder.finish_round, "holder", session.id, 1, 2, b"")

    assert holder.submit_batch("holder", session.id, 1, 1, batch1, [2, 2, 2], attachments[1]) == (6, False)
    done = holder.finish_round("holder", session.id, 1, 2, b"holder note")
    assert (done.status, done.comparisons, done.matched_rows, done.batches) == (DONE, 12, 2, 2)
    assert holder.list_work("holder") == []
    assert holder.round_for_querier("querier", session.id, 1).holder_note == b"holder note"
    pages = list(holder.fetch_results("querier", session.id, 1))
    assert [hit for page in pages for hit in page] == [([1], b"row-0-1"), ([0, 1], b"row-1-0")]
    assert "already finished" in refused("FAILED_PRECONDITION", holder.submit_batch, "holder", session.id, 1, 2,
                                         batch1, [2, 2, 2], attachments[1])

    closed = holder.close_session("querier", session.id)
    assert closed.status == CLOSED
    stored = holder.store.get_session(session.id)
    assert stored.wrapped_key is None                                  # the private key is destroyed
    assert not (holder.spool / session.id).exists()
    assert list(holder.store.iter_matches(session.id, 1)) == []        # and the sealed results
    assert "closed" in refused("FAILED_PRECONDITION", holder.fetch_results, "querier", session.id, 1)
    assert "closed" in refused("FAILED_PRECONDITION", holder.submit_batch, "holder", session.id, 1, 2,
                               batch1, [2, 2, 2], attachments[1])
    refused("FAILED_PRECONDITION", put_message, holder, "querier", session.id, "query", "holder", [b"x"])
    refused("FAILED_PRECONDITION", holder.close_session, "querier", session.id)


def test_only_the_right_party_may_act(holder: KeyHolder) -> None:
    session, message = open_with_query(holder)
    batch = comparisons(session, [True])
    # strangers cannot even learn that the session exists
    for call, args in ((holder.session, ("stranger", session.id)),
                       (holder.close_session, ("stranger", session.id)),
                       (holder.get_message, ("stranger", message.id)),
                       (holder.fetch_results, ("stranger", session.id, 1)),
                       (holder.submit_batch, ("stranger", session.id, 1, 0, batch, [1], [b"a"]))):
        refused("NOT_FOUND", call, *args)
    refused("PERMISSION_DENIED", holder.close_session, "holder", session.id)
    refused("PERMISSION_DENIED", put_message, holder, "holder", session.id, "query", "querier", [b"x"])
    refused("PERMISSION_DENIED", holder.get_message, "querier", message.id)       # only the recipient
    refused("PERMISSION_DENIED", holder.submit_batch, "querier", session.id, 1, 0, batch, [1], [b"a"])
    refused("PERMISSION_DENIED", holder.finish_round, "querier", session.id, 1, 0, b"")
    refused("PERMISSION_DENIED", holder.abort_round, "querier", session.id, 1, "no")
    refused("PERMISSION_DENIED", holder.fetch_results, "holder", session.id, 1)    # results: querier only
    refused("PERMISSION_DENIED", holder.round_for_querier, "holder", session.id, 1)
    refused("INVALID_ARGUMENT", put_message, holder, "querier", session.id, "query", "stranger", [b"x"])
    refused("INVALID_ARGUMENT", put_message, holder, "querier", session.id, "result", "holder", [b"x"])
    refused("INVALID_ARGUMENT", open_session, holder, "querier", JOIN, "querier", BITS, 0)
    refused("NOT_FOUND", open_session, holder, "querier", JOIN, "nobody", BITS, 0)


def test_rounds_follow_their_order(holder: KeyHolder) -> None:
    session = open_session(holder, "querier", JOIN, "holder", BITS, 0)
    refused("NOT_FOUND", holder.submit_batch, "holder", session.id, 1, 0, comparisons(session, [True]), [1], [b"a"])
    refused("NOT_FOUND", holder.round_for_querier, "querier", session.id, 1)
    put_message(holder, "querier", session.id, "query", "holder", [b"query"])
    refused("NOT_FOUND", holder.finish_round, "holder", session.id, 2, 0, b"")
    # an announced count beyond what arrived, and a count short of what arrived, are both refused
    holder.submit_batch("holder", session.id, 1, 1, comparisons(session, [False]), [1], [b"a"])
    refused("FAILED_PRECONDITION", holder.finish_round, "holder", session.id, 1, 1, b"")
    refused("FAILED_PRECONDITION", holder.finish_round, "holder", session.id, 1, 3, b"")
    holder.submit_batch("holder", session.id, 1, 0, comparisons(session, [True]), [1], [b"b"])
    assert holder.finish_round("holder", session.id, 1, 2, b"").matched_rows == 1
    refused("FAILED_PRECONDITION", holder.finish_round, "holder", session.id, 1, 2, b"")
    refused("FAILED_PRECONDITION", holder.abort_round, "holder", session.id, 1, "late")


def test_an_aborted_round_has_no_results_and_drops_its_query(holder: KeyHolder) -> None:
    session, message = open_with_query(holder)
    aborted = holder.abort_round("holder", session.id, 1, "  too   many\nrows ")
    assert (aborted.status, aborted.reason) == (ABORTED, "too many rows")
    assert holder.round_for_querier("querier", session.id, 1).status == ABORTED
    refused("FAILED_PRECONDITION", holder.fetch_results, "querier", session.id, 1)
    refused("FAILED_PRECONDITION", holder.get_message, "holder", message.id)     # its spool file is gone
    refused("FAILED_PRECONDITION", holder.submit_batch, "holder", session.id, 1, 0,
            comparisons(session, [True]), [1], [b"a"])
    assert holder.list_work("holder") == []


@pytest.mark.parametrize("scheme", SCHEME_NAMES)
def test_batches_are_checked_before_any_zero_test(holder: KeyHolder, scheme: str) -> None:
    session, _ = open_with_query(holder, scheme=scheme)
    good = comparisons(session, [True, False])
    width = len(good) // 2
    refused("INVALID_ARGUMENT", holder.submit_batch, "holder", session.id, 1, 0, good[:-1], [2], [b"a"])
    refused("INVALID_ARGUMENT", holder.submit_batch, "holder", session.id, 1, 0, good, [1, 2], [b"a", b"b"])
    outside = bytes(width) + good[width:]                                 # 0 is not in the group
    refused("INVALID_ARGUMENT", holder.submit_batch, "holder", session.id, 1, 0, outside, [2], [b"a"])
    assert holder.store.get_round(session.id, 1).comparisons == 0
    holder.submit_batch("holder", session.id, 1, 0, good, [2], [b"b"])
    assert holder.store.get_round(session.id, 1).comparisons == 2
    assert "not 5" in refused("INVALID_ARGUMENT", holder.submit_batch, "holder", session.id, 1, 1, good, [2],
                              [b"five!"])                                   # one attachment length per round


def test_a_pair_rule_forwards_rows_whose_terms_hold(holder: KeyHolder) -> None:
    session, _ = open_with_query(holder)
    rule = PairRule(group_sizes=(1, 2), terms=((0, 1),))                  # field 0 and (field 1a or 1b)
    batch = comparisons(session, [True, False, True, True, False, False, False, True, False])
    holder.submit_batch("holder", session.id, 1, 0, batch, [3, 3, 3], [b"r0", b"r1", b"r2"], rule)
    holder.finish_round("holder", session.id, 1, 1, b"")
    assert [hit for page in holder.fetch_results("querier", session.id, 1) for hit in page] == [([0], b"r0")]


def test_quotas_on_sessions_rounds_and_query_size(holder: KeyHolder) -> None:
    first, _ = open_with_query(holder)
    put_message(holder, "querier", first.id, "query", "holder", [b"second round"])
    assert "2 rounds" in refused("RESOURCE_EXHAUSTED", put_message, holder, "querier", first.id, "query",
                                 "holder", [b"third round"])
    declared = open_session(holder, "querier", JOIN, "holder", BITS, 0, query_ciphertexts=1)
    limit = declared.max_query_bytes
    assert limit == int(1 * (2 * BITS // 8) * LIMITS.query_margin + LIMITS.query_overhead)
    assert "open sessions" in refused("RESOURCE_EXHAUSTED", open_session, holder, "querier", JOIN, "holder",
                                      BITS, 0)
    refused("RESOURCE_EXHAUSTED", put_message, holder, "querier", declared.id, "query", "holder",
            [bytes(limit), b"!"])
    assert holder.store.get_session(declared.id).rounds == 0 and not list((holder.spool / declared.id).iterdir())
    refused("INVALID_ARGUMENT", put_message, holder, "querier", declared.id, "query", "holder", [b""])
    holder.close_session("querier", first.id)
    open_session(holder, "querier", JOIN, "holder", BITS, 0)                # a closed session frees its slot


@pytest.mark.parametrize("scheme", SCHEME_NAMES)
def test_an_expired_session_loses_its_key(holder: KeyHolder, scheme: str) -> None:
    session, _ = open_with_query(holder, scheme=scheme)
    short = open_session(holder, "querier", JOIN, "holder", bits(scheme), 0.3, scheme=get_scheme(scheme))
    put_message(holder, "querier", short.id, "query", "holder", [b"query"])
    time.sleep(0.4)
    assert [s.id for s, _, _ in holder.list_work("holder")] == [session.id]
    assert "expired" in refused("FAILED_PRECONDITION", holder.submit_batch, "holder", short.id, 1, 0,
                                comparisons(short, [True]), [1], [b"a"])
    stored = holder.store.get_session(short.id)
    assert (stored.status, stored.wrapped_key) == (EXPIRED, None)
    assert holder.store.get_session(session.id).wrapped_key is not None


@pytest.mark.parametrize("scheme", SCHEME_NAMES)
def test_a_restarted_key_holder_unwraps_the_key_and_goes_on(tmp_path: Path, scheme: str) -> None:
    core = KeyHolder(tmp_path / "k", b"passphrase", LIMITS)
    for name in ("querier", "holder"):
        core.register(name, secrets.token_bytes(32), None, None)
    session, _ = open_with_query(core, scheme=scheme)
    batch = comparisons(session, [False, True])
    core.submit_batch("holder", session.id, 1, 0, batch[:len(batch) // 2], [1], [b"a"])
    core.close()
    with pytest.raises(ValueError, match="passphrase"):
        KeyHolder(tmp_path / "k", b"wrong", LIMITS)
    again = KeyHolder(tmp_path / "k", b"passphrase", LIMITS)
    try:
        assert again.list_work("holder")[0][2] == [0]
        again.submit_batch("holder", session.id, 1, 1, batch[len(batch) // 2:], [1], [b"b"])
        assert again.finish_round("holder", session.id, 1, 2, b"").matched_rows == 1
        assert [hit for page in again.fetch_results("querier", session.id, 1) for hit in page] == [([0], b"b")]
    finally:
        again.close()


@pytest.mark.parametrize("scheme", SCHEME_NAMES)
def test_a_refused_batch_does_not_fix_the_attachment_length(holder: KeyHolder, scheme: str) -> None:
    """The round's attachment length is the first *accepted* batch's: a batch refused for its
    ciphertexts leaves it unset, so the holder's corrected batch may use another length."""
    session, _ = open_with_query(holder, scheme=scheme)
    good = comparisons(session, [True, False])
    width = len(good) // 2
    broken = bytes(width) + good[width:]                                  # not a valid comparison
    refused("INVALID_ARGUMENT", holder.submit_batch, "holder", session.id, 1, 0, broken, [2], [b"five!"])
    assert holder.store.get_round(session.id, 1).attachment_bytes is None
    holder.submit_batch("holder", session.id, 1, 0, good, [2], [b"ab"])
    assert holder.store.get_round(session.id, 1).attachment_bytes == 2
    assert "not 5" in refused("INVALID_ARGUMENT", holder.submit_batch, "holder", session.id, 1, 1, good, [2],
                              [b"five!"])


def test_each_scheme_has_its_key_size_query_size_and_offer(tmp_path: Path) -> None:
    """Sessions of the ristretto scheme are recorded at 256 bits and sized by the 64-byte ciphertext; a key
    holder refuses a scheme it does not offer, or one it does not know, naming it."""
    curve = "ristretto"
    core = KeyHolder(tmp_path / "k", b"passphrase", LIMITS)
    for name in ("querier", "holder"):
        core.register(name, secrets.token_bytes(32), None, None)
    try:
        fixed = open_session(core, "querier", JOIN, "holder", 0, 0, query_ciphertexts=1000, scheme=get_scheme(curve))
        assert (fixed.scheme, fixed.key_bits, len(fixed.public_key)) == (curve, 256, 32)
        assert fixed.max_query_bytes == int(1000 * 64 * LIMITS.query_margin + LIMITS.query_overhead)
        default = open_session(core, "querier", JOIN, "holder", BITS, 0)
        assert core.store.get_session(default.id).scheme == "paillier"
        assert "'rsa'" in refused("INVALID_ARGUMENT", validation.scheme, "rsa")   # the name of a request
    finally:
        core.close()
    only = KeyHolder(tmp_path / "k", b"passphrase", LIMITS, schemes=(get_scheme(curve),))
    try:
        message = refused("FAILED_PRECONDITION", open_session, only, "querier", JOIN, "holder", BITS, 0,
                          scheme=get_scheme("paillier"))
        assert "paillier" in message and f"offers: {curve}" in message
        assert only.store.get_session(fixed.id).scheme == curve
    finally:
        only.close()


def test_a_store_from_before_schemes_is_migrated(tmp_path: Path) -> None:
    """A data directory written before sessions had a scheme: its sessions read as Paillier."""
    import sqlite3

    from keyholder.store import STORE_FILE
    core = KeyHolder(tmp_path / "k", b"passphrase", LIMITS)
    core.register("querier", secrets.token_bytes(32), None, None)
    core.register("holder", secrets.token_bytes(32), None, None)
    session, _ = open_with_query(core)
    core.close()
    db = sqlite3.connect(tmp_path / "k" / STORE_FILE)
    db.execute("ALTER TABLE sessions DROP COLUMN scheme")
    db.commit()
    db.close()
    again = KeyHolder(tmp_path / "k", b"passphrase", LIMITS)
    try:
        assert again.session("querier", session.id).scheme == "paillier"
        batch = comparisons(again.session("holder", session.id), [True])
        again.submit_batch("holder", session.id, 1, 0, batch, [1], [b"a"])
        assert again.store.get_round(session.id, 1).comparisons == 1
    finally:
        again.close()


def retire_scheme_of(data_dir: Path, session_id: str, name: str = "ec") -> None:
    """Rewrite a stored session's scheme, as a key holder of an earlier version stored it (K stopped)."""
    import sqlite3
    with sqlite3.connect(data_dir / STORE_FILE) as db:
        assert db.execute("UPDATE sessions SET scheme = ? WHERE id = ?", (name, session_id)).rowcount == 1
    db.close()


def test_a_session_of_a_retired_scheme_is_refused_in_one_line_and_can_be_closed(tmp_path: Path) -> None:
    """A session stored under ``ec`` (docs/protocol.md, "Comparison schemes") takes no query and no batch,
    each refused with FAILED_PRECONDITION saying how to go on; it is still listed and closed."""
    core = KeyHolder(tmp_path / "k", b"passphrase", LIMITS)
    for name in ("querier", "holder"):
        core.register(name, secrets.token_bytes(32), None, None)
    session, _ = open_with_query(core, scheme="ristretto")
    other = open_session(core, "querier", JOIN, "holder", 0, 0, scheme=get_scheme("ristretto"))
    batch = comparisons(session, [True])
    core.close()
    retire_scheme_of(tmp_path / "k", session.id)
    retire_scheme_of(tmp_path / "k", other.id)
    again = KeyHolder(tmp_path / "k", b"passphrase", LIMITS)
    try:
        expected = RetiredScheme("ec").of_session(session.id)
        assert refused("FAILED_PRECONDITION", again.submit_batch, "holder", session.id, 1, 0, batch, [1],
                       [b"a"]) == expected
        assert refused("FAILED_PRECONDITION", put_message, again, "querier", other.id, "query", "holder",
                       [b"x"]) == RetiredScheme("ec").of_session(other.id)
        assert again.session("querier", session.id).scheme == "ec"
        assert again.close_session("querier", session.id).status == CLOSED
    finally:
        again.close()
