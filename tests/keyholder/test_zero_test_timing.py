"""The holder cannot tell its matches by timing K (docs/protocol.md, "A zero test that takes the same
time").  K answers a ``SubmitComparisons`` call after zero-testing the batch, so the holder times every
zero test it asks for.  Paillier's test used to run its second half only when the first passed, so a
zero cost one more exponentiation: from its own acknowledgement times, a holder sending each pair as its
own batch classified pairs 92 % right (rows: AUC 0.99).

The attack here is the holder's: it sends one-pair batches, true pairs and false pairs in a random
order, to a real ``keyholder serve`` over gRPC, times each acknowledgement on its side, and ranks pairs
by that time; it also learns a threshold on one half of the pairs and classifies the other half.  Both
must stay within :data:`MARGIN` of chance (with 1,000 pairs of each kind, chance's spread is 0.013 for
the AUC and 0.016 for the accuracy, so a margin of 0.05 is about three of them)."""
from __future__ import annotations

import os
import random
import time

import grpc
import numpy as np
import pytest

from linkhelpers import blinded_comparisons
from proto import linkage_pb2 as pb
from proto import linkage_pb2_grpc as pb_grpc

PAIRS = 1000            # of each kind
DISTINCT = 40           # distinct comparisons of each kind, each sent PAIRS / DISTINCT times
MARGIN = 0.05


def register(stub, name: str) -> list[tuple[str, str]]:
    token = stub.Register(pb.RegisterRequest(name=name, x25519_public_key=os.urandom(32)), timeout=10).token
    return [("authorization", f"Bearer {token}")]


def auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """The probability that a true pair's time ranks above a false pair's (ties count half)."""
    ranks = np.argsort(np.argsort(np.concatenate([positive, negative]), kind="stable")).astype(float) + 1
    return float((ranks[:len(positive)].sum() - len(positive) * (len(positive) + 1) / 2)
                 / (len(positive) * len(negative)))


def held_out_accuracy(times: np.ndarray, truth: np.ndarray) -> float:
    """A threshold (and its side) learned on the even-numbered pairs, scored on the odd ones."""
    train, test = slice(0, None, 2), slice(1, None, 2)
    best = (0.0, 0.0, True)
    for threshold in np.quantile(times[train], np.linspace(0.02, 0.98, 49)):
        for above in (True, False):
            guess = times[train] > threshold if above else times[train] <= threshold
            score = float((guess == truth[train]).mean())
            if score > best[0]:
                best = (score, threshold, above)
    _, threshold, above = best
    guess = times[test] > threshold if above else times[test] <= threshold
    return float((guess == truth[test]).mean())


@pytest.mark.parametrize("scheme", ["paillier", "ristretto"])
def test_the_holder_cannot_time_which_of_its_pairs_match(fresh_keyholder, scheme):
    server = fresh_keyholder()
    stub = pb_grpc.KeyHolderStub(grpc.insecure_channel(server.address))
    querier, holder = register(stub, "querier"), register(stub, "holder")
    session = stub.OpenSession(pb.OpenSessionRequest(mode=pb.JOIN, holder="holder", scheme=scheme),
                               metadata=querier, timeout=120)    # Paillier: the default 2048-bit key
    header = pb.MessageHeader(session_id=session.session_id, kind="query", recipient="holder")
    stub.PutMessage(iter([pb.MessageChunk(header=header, data=b"sealed", last=True)]), metadata=querier, timeout=30)
    kinds = [True] * DISTINCT + [False] * DISTINCT
    made = blinded_comparisons(scheme, session.public_key, kinds)
    width = len(made) // len(kinds)
    pool = {kind: [made[i * width:(i + 1) * width] for i, k in enumerate(kinds) if k == kind] for kind in (True, False)}
    order = [True] * PAIRS + [False] * PAIRS
    random.Random(7).shuffle(order)

    def submit(seq: int, comparison: bytes) -> float:
        started = time.perf_counter()
        stub.SubmitComparisons(pb.ComparisonBatch(session_id=session.session_id, round=1, seq=seq,
                                                  ciphertexts=comparison, row_comparisons=[1],
                                                  attachments=[b"released columns"]), metadata=holder, timeout=60)
        return time.perf_counter() - started
    for seq in range(50):                                      # warm K's caches and the channel
        submit(10_000 + seq, pool[seq % 2 == 0][seq % DISTINCT])
    times = np.array([submit(seq, pool[kind][seq % DISTINCT]) for seq, kind in enumerate(order)])
    truth = np.array(order)
    area, accuracy = auc(times[truth], times[~truth]), held_out_accuracy(times, truth)
    print(f"{scheme}: median ack {np.median(times[truth]) * 1e3:.2f} ms (match) vs "
          f"{np.median(times[~truth]) * 1e3:.2f} ms; AUC {area:.3f}, held-out accuracy {accuracy:.3f} "
          f"(load {os.getloadavg()[0]:.1f})")
    assert abs(area - 0.5) <= MARGIN
    assert accuracy <= 0.5 + MARGIN
