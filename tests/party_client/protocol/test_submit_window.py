"""A pipelined round (docs/protocol.md, "Scaling out"): the holder keeps several ``SubmitComparisons``
calls in flight, K zero-tests them as they arrive, in any order, and a holder that crashed with a gap
in what K received resends exactly the missing batches.  A real key holder process; the holder's
crash is a failure injected into one call."""
from __future__ import annotations

import threading
import time

import pytest

from linkhelpers import SCHEMES, canonical, key_bits_for, make_party, plaintext_join, tables
from party_client import Party
from party_client.transport import ConnectionProblem

ROWS_PER_BATCH = 16


def _recording(serving, on_call=None):
    """Wrap the holder's calls: the seqs K acknowledged, and the most calls seen in flight at once."""
    seen = {"acked": [], "in_flight": 0, "most": 0}
    lock = threading.Lock()
    original = serving.connection.call

    def call(method, request, timeout=60.0):
        if method != "SubmitComparisons":
            return original(method, request, timeout)
        with lock:
            seen["in_flight"] += 1
            seen["most"] = max(seen["most"], seen["in_flight"])
        try:
            if on_call is not None:
                on_call(request)
            reply = original(method, request, timeout)
            time.sleep(0.05)                 # hold the slot a little: the window, not luck, makes the overlap
        finally:
            with lock:
                seen["in_flight"] -= 1
        with lock:
            seen["acked"].append(request.seq)
        return reply
    serving.connection.call = call
    return seen


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_round_with_calls_in_flight_and_a_gap_after_a_crash(fresh_keyholder, tmp_path, scheme):
    """Several calls in flight; the holder "crashes" on batch 1 after batch 2 was acknowledged, so K
    holds a gap; a new holder is told what K has (``received_seqs``), sends exactly the rest, and the
    join equals the plaintext join."""
    server = fresh_keyholder()
    (qdir, _), (hdir, hname) = make_party(server, tmp_path, cli=False), make_party(server, tmp_path, cli=False)
    querier, holder = tables(41, n=60, m=200, overlap=30)
    first = Party(hdir, progress=False).prepare_holder(holder, "health_no", ["cost"], submit_window=4)
    first.options.batch_rows = ROWS_PER_BATCH
    second_acked = threading.Event()

    def crash_on_one(request) -> None:
        if request.seq == 2:
            return
        if request.seq == 1:
            second_acked.wait(timeout=60)
            raise ConnectionProblem("the holder crashed (injected)")
    seen = _recording(first, crash_on_one)
    original = first.connection.call

    def call(method, request, timeout=60.0):
        reply = original(method, request, timeout)
        if method == "SubmitComparisons" and request.seq == 2:
            second_acked.set()
        return reply
    first.connection.call = call

    result: dict = {}
    join = threading.Thread(target=lambda: result.update(frame=Party(qdir, progress=False).join(
        hname, querier, "hcn", key_bits=key_bits_for(scheme), scheme=scheme, timeout=300).frame), daemon=True)
    join.start()
    with pytest.raises(ConnectionProblem, match="injected"):
        first.serve(once=False, poll_seconds=0.5)
    assert seen["most"] >= 2, "the holder never had two calls in flight"
    time.sleep(1.0)                           # the crashed holder's other calls in flight land at K

    second = Party(hdir, progress=False).prepare_holder(holder, "health_no", ["cost"])
    second.options.batch_rows = ROWS_PER_BATCH
    [item] = second.pending()
    received = set(item.received_seqs)
    assert 2 in received and 1 not in received, sorted(received)
    resent = _recording(second)
    second.serve(once=True)
    join.join(timeout=300)
    batches = -(-len(holder) // ROWS_PER_BATCH)
    assert sorted(resent["acked"]) == sorted(set(range(batches)) - received)
    assert canonical(result["frame"]) == canonical(plaintext_join(querier, holder, ["cost"]))


def test_the_submit_window_is_checked(fresh_keyholder, tmp_path):
    from party_client.errors import PartyError
    server = fresh_keyholder()
    hdir, _ = make_party(server, tmp_path, cli=False)
    querier, holder = tables(42, n=10, m=20, overlap=5)
    with pytest.raises(PartyError, match="--submit-window"):
        Party(hdir, progress=False).prepare_holder(holder, "health_no", submit_window=0)
