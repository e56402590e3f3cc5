"""No party starves another of K's zero tests (keyholder/lanes.py): a holder that submitted many
comparison batches at once used to take every thread of K's pool, and every other party's calls waited
(an honest ``GetParty`` answered in 89 s instead of 4 ms beside 64 hostile batches, 2 cores).  Now a
party's batches take at most its share of the lanes, wait for their turn on no thread, and past its
queue are refused with "retry in N s"."""
from __future__ import annotations

import asyncio
import os
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from common.schemes import get_scheme
from keyholder.errors import ServiceError
from keyholder.lanes import FairLanes
from proto import linkage_pb2 as pb
from proto import linkage_pb2_grpc as pb_grpc

COMPARISONS = 1 << 14


def test_a_freed_lane_goes_to_the_next_party_in_turn():
    async def run() -> list[str]:
        lanes, served = FairLanes(total=1, per_party=1, queue_per_party=4), []

        async def batch(party: str) -> None:
            async with lanes.turn(party):
                served.append(party)
                await asyncio.sleep(0.01)
        burst = [asyncio.create_task(batch("hostile")) for _ in range(5)]      # 1 runs, 4 wait
        await asyncio.sleep(0)
        with pytest.raises(ServiceError, match="retry in"):                   # its queue is full
            await batch("hostile")
        honest = asyncio.create_task(batch("honest"))
        await asyncio.gather(*burst, honest)
        return served
    assert asyncio.run(run()) == ["hostile", "hostile", "honest", "hostile", "hostile", "hostile"]


def test_a_cancelled_wait_gives_its_place_up():
    async def run() -> int:
        lanes = FairLanes(total=1, per_party=1, queue_per_party=2)
        release = asyncio.Event()

        async def hold() -> None:
            async with lanes.turn("a"):
                await release.wait()
        holding = asyncio.create_task(hold())
        await asyncio.sleep(0)
        waiting = asyncio.create_task(hold())
        await asyncio.sleep(0)
        waiting.cancel()
        release.set()
        await holding
        await asyncio.gather(waiting, return_exceptions=True)
        return lanes.busy
    assert asyncio.run(run()) == 0


def register(stub, name: str) -> list[tuple[str, str]]:
    token = stub.Register(pb.RegisterRequest(name=name, x25519_public_key=os.urandom(32)), timeout=10).token
    return [("authorization", f"Bearer {token}")]


def open_round(stub, querier, holder: str) -> pb.SessionInfo:
    session = stub.OpenSession(pb.OpenSessionRequest(mode=pb.JOIN, holder=holder, scheme="ristretto"),
                               metadata=querier, timeout=30)
    header = pb.MessageHeader(session_id=session.session_id, kind="query", recipient=holder)
    stub.PutMessage(iter([pb.MessageChunk(header=header, data=b"sealed", last=True)]), metadata=querier, timeout=30)
    return session


def test_a_flooding_holder_waits_for_its_own_batches_and_others_go_on(fresh_keyholder):
    server = fresh_keyholder(extra=("--max-zero-tests", "2", "--max-zero-tests-party", "1",
                                    "--max-zero-tests-queued", "8"))
    stub = pb_grpc.KeyHolderStub(grpc.insecure_channel(server.address))
    evil_q, evil_h, honest_q, honest_h = (register(stub, n) for n in ("evilq", "evilh", "honq", "honh"))
    evil, honest = open_round(stub, evil_q, "evilh"), open_round(stub, honest_q, "honh")
    ciphertexts = get_scheme("ristretto").encrypt(evil.public_key, [os.urandom(64)]) * COMPARISONS

    def batch(session: pb.SessionInfo, seq: int, meta) -> float:
        started = time.monotonic()
        stub.SubmitComparisons(pb.ComparisonBatch(session_id=session.session_id, round=1, seq=seq,
                                                  ciphertexts=ciphertexts, row_comparisons=[64] * (COMPARISONS // 64),
                                                  attachments=[b"a"] * (COMPARISONS // 64)), metadata=meta, timeout=120)
        return time.monotonic() - started
    alone = batch(evil, 0, evil_h)
    with ThreadPoolExecutor(16) as pool:
        flood = [pool.submit(batch, evil, seq, evil_h) for seq in range(1, 11)]   # 1 runs, 8 wait, the rest refused
        time.sleep(0.3)
        started = time.monotonic()
        stub.GetParty(pb.GetPartyRequest(name="evilq"), metadata=honest_q, timeout=30)
        answered = time.monotonic() - started
        beside = batch(honest, 0, honest_h)
        refused = [f.exception() for f in flood if f.exception() is not None]
    print(f"batch alone {alone:.2f} s; beside 10 hostile batches: GetParty {answered * 1000:.0f} ms, honest batch "
          f"{beside:.2f} s (load {os.getloadavg()[0]:.1f})")
    assert refused and all(e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "retry in" in e.details()
                           for e in refused)
    assert len(refused) <= 2                          # the ones beyond one running and 8 waiting
    assert all("'evilh'" in e.details() and "hon" not in e.details() for e in refused)   # its own name only
    assert answered < 0.5
    assert beside < 2 * alone + 0.5                   # its own lane: not behind the hostile queue
