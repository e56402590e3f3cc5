"""A party's own Dask cluster for a scheme's batch functions (docs/protocol.md, "Scaling out").

The holder's blinded comparisons and the key holder's zero tests are pure batch functions (bytes
and ints in, bytes or booleans out, :mod:`common.schemes.base`), so a Dask distributed worker
runs exactly what the local thread pool runs.  This module is what both sides share: the
address rule (TLS, or plaintext on loopback only), connecting a client, scattering a round's
shared block once, submitting tasks whose arguments are only bytes, ints, str and lists of
those, and turning a lost scheduler into one clear error.  Dask pickles task arguments inside
the cluster; nothing between *parties* ever goes through it (their messages stay protobuf).

Dask is an optional extra (``pip install "securelink-deid[dask]"``): it is imported here, lazily,
and nowhere else.  TLS certificates come from Dask's own configuration
(``distributed.comm.tls.*``, e.g. ``DASK_DISTRIBUTED__COMM__TLS__CA_FILE``), as for any Dask client.
See Rocklin, "Dask: Parallel Computation with Blocked algorithms and Task Scheduling", SciPy 2015.
"""
from __future__ import annotations

import logging
import threading
import time
import uuid
from concurrent.futures import CancelledError, TimeoutError as FutureTimeout
from typing import Any, Callable
from urllib.parse import urlsplit

from common.net import is_loopback

log = logging.getLogger("securelink.dask")

INSTALL_HINT = 'the Dask extra is not installed: pip install "securelink-deid[dask]"'
CONNECT_SECONDS = 30.0      # default --dask-timeout: reaching the scheduler, each call to it, Dask's reconnection window
POLL_SECONDS = 0.5          # a waiting result checks the scheduler connection (and its caller's stop) this often
NOTICE_SECONDS = 2.0        # a result awaited this long is logged (then every NOTICE_EVERY s)
NOTICE_EVERY = 10.0
CLOSE_SECONDS = 2.0         # closing the client never takes longer (its scheduler may be gone)
RESUBMITS = 5               # a task whose scattered input was lost is resubmitted this often at most
HEARTBEAT_SECONDS = 2.0     # the scheduler is asked for a sign of life this often (at most a quarter of the timeout)


class DaskUnavailable(ValueError):
    """``--dask`` without the extra installed, or a scheduler address the rule refuses (bad input)."""


class ClusterLost(RuntimeError):
    """The Dask scheduler cannot be reached (or went away): the round stops, nothing partial is finished.
    ``in_round`` tells a lost cluster (work was under way) from one never reached."""

    def __init__(self, message: str, in_round: bool = True) -> None:
        super().__init__(message)
        self.in_round = in_round


def _distributed():
    try:
        import distributed
    except ImportError:
        raise DaskUnavailable(INSTALL_HINT) from None
    return distributed


def check_scheduler_address(address: str, allow_plaintext: bool) -> str:
    """The scheduler address, if the rule allows it: ``tls://`` always; plaintext (``tcp://`` or no
    scheme) only to a loopback host and only with ``allow_plaintext``.  ``DaskUnavailable`` otherwise."""
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    if parts.scheme not in ("tls", "tcp") or not parts.hostname or parts.port is None:
        raise DaskUnavailable(f"--dask {address!r}: give a scheduler address tls://HOST:PORT "
                              "(or tcp://127.0.0.1:PORT on loopback)")
    if parts.scheme == "tcp":
        if not is_loopback(parts.hostname):
            raise DaskUnavailable(f"--dask {address}: a plaintext scheduler address must be on loopback; "
                                  "use tls:// (Dask TLS) for a cluster across machines")
        if not allow_plaintext:
            raise DaskUnavailable(f"--dask {address}: plaintext scheduler refused; use tls:// or add --insecure "
                                  "(loopback only)")
    return f"{parts.scheme}://{parts.netloc}"


def add_timeout_option(parser: Any) -> None:
    """``--dask-timeout SECONDS`` on a command that takes ``--dask`` (``party hold``, ``keyholder serve``)."""
    parser.add_argument("--dask-timeout", type=float, default=CONNECT_SECONDS, metavar="SECONDS",
                        help="with --dask: how long to wait for the scheduler (at start, for each call to it, and "
                             "for Dask's reconnection after the scheduler is lost)")


def connect(address: str, timeout: float = CONNECT_SECONDS) -> Any:
    """A ``distributed.Client`` of the scheduler at ``address`` (TLS settings from Dask's config).
    ``timeout`` bounds the first connection, every later connection attempt of this process
    (``distributed.comm.timeouts.connect``) and the client's reconnection window after a loss."""
    distributed = _distributed()
    if not timeout > 0:
        raise DaskUnavailable(f"--dask-timeout must be positive, not {timeout:g}")
    import dask
    dask.config.set({"distributed.comm.timeouts.connect": f"{timeout}s"})
    log.warning("connecting to the Dask scheduler at %s (waiting up to %.0f s)", address, timeout)
    try:
        client = distributed.Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, FutureTimeout) as error:
        raise ClusterLost(f"cannot reach the Dask scheduler at {address}: {error}", in_round=False) from None
    workers = client.nthreads()
    log.warning("Dask scheduler %s: %d worker(s), %d thread(s)", address, len(workers), sum(workers.values()))
    return client


def released(function: Callable, *args: Any) -> Any:
    """Run ``function(*args)`` on a worker thread whose gmpy2 arithmetic releases the GIL (a worker's
    threads then use every core, as the local pool's do, :mod:`common.schemes.pool`)."""
    from common.schemes.pool import release_gil
    release_gil()
    return function(*args)


_PLAIN = (bytes, int, str, bool, type(None))


def _plain(value: Any) -> bool:
    """Bytes, ints, str, bools, lists/tuples of those, or numpy arrays: all a task may receive."""
    if isinstance(value, _PLAIN):
        return True
    if isinstance(value, (list, tuple)):
        return all(isinstance(v, _PLAIN) for v in value)
    return type(value).__module__ == "numpy" and type(value).__name__ == "ndarray"


class Cluster:
    """Submits pure batch functions to one Dask client; one object per process, used by many rounds.

    ``timeout`` is the client's (:func:`connect`): it bounds every call to the scheduler, so a
    scheduler that is gone or frozen costs at most that long, and :meth:`close` ends every wait
    on the cluster at once."""

    def __init__(self, client: Any, timeout: float = CONNECT_SECONDS) -> None:
        self.client = client
        self.timeout = timeout
        self.address = str(client.scheduler.address if client.scheduler else "?")
        self._closed = threading.Event()
        self._heard = time.monotonic()           # the scheduler's last answer to a heartbeat
        self._declared_lost = False
        self._heartbeat = threading.Thread(target=self._beat, name="dask-heartbeat", daemon=True)
        self._heartbeat.start()

    # -- heartbeat: a scheduler that still holds its connections but no longer answers (frozen, swapped
    # out, stuck) is never noticed by Dask's own client; silent for the timeout it is declared lost.
    def _beat(self) -> None:
        every = max(0.1, min(HEARTBEAT_SECONDS, self.timeout / 4))
        while not self._closed.wait(every):
            if self.client.status not in ("running", "newly-created"):
                continue                         # Dask is reconnecting (or gave up): available() says so
            try:
                self.client.nthreads(callback_timeout=self.timeout)
            except Exception:                    # noqa: BLE001 - no answer: the silence grows
                continue
            self._heard = time.monotonic()
            if self._declared_lost:
                self._declared_lost = False
                log.warning("the Dask scheduler at %s answers again", self.address)

    def silent_for(self) -> float:
        """Seconds since the scheduler last answered a heartbeat."""
        return time.monotonic() - self._heard

    def _silent(self) -> bool:
        """Whether the scheduler has been silent for the timeout (logged once, at WARNING, when declared lost)."""
        silent = self.silent_for()
        if silent < self.timeout:
            return False
        if not self._declared_lost and not self._closed.is_set():
            self._declared_lost = True
            log.warning("the Dask scheduler at %s has not answered for %.0f s (--dask-timeout %.0f s): declared lost",
                        self.address, silent, self.timeout)
        return True

    @classmethod
    def at(cls, address: str, allow_plaintext: bool, timeout: float = CONNECT_SECONDS) -> "Cluster":
        return cls(connect(check_scheduler_address(address, allow_plaintext), timeout), timeout)

    def available(self) -> bool:
        """Whether the client is connected now (False while Dask reconnects, and after :meth:`close`)."""
        return (not self._closed.is_set() and self.client.status in ("running", "newly-created")
                and not self._silent())

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def threads(self) -> int:
        """Worker threads in the cluster now (at least 1)."""
        self._check()
        try:
            return max(1, sum(self.client.nthreads(callback_timeout=self.timeout).values()))
        except Exception as error:       # noqa: BLE001 - any comm failure means the scheduler is gone
            raise self._lost(error) from None

    def _lost(self, error: BaseException) -> ClusterLost:
        reason = " ".join((str(error).splitlines() or ["connection lost"])[0].split()) or "no answer"
        return ClusterLost(f"the Dask scheduler at {self.address} is gone ({type(error).__name__}: {reason})")

    def _check(self) -> None:
        if self._closed.is_set():
            raise ClusterLost(f"the Dask client of {self.address} was closed")
        if self._silent():
            raise ClusterLost(f"the Dask scheduler at {self.address} has not answered for {self.silent_for():.0f} s "
                              f"(--dask-timeout {self.timeout:.0f} s): declared lost")
        if not self.available():
            raise ClusterLost(f"the Dask scheduler at {self.address} is gone (client {self.client.status})")

    def scatter(self, value: bytes) -> "Shared":
        """Place ``value`` (a round's query block) on the workers once; tasks name it by its key."""
        return Shared(self, value)

    def _scatter(self, value: bytes) -> Any:
        self._check()
        try:
            return self.client.scatter(value, broadcast=True, hash=False, timeout=self.timeout)
        except Exception as error:       # noqa: BLE001
            raise self._lost(error) from None

    def submit(self, function: Callable, *args: Any) -> "Task":
        """``function(*args)`` on a worker; ``args`` are plain values or :meth:`scatter` results."""
        for arg in args:
            if not (isinstance(arg, Shared) or _plain(arg)):
                raise TypeError(f"task arguments are bytes, ints, str and lists of those, not {type(arg).__name__}")
        return Task(self, function, args)

    def _submit(self, function: Callable, args: tuple) -> Any:
        self._check()
        plain = [arg.live() if isinstance(arg, Shared) else arg for arg in args]
        try:
            return self.client.submit(released, function, *plain, key=f"{function.__name__}-{uuid.uuid4().hex}")
        except Exception as error:       # noqa: BLE001
            raise self._lost(error) from None

    def close(self, timeout: float = CLOSE_SECONDS) -> None:
        """End every wait on this cluster (they raise :class:`ClusterLost`) and close the client within
        ``timeout`` seconds.  The scheduler then releases this client's tasks, pending or running, so
        nothing keeps computing for a party that stopped; a scheduler that is gone delays nothing."""
        if self._closed.is_set():
            return
        self._closed.set()
        dask_log = logging.getLogger("distributed.client")
        level = dask_log.level
        dask_log.setLevel(logging.CRITICAL)      # a reconnection cut short logs its cancellation as an error
        try:
            self.client.close(timeout=timeout)
        except Exception as error:               # noqa: BLE001 - the scheduler is gone or does not answer
            log.warning("the Dask client of %s did not close cleanly within %.0f s (%s); left behind",
                        self.address, timeout, type(error).__name__)
        finally:
            dask_log.setLevel(level)


class Shared:
    """A scattered block.  Scattered data has no recipe to recompute it, and Dask may keep a single
    replica (its active memory manager drops extra copies), so a killed worker can take the block
    with it: :meth:`live` then scatters it again (the holder still holds it)."""

    def __init__(self, cluster: Cluster, value: bytes) -> None:
        self.cluster = cluster
        self.value = value
        self.future = cluster._scatter(value)
        self._lock = threading.Lock()

    def lost(self) -> bool:
        return self.future.status in ("lost", "cancelled", "error")

    def live(self) -> Any:
        with self._lock:
            if self.lost():
                log.warning("a Dask worker was lost with the round's query block; scattering it again")
                self.future = self.cluster._scatter(self.value)
            return self.future


class Task:
    """A submitted batch seen like a ``concurrent.futures.Future`` (``result(timeout)``, ``cancel()``).

    A worker killed while running it: Dask reruns it elsewhere.  Its scattered input lost with a
    worker: the input is scattered again and the task resubmitted (at most :data:`RESUBMITS` times).
    The scheduler lost, or the cluster closed: :class:`ClusterLost`.  The task's own error is
    re-raised as itself.  A result awaited longer than :data:`NOTICE_SECONDS` is logged (what and
    how long), so a stalled cluster is never a silent wait."""

    def __init__(self, cluster: Cluster, function: Callable, args: tuple) -> None:
        self.cluster = cluster
        self.function = function
        self.args = args
        self.future = cluster._submit(function, args)
        self._done = self._watch()
        self.submitted = time.monotonic()
        self._notice = self.submitted + NOTICE_SECONDS      # when a wait is next logged
        self._attempts = 0                                  # resubmissions so far

    def _resubmit(self) -> None:
        if self._attempts >= RESUBMITS:
            raise ClusterLost(f"the Dask cluster at {self.cluster.address} keeps losing this round's data "
                              f"({self._attempts} attempts)")
        self.cancel()
        self.future = self.cluster._submit(self.function, self.args)
        self._done = self._watch()
        self._attempts += 1

    def _watch(self) -> threading.Event:
        """Set when the current future is finished, errs or is cancelled.  Waiting on it rather than on
        ``Future.result(timeout)`` keeps the waits of many threads off the client's event loop (a
        timed-out ``result`` there can fail with an internal error when many threads wait at once)."""
        done = threading.Event()
        self.future.add_done_callback(lambda _: done.set())
        return done

    def result(self, timeout: float | None = None) -> Any:
        """The task's result; ``concurrent.futures.TimeoutError`` if not there within ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = POLL_SECONDS if deadline is None else max(0.01, min(POLL_SECONDS, deadline - time.monotonic()))
            try:
                if self._done.wait(wait):
                    return self.future.result()
                raise FutureTimeout()
            except (TimeoutError, FutureTimeout):
                self.cluster._check()
                if any(isinstance(arg, Shared) and arg.lost() for arg in self.args):
                    self._resubmit()
                now = time.monotonic()
                if now >= self._notice:
                    silent = self.cluster.silent_for()
                    if silent >= 2 * HEARTBEAT_SECONDS:  # the scheduler itself is quiet: worth a warning
                        log.warning("waiting for a %s task on the Dask cluster at %s (%.0f s so far); the scheduler "
                                    "has not answered for %.0f s and is declared lost at %.0f s (--dask-timeout)",
                                    self.function.__name__, self.cluster.address, now - self.submitted, silent,
                                    self.cluster.timeout)
                    else:
                        log.info("waiting for a %s task on the Dask cluster at %s (%.0f s so far)",
                                 self.function.__name__, self.cluster.address, now - self.submitted)
                    self._notice = now + NOTICE_EVERY
                if deadline is not None and now >= deadline:
                    raise FutureTimeout() from None
            except CancelledError as error:      # connection to the scheduler lost, or an input forgotten
                if not self.cluster.available():
                    raise self.cluster._lost(error) from None
                self._resubmit()
            except OSError as error:             # CommClosedError and friends
                raise self.cluster._lost(error) from None

    def cancel(self) -> None:
        """Release the task: the scheduler drops it (pending or running) unless another client wants
        it.  Never blocks (a message on the client's stream, not a call awaiting the scheduler)."""
        try:
            self.future.release()
        except Exception:                        # noqa: BLE001
            pass
