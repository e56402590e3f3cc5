"""The throttle of failed authentications (the key holder's answer to credential guessing), keyed on what
failed: the presented token, the client certificate, and (without mTLS) the address."""
from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict, deque
from typing import Callable

from keyholder.errors import ServiceError

#: Kinds of key, and how a refusal names them.
TOKEN, CERTIFICATE, ADDRESS = "token", "certificate", "address"
NAMES = {TOKEN: "with this token", CERTIFICATE: "with this client certificate", ADDRESS: "from this address"}


def failure_keys(token_digest: str | None, cert_name: str | None, peer: str | None) -> list[tuple[str, str]]:
    """What a failed authentication counts against: the token presented (by its digest; pass it only
    when the token itself is unknown or expired) and the caller's network identity, its client
    certificate under mTLS or else its address.  Behind one address (a NAT, loopback) parties with
    certificates are told apart, so one party's failures never count against another's certificate."""
    keys = []
    if token_digest:
        keys.append((TOKEN, token_digest))
    if cert_name is not None:
        keys.append((CERTIFICATE, cert_name))
    elif peer is not None:
        keys.append((ADDRESS, peer))
    return keys


class FailureThrottle:
    """Failed authentications per key (:func:`failure_keys`): above ``limit`` within ``window`` seconds a
    caller presenting failing credentials with that key is refused (RESOURCE_EXHAUSTED, "retry in N s")
    until the oldest failure ages out (OWASP Authentication Cheat Sheet, "Protect against automated
    attacks").  The throttle is consulted only once a credential has failed: a caller presenting a
    valid token is never refused by it, whoever else failed from the same address."""

    MAX_KEYS = 10_000          # per kind; the least recently failing key is forgotten first

    def __init__(self, limit: int, window: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit, self.window, self._clock = limit, window, clock
        self._failures: dict[str, OrderedDict[str, deque[float]]] = {kind: OrderedDict() for kind in NAMES}
        self._lock = threading.Lock()

    def _recent(self, kind: str, key: str, now: float) -> deque[float] | None:
        times = self._failures[kind].get(key)
        if times is None:
            return None
        while times and times[0] <= now - self.window:
            times.popleft()
        if not times:
            del self._failures[kind][key]
            return None
        return times

    def check_token(self, token_digest: str) -> None:
        """Refuse at once (no store lookup) a token that has failed ``limit`` times within the window: only
        unknown and expired tokens are counted, and neither becomes valid again (a renewal issues a new
        token), so a valid token is never refused here.  The refusal counts as a failure too."""
        now = self._clock()
        with self._lock:
            times = self._recent(TOKEN, token_digest, now)
            if times is None or len(times) < self.limit:
                return
            times.append(now)
            wait = times[-self.limit] + self.window - now
        seconds = max(1, math.ceil(wait))
        raise ServiceError("RESOURCE_EXHAUSTED", f"too many failed authentications {NAMES[TOKEN]}: "
                                                 f"retry in {seconds} s", retry_after=seconds)

    def failed(self, keys: list[tuple[str, str]]) -> None:
        """Count one failure against each key; raise RESOURCE_EXHAUSTED if any key is over the limit
        (this failure included), else return (the caller then refuses the credentials itself)."""
        now = self._clock()
        waits = []
        with self._lock:
            for kind, key in keys:
                times = self._recent(kind, key, now)
                table = self._failures[kind]
                if times is None:
                    if len(table) >= self.MAX_KEYS:
                        table.popitem(last=False)
                    times = table[key] = deque(maxlen=self.limit + 1)     # refused failures count too
                table.move_to_end(key)
                times.append(now)
                if len(times) > self.limit:
                    waits.append((times[-self.limit] + self.window - now, kind != TOKEN, kind))
        if waits:                        # the longest wait; on a tie the caller's certificate or address
            wait, _, kind = max(waits)
            seconds = max(1, math.ceil(wait))
            raise ServiceError("RESOURCE_EXHAUSTED", f"too many failed authentications {NAMES[kind]}: "
                                                     f"retry in {seconds} s", retry_after=seconds)
