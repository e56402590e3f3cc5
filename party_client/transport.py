"""The party's connection to the key holder: mTLS (or loopback plaintext),
bearer-token metadata, retries while the key holder is away, and one-line
errors for refusals.

Retries use exponential backoff with jitter (Brooker, "Exponential Backoff And
Jitter", AWS Architecture Blog, 2015) over a window measured from the last
successful contact with the key holder (a completed call, a streamed message,
or any moment the channel had a live connection), so a call in flight when
the key holder vanished gets the whole window.  A key holder never reached
fails after ``first_contact`` seconds; a TLS handshake failure within a
second or two.  Server streams resume where they stopped (the key holder sends
a message's bytes and a round's results in a fixed order, so the client
restarts the stream and skips what it already has); a client-streaming upload
is restarted unless ``settled`` shows that it went through.

Back-pressure is not a refusal: RESOURCE_EXHAUSTED carrying ``retry-after`` trailing metadata (or a
message ending "retry in N s") -- the failed-authentication throttle, a full key-generation queue, the
long-poll, stream and connection caps -- is retried after the time the key holder names (with jitter, never
sooner than the backoff) for up to the retry window from the first such answer, saying what it waits for.
"""
from __future__ import annotations

import os
import random
import re
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, TypeVar

os.environ.setdefault("GRPC_VERBOSITY", "ERROR")   # gRPC core would log each failed TLS handshake itself
import grpc  # noqa: E402

from common.net import is_loopback
from party_client.errors import PartyError  # noqa: E402
from party_client.identity import PartyDir  # noqa: E402
from party_client.waiting import Notice, human_seconds  # noqa: E402
from proto import linkage_pb2 as pb  # noqa: E402
from proto import linkage_pb2_grpc as pb_grpc  # noqa: E402

T = TypeVar("T")
MAX_MESSAGE_BYTES = 64 << 20
RETRY_WINDOW_SECONDS = 600.0        # since the last successful contact
FIRST_CONTACT_SECONDS = 30.0        # a key holder never reached
RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
RETRY_IN = re.compile(r"retry in (\d+(?:\.\d+)?) s\b")
TLS_MARKERS = ("ssl", "handshake", "certificate")
POLLER_TICK_SECONDS = 0.5          # > gRPC's connectivity poll of 0.2 s: the poller has ended by then
TLS_STRIKES = 2                     # consecutive TLS-looking failures before we call it a TLS problem


class ConnectionProblem(PartyError):
    """The key holder could not be talked to (a session in progress stays open)."""


class KeyHolderUnavailable(ConnectionProblem):
    """The key holder could not be reached within the retry window."""


class TlsProblem(ConnectionProblem):
    """The TLS handshake with the key holder fails: a configuration problem, not an outage."""


class KeyHolderRefusal(PartyError):
    """A definitive answer from the key holder (a gRPC status other than unavailable)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class RetryPolicy:
    """How long and how often to retry (pure arithmetic; see the module docstring)."""

    window: float = RETRY_WINDOW_SECONDS
    first_contact: float = FIRST_CONTACT_SECONDS
    initial_delay: float = 0.25
    factor: float = 2.0

    @property
    def max_delay(self) -> float:
        """At most 5 s between attempts, and several attempts within a short window."""
        return min(5.0, max(1.0, self.window / 10))

    def deadline(self, last_contact: float | None, first_attempt: float) -> float:
        """Give up ``window`` s after the last contact, or ``first_contact`` s after the first attempt."""
        return first_attempt + self.first_contact if last_contact is None else last_contact + self.window

    def delay(self, failures: int, draw: Callable[[], float] = random.random) -> float:
        """Backoff before attempt ``failures + 1``: capped exponential, "equal jitter" (half fixed, half random)."""
        base = min(self.max_delay, self.initial_delay * self.factor ** max(0, failures - 1))
        return base / 2 + draw() * base / 2


class Contact:
    """When the key holder was last heard from (monotonic seconds)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.first_attempt: float | None = None
        self._last: float | None = None
        self._live = False          # the channel has a working connection
        self._stalled = False       # a call timed out: a live channel alone no longer counts
        self._lock = threading.Lock()

    def attempt(self) -> None:
        with self._lock:
            if self.first_attempt is None:
                self.first_attempt = self.clock()

    def heard(self) -> None:
        with self._lock:
            self._last, self._stalled = self.clock(), False

    def timed_out(self) -> None:
        with self._lock:
            if self._live and not self._stalled:
                self._last = self.clock()
            self._stalled = True

    def channel(self, live: bool) -> None:
        with self._lock:
            if (live or self._live) and not self._stalled and self._last is not None:
                self._last = self.clock()
            self._live = live

    def last(self) -> float | None:
        with self._lock:
            if self._live and not self._stalled and self._last is not None:
                return self.clock()
            return self._last


def _detail(error: grpc.RpcError) -> str:
    """The useful end of gRPC's message, e.g. 'Socket closed' or 'Connection refused'."""
    text = (error.details() or error.code().name).splitlines()[0]
    found = re.search(r"ipv[46]:\S+?: (.*)$", text)
    return (found.group(1) if found else text).strip()


def retry_after(error: grpc.RpcError) -> float | None:
    """Seconds the key holder asks us to wait before retrying (back-pressure), or ``None`` (a refusal)."""
    if error.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
        return None
    for key, value in error.trailing_metadata() or ():
        if key == "retry-after":
            try:
                return max(0.0, float(value))
            except ValueError:
                break
    found = RETRY_IN.search(error.details() or "")
    return float(found.group(1)) if found else None


def looks_like_tls(detail: str, reached: bool) -> bool:
    """A TLS handshake failure: named as such, or (never reached) the server closing at once."""
    lowered = detail.lower()
    return any(m in lowered for m in TLS_MARKERS) or (not reached and "socket closed" in lowered)


def speaks_tls(address: str, timeout: float = 3.0) -> bool | None:
    """Whether the server at ``address`` answers a TLS handshake in TLS (True: it completes, or refuses
    with a TLS alert such as "certificate required"), answers in something else (False: a plaintext
    server), or says nothing before closing (None: e.g. a key holder at its connection cap closing new
    connections on arrival, which a plaintext client cannot tell from a TLS server refusing plaintext).
    Only the handshake is tried: no certificate is checked and nothing is sent after it."""
    host, _, port = address.rpartition(":")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as raw:
            with context.wrap_socket(raw):
                return True
    except (ssl.SSLEOFError, ssl.SSLZeroReturnError, ConnectionError, TimeoutError):
        return None
    except ssl.SSLError as error:
        return "ALERT" in (error.reason or "")
    except OSError:
        return None


class Connection:
    """A channel to the key holder on behalf of one party."""

    def __init__(self, party: PartyDir, address: str | None = None, insecure: bool = False,
                 tls_dir: Path | None = None, retry_window: float = RETRY_WINDOW_SECONDS,
                 first_contact: float = FIRST_CONTACT_SECONDS, notice: Notice | None = None) -> None:
        self.party = party
        self.address = address or party.keyholder
        if not self.address:
            raise PartyError("no key holder address: pass --keyholder HOST:PORT")
        if retry_window <= 0 or first_contact <= 0:
            raise PartyError("--retry-window and --connect-timeout must be positive")
        self.policy = RetryPolicy(retry_window, first_contact)
        self.contact = Contact()
        self.notice = notice or Notice()
        self.insecure = insecure
        self.tls_dir = Path(tls_dir) if tls_dir else party.tls_dir
        self._tls_strikes = 0
        self._failing_since: float | None = None
        host = self.address.rpartition(":")[0]
        options = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                   ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                   ("grpc.initial_reconnect_backoff_ms", 250),
                   ("grpc.max_reconnect_backoff_ms", int(self.policy.max_delay * 1000)),
                   ("grpc.keepalive_time_ms", 30_000), ("grpc.keepalive_timeout_ms", 10_000)]
        if insecure:
            if not is_loopback(host):
                raise PartyError(f"--insecure sends the token in plaintext and is refused for {host}")
            self.channel = grpc.insecure_channel(self.address, options=options)
        else:
            files = [self.tls_dir / name for name in ("ca.pem", "client.key", "client.pem")]
            missing = [f.name for f in files if not f.is_file()]
            if missing:
                raise PartyError(f"{self.tls_dir} lacks {', '.join(missing)}: issue a client certificate "
                                 "(`keyholder pki issue`) or use --insecure on loopback")
            credentials = grpc.ssl_channel_credentials(*(f.read_bytes() for f in files))
            self.channel = grpc.secure_channel(self.address, credentials, options=options)
        self.channel.subscribe(self._on_state, try_to_connect=False)
        self.stub = pb_grpc.KeyHolderStub(self.channel)

    def _on_state(self, state: grpc.ChannelConnectivity) -> None:
        self.contact.channel(state == grpc.ChannelConnectivity.READY)

    def close(self) -> None:
        """Stop watching the channel and close it.  gRPC's ``close`` waits for its connectivity
        poller's next tick (up to 0.2 s, measured 0.18 s a call), which would double a lookup's
        latency, so the channel is closed on a daemon thread: nothing of this call waits for it.
        That thread first lets the poller, which has nothing left to watch, end at its next tick:
        a channel closed under a running poller makes it raise in its own thread ("Cannot monitor
        channel state: Channel closed!", printed with a traceback)."""
        self.channel.unsubscribe(self._on_state)

        def close_after_the_poller() -> None:
            time.sleep(POLLER_TICK_SECONDS)
            self.channel.close()
        threading.Thread(target=close_after_the_poller, name="grpc-channel-close", daemon=True).start()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _metadata(self) -> list[tuple[str, str]]:
        token = self.party.token
        return [("authorization", f"Bearer {token}")] if token else []

    # -- calls ------------------------------------------------------------------
    def call(self, method: str, request: Any, timeout: float | None = 60.0, patient: bool = True) -> Any:
        """Unary call, retried while the key holder is away or asks us to wait (``patient=False``: one
        attempt)."""
        return self._retry(lambda: getattr(self.stub, method)(request, metadata=self._metadata(), timeout=timeout),
                           patient=patient, what=method)

    def upload(self, method: str, chunks: Callable[[], Iterator[Any]], timeout: float | None = None,
               settled: Callable[[], Any | None] | None = None) -> Any:
        """Client-streaming call; ``chunks`` is a factory so a retry restarts the stream.  Before a
        retry, ``settled()`` may return the reply instead (the upload had gone through)."""
        first = [True]

        def attempt():
            if not first[0] and settled is not None:
                done = settled()
                if done is not None:
                    return done
            first[0] = False
            return getattr(self.stub, method)(chunks(), metadata=self._metadata(), timeout=timeout)
        return self._retry(attempt, what=method)

    def stream(self, method: str, request: Any, split: Callable[[Any], Sequence] = lambda message: [message],
               length: Callable[[Any], int] = lambda unit: 1) -> Iterator[Any]:
        """Server-streaming call, resumed after a transport failure: the stream restarts and the
        units (``split`` of each message; ``length`` each) already delivered are skipped."""
        delivered, failures, busy = 0, 0, Busy()
        while True:
            self.contact.attempt()
            position = 0
            try:
                for message in getattr(self.stub, method)(request, metadata=self._metadata()):
                    self._succeeded()
                    failures = 0
                    for unit in split(message):
                        size = length(unit)
                        if position + size > delivered:
                            cut = delivered - position
                            delivered = position + size
                            yield unit[cut:] if cut else unit
                        position += size
                self._succeeded()
                return
            except grpc.RpcError as error:
                failures += 1
                self._after_failure(error, failures, busy=busy, what=method)

    # -- retries ------------------------------------------------------------------
    def _retry(self, attempt: Callable[[], T], patient: bool = True, what: str = "the call") -> T:
        failures, busy = 0, Busy()
        while True:
            self.contact.attempt()
            try:
                result = attempt()
            except grpc.RpcError as error:
                failures += 1
                self._after_failure(error, failures, patient, busy, what)
                continue
            self._succeeded()
            return result

    def _succeeded(self) -> None:
        self.contact.heard()
        self._tls_strikes = 0
        if self._failing_since is not None:
            if time.monotonic() - self._failing_since >= self.notice.first_after:
                self.notice.now(f"key holder at {self.address} reachable again")
            self._failing_since = None

    def _after_failure(self, error: grpc.RpcError, failures: int, patient: bool = True,
                       busy: "Busy | None" = None, what: str = "the call") -> None:
        """Raise if ``error`` is final; else say what we wait for (after ~2 s) and back off."""
        code = error.code()
        wait = retry_after(error)
        if wait is not None and patient and busy is not None:
            self._wait_out(error, wait, failures, busy, what)
            return
        if code not in RETRYABLE:
            raise KeyHolderRefusal(f"key holder refused ({code.name}): {error.details()}", code.name)
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            self.contact.timed_out()
        detail = _detail(error)
        last = self.contact.last()
        if looks_like_tls(detail, last is not None):
            self._tls_strikes += 1
            if self._tls_strikes >= TLS_STRIKES and self._tls_mismatch(detail):
                raise TlsProblem(self._tls_message(detail))
        else:
            self._tls_strikes = 0
        now = time.monotonic()
        if self._failing_since is None:
            self._failing_since = now
        deadline = self.policy.deadline(last, self.contact.first_attempt)
        if not patient or now >= deadline:
            raise KeyHolderUnavailable(self._gone_message(detail, last, now))
        pause = min(self.policy.delay(failures), deadline - now)     # the last attempt at the deadline
        if last is None:
            text = (f"key holder at {self.address} not reached yet ({detail}); trying for up to "
                    f"{human_seconds(deadline - now)} more (is it running? TLS or --insecure?)")
        else:
            text = (f"key holder at {self.address} unreachable ({detail}); retrying for up to "
                    f"{human_seconds(deadline - now)} (since last contact)")
        self.notice.say("keyholder", self._failing_since, text)
        time.sleep(pause)

    def _wait_out(self, error: grpc.RpcError, wait: float, failures: int, busy: "Busy", what: str) -> None:
        """Back-pressure: wait what the key holder asks (at least the backoff, with jitter) while within
        the retry window counted from its first such answer; then the refusal stands."""
        self.contact.heard()                     # it answered: the key holder is there
        now = time.monotonic()
        since = busy.start(now)
        deadline = since + self.policy.window
        detail = " ".join((error.details() or "").split())
        if now >= deadline:
            raise KeyHolderRefusal(f"key holder refused ({error.code().name}) for {human_seconds(now - since)}, "
                                   f"the retry window (--retry-window): {detail}", error.code().name)
        pause = min(max(wait * (1 + 0.2 * random.random()), self.policy.delay(failures)), deadline - now)
        text = (f"key holder at {self.address} asks to wait before {what} ({detail}); retrying for up to "
                f"{human_seconds(deadline - now)}")
        end = now + pause
        while (left := end - time.monotonic()) > 0:
            self.notice.say("busy", since, text)
            time.sleep(min(1.0, left))

    def _gone_message(self, detail: str, last: float | None, now: float) -> str:
        if last is None:
            return (f"key holder at {self.address} not reached within {human_seconds(self.policy.first_contact)} "
                    f"({detail}): is it running? TLS or --insecure?")
        return (f"key holder at {self.address} unreachable for {human_seconds(now - last)} since the last "
                f"contact (retry window {human_seconds(self.policy.window)}, --retry-window): {detail}")

    def _tls_mismatch(self, detail: str) -> bool:
        """A TLS problem for sure: gRPC names TLS, or (the server closed at once) the server's answer to a
        TLS handshake (:func:`speaks_tls`) shows it speaks TLS to this plaintext client, or, to this TLS
        client, speaks plaintext or TLS that refused our certificate.  A server that closes without a word
        is busy (at its connection cap), not misconfigured, and is retried."""
        if any(m in detail.lower() for m in TLS_MARKERS):
            return True
        answer = speaks_tls(self.address)
        return answer is True if self.insecure else answer is not None

    def _tls_message(self, detail: str) -> str:
        if self.insecure:
            hint = ("this client speaks plaintext (--insecure) and the key holder seems to require TLS: "
                    f"drop --insecure and use a client certificate ({self.tls_dir})")
        else:
            hint = (f"check that the key holder serves TLS (not --insecure), that {self.tls_dir}/ca.pem is its CA "
                    "and that client.pem was issued by that CA (`keyholder pki issue`)")
        return f"TLS handshake with the key holder at {self.address} failed ({detail}): {hint}"


class Busy:
    """When a call's run of back-pressure answers began (monotonic seconds)."""

    def __init__(self) -> None:
        self.since: float | None = None

    def start(self, now: float) -> float:
        if self.since is None:
            self.since = now
        return self.since


def register(party: PartyDir, connection: Connection) -> pb.RegisterReply:
    reply = connection.call("Register", pb.RegisterRequest(name=party.name,
                                                           x25519_public_key=party.public_key))
    party.save_token(reply.token)
    party.save_keyholder(connection.address, connection.insecure)
    return reply
