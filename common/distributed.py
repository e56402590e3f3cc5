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

import ipaddress
import logging
import threading
import uuid
from concurrent.futures import CancelledError, TimeoutError as FutureTimeout
from typing import Any, Callable
from urllib.parse import urlsplit

log = logging.getLogger("securelink.dask")

INSTALL_HINT = 'the Dask extra is not installed: pip install "securelink-deid[dask]"'
CONNECT_SECONDS = 30.0      # a scheduler never reached is reported after this long
POLL_SECONDS = 1.0          # a waiting result checks the scheduler connection this often
RESUBMITS = 5               # a task whose scattered input was lost is resubmitted this often at most


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


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (``localhost``, 127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


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


def connect(address: str, timeout: float = CONNECT_SECONDS) -> Any:
    """A ``distributed.Client`` of the scheduler at ``address`` (TLS settings from Dask's config)."""
    distributed = _distributed()
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
    """Submits pure batch functions to one Dask client; one object per process, used by many rounds."""

    def __init__(self, client: Any) -> None:
        self.client = client

    @classmethod
    def at(cls, address: str, allow_plaintext: bool) -> "Cluster":
        return cls(connect(check_scheduler_address(address, allow_plaintext)))

    @property
    def address(self) -> str:
        return str(self.client.scheduler.address if self.client.scheduler else "?")

    def threads(self) -> int:
        """Worker threads in the cluster now (at least 1)."""
        try:
            return max(1, sum(self.client.nthreads().values()))
        except Exception as error:       # noqa: BLE001 - any comm failure means the scheduler is gone
            raise self._lost(error) from None

    def _lost(self, error: BaseException) -> ClusterLost:
        reason = " ".join((str(error).splitlines() or ["connection lost"])[0].split())
        return ClusterLost(f"the Dask scheduler at {self.address} is gone ({type(error).__name__}: {reason})")

    def _check(self) -> None:
        if self.client.status not in ("running", "newly-created"):
            raise ClusterLost(f"the Dask scheduler at {self.address} is gone (client {self.client.status})")

    def scatter(self, value: bytes) -> "Shared":
        """Place ``value`` (a round's query block) on the workers once; tasks name it by its key."""
        return Shared(self, value)

    def _scatter(self, value: bytes) -> Any:
        self._check()
        try:
            return self.client.scatter(value, broadcast=True, hash=False)
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

    def close(self) -> None:
        try:
            self.client.close(timeout=5)
        except Exception:                # noqa: BLE001 - closing a client whose scheduler is gone
            pass


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
    """A submitted batch seen like a ``concurrent.futures.Future`` (``result()``, ``cancel()``).

    A worker killed while running it: Dask reruns it elsewhere.  Its scattered input lost with a
    worker: the input is scattered again and the task resubmitted (at most :data:`RESUBMITS` times).
    The scheduler lost: :class:`ClusterLost`.  The task's own error is re-raised as itself."""

    def __init__(self, cluster: Cluster, function: Callable, args: tuple) -> None:
        self.cluster = cluster
        self.function = function
        self.args = args
        self.future = cluster._submit(function, args)

    def _resubmit(self, attempts: int) -> int:
        if attempts >= RESUBMITS:
            raise ClusterLost(f"the Dask cluster at {self.cluster.address} keeps losing this round's data "
                              f"({attempts} attempts)")
        self.cancel()
        self.future = self.cluster._submit(self.function, self.args)
        return attempts + 1

    def result(self) -> Any:
        attempts = 0
        while True:
            try:
                return self.future.result(timeout=POLL_SECONDS)
            except (TimeoutError, FutureTimeout):
                self.cluster._check()
                if any(isinstance(arg, Shared) and arg.lost() for arg in self.args):
                    attempts = self._resubmit(attempts)
            except CancelledError as error:      # connection to the scheduler lost, or an input forgotten
                if self.cluster.client.status not in ("running", "newly-created"):
                    raise self.cluster._lost(error) from None
                attempts = self._resubmit(attempts)
            except OSError as error:             # CommClosedError and friends
                raise self.cluster._lost(error) from None

    def cancel(self) -> None:
        try:
            self.future.cancel()
        except Exception:                        # noqa: BLE001
            pass
