"""The key factory's fairness on a clock the test sets: a party's burst and refill, the round-robin order
between parties, the queue limit and its "retry in N s", and the forgetting of idle parties.  The
worker processes are stand-ins answering at once with a declared CPU cost (keyholder/keygen.py's
real workers are driven by tests/keyholder/test_quotas.py)."""
from __future__ import annotations

import threading

import pytest

from common.schemes import get_scheme
from keyholder.errors import ServiceError
from keyholder.keygen import KeyFactory
from tests.linkhelpers import FakeClock

PAILLIER = get_scheme("paillier")      # costly keys: queued and budgeted


class Workers:
    """Stand-in workers: each key "costs" ``cost`` CPU seconds; ``served`` records the bits asked, in order
    (the tests use the bits to name a request)."""

    def __init__(self, cost: float) -> None:
        self.cost, self.served, self.gate = cost, [], threading.Event()
        self.gate.set()

    def __call__(self) -> "Workers":
        return self

    def generate(self, scheme: str, bits: int) -> tuple[bytes, bytes, float]:
        self.gate.wait(10)
        self.served.append(bits)
        return b"public", b"private", self.cost

    def close(self) -> None:
        pass


def factory(workers: Workers, clock: FakeClock, queue: int = 4, seconds_per_minute: float = 20.0) -> KeyFactory:
    made = KeyFactory(workers=1, per_party_queue=queue, seconds_per_minute=seconds_per_minute, clock=clock,
                      worker=workers)
    return made


def settle(*futures) -> None:
    for future in futures:
        future.result(timeout=10)


def test_a_party_spends_its_burst_then_waits_for_its_budget_to_refill():
    clock, workers = FakeClock(), Workers(cost=10.0)
    keys = factory(workers, clock)                    # 20 s a minute: a burst of 10 s, 1/3 s refilled per s
    try:
        first = keys.submit("a", PAILLIER, 1)
        settle(first)
        second = keys.submit("a", PAILLIER, 2)        # budget 10 - 10 = 0: waits
        assert not second.done() and workers.served == [1]
        clock.now = 15.0                              # 5 s refilled
        keys._redispatch()
        settle(second)
        assert workers.served == [1, 2]
    finally:
        keys.close()


def test_parties_are_served_round_robin_one_job_each_at_a_time():
    clock, workers = FakeClock(), Workers(cost=0.1)
    keys = factory(workers, clock, seconds_per_minute=600.0)
    workers.gate.clear()                               # the first job holds the one worker
    try:
        a = [keys.submit("a", PAILLIER, bits) for bits in (11, 12, 13)]
        b = keys.submit("b", PAILLIER, 21)
        c = keys.submit("c", PAILLIER, 31)
        workers.gate.set()
        settle(*a, b, c)
        assert workers.served == [11, 21, 31, 12, 13]   # a's queue never starves b and c
    finally:
        keys.close()


def test_a_full_queue_is_refused_with_the_wait_its_debt_and_cost_give():
    clock, workers = FakeClock(), Workers(cost=12.0)
    keys = factory(workers, clock, queue=2)
    try:
        settle(keys.submit("a", PAILLIER, 1))          # budget 10 - 12 = -2 s: in debt
        queued = [keys.submit("a", PAILLIER, bits) for bits in (2, 3)]
        with pytest.raises(ServiceError) as refused:
            keys.submit("a", PAILLIER, 4)
        # debt 2 s at 1/3 s per s = 6 s, plus the party's mean cost (0.7 * 1 + 0.3 * 12 = 4.3 s): 11 s
        assert refused.value.code == "RESOURCE_EXHAUSTED" and refused.value.retry_after == 11
        assert "2 key generations of 'a' are already queued" in str(refused.value)
        settle(keys.submit("b", PAILLIER, 5))          # another party is served meanwhile
        assert not any(f.done() for f in queued) and workers.served == [1, 5]
    finally:
        keys.close()


def test_a_cancelled_request_is_dropped_and_idle_parties_are_forgotten():
    clock, workers = FakeClock(), Workers(cost=10.0)
    keys = factory(workers, clock)
    try:
        settle(keys.submit("a", PAILLIER, 1))
        waiting = keys.submit("a", PAILLIER, 2)
        assert waiting.cancel()
        clock.now = 60.0                               # refilled to the full burst, nothing queued
        settle(keys.submit("b", PAILLIER, 3))
        assert workers.served == [1, 3] and "a" not in keys._parties
    finally:
        keys.close()


def test_a_cheap_scheme_is_made_at_once_outside_the_budget():
    clock, workers = FakeClock(), Workers(cost=100.0)
    keys = factory(workers, clock)
    try:
        settle(keys.submit("a", PAILLIER, 1))          # deep in debt
        made = keys.submit("a", get_scheme("ristretto"), 256)
        assert made.done() and made.result().public and workers.served == [1]
    finally:
        keys.close()
