"""The throttle of failed authentications on a clock the test sets: the limit within the window, the
wait it names, the ageing out of failures, tokens refused before any lookup, and the bound on keys
remembered (keyholder/throttle.py; the served refusals are driven by tests/keyholder/test_quotas.py)."""
from __future__ import annotations

import pytest

from keyholder.errors import ServiceError
from keyholder.throttle import ADDRESS, CERTIFICATE, TOKEN, FailureThrottle, failure_keys
from tests.linkhelpers import FakeClock


def test_failures_beyond_the_limit_are_refused_until_the_oldest_ages_out():
    clock = FakeClock()
    throttle = FailureThrottle(limit=3, window=60.0, clock=clock)
    for second in (0.0, 10.0, 20.0):
        clock.now = second
        throttle.failed([(ADDRESS, "10.0.0.1")])
    clock.now = 30.0
    with pytest.raises(ServiceError, match=r"from this address: retry in 40 s$") as refused:
        throttle.failed([(ADDRESS, "10.0.0.1")])            # the 4th within 60 s, and it counts too:
    assert refused.value.code == "RESOURCE_EXHAUSTED" and refused.value.retry_after == 40
    throttle.failed([(ADDRESS, "10.0.0.2")])                 # another address is not counted with it
    clock.now = 69.0
    with pytest.raises(ServiceError, match=r"retry in 11 s$"):
        throttle.failed([(ADDRESS, "10.0.0.1")])             # 10, 20, 30 and this one: 20 + 60 - 69
    clock.now = 80.0                                         # the wait named: 20 ages out, 30 and 69 remain
    throttle.failed([(ADDRESS, "10.0.0.1")])


def test_a_failing_token_is_refused_before_lookup_and_a_refusal_counts():
    clock = FakeClock()
    throttle = FailureThrottle(limit=2, window=60.0, clock=clock)
    throttle.check_token("digest")                           # never failed: nothing to refuse
    throttle.failed([(TOKEN, "digest")])
    clock.now = 1.0
    throttle.check_token("digest")
    throttle.failed([(TOKEN, "digest")])                     # the limit reached, not passed
    clock.now = 2.0
    with pytest.raises(ServiceError, match=r"with this token: retry in 59 s$"):
        throttle.check_token("digest")                       # refused before any lookup
    clock.now = 59.0
    with pytest.raises(ServiceError, match=r"with this token: retry in 3 s$"):
        throttle.check_token("digest")                       # the refusal at 2 s counted: 2 + 60 - 59
    clock.now = 120.0
    throttle.check_token("digest")


def test_the_longest_wait_is_named_and_a_tie_names_the_callers_certificate():
    clock = FakeClock()
    throttle = FailureThrottle(limit=1, window=60.0, clock=clock)
    keys = failure_keys("digest", "hospital", "10.0.0.1")
    assert keys == [(TOKEN, "digest"), (CERTIFICATE, "hospital")]    # under mTLS the address is not used
    throttle.failed(keys)
    with pytest.raises(ServiceError, match="with this client certificate: retry in 60 s$"):
        throttle.failed(keys)


def test_the_keys_remembered_are_bounded_least_recent_first():
    clock = FakeClock()
    throttle = FailureThrottle(limit=1, window=60.0, clock=clock)
    throttle.MAX_KEYS = 3
    for address in ("a", "b", "c", "d"):
        throttle.failed([(ADDRESS, address)])
    assert list(throttle._failures[ADDRESS]) == ["b", "c", "d"]
    throttle.failed([(ADDRESS, "a")])                        # forgotten: a first failure again, not refused
