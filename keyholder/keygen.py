"""Session key generation off the serving process: a fair scheduler of per-party queues in front of a
few worker processes, each party within a budget of key-generation time.

A Paillier key is a search for two large primes; ``gmpy2.next_prime`` holds the GIL throughout (0.3 s
to over a second for a 4096-bit modulus), so generated in the key holder's own process it would stall
the event loop and every other party's calls.  Costly keys (:attr:`common.schemes.base.Scheme.costly_keys`)
are therefore generated in worker processes.  Each party's requests wait in a queue of their own (at
most ``queue`` long, RESOURCE_EXHAUSTED with "retry in N s" above that); the workers take the parties
round-robin, one running job per party at a time, and a party whose budget of worker seconds is spent
waits until it refills (a token bucket: ``seconds_per_minute`` seconds of generation per minute, at most
half of it at once).  So one party churning sessions costs the others at most one job's wait, and the
machine at most its budget.  Keys of cheap schemes (one scalar draw, microseconds) are made at once.

A worker is this module run as a program (``python -m keyholder.keygen``): it reads "SCHEME BITS" lines
on stdin and answers each with the key's raw bytes on stdout -- no pickle, no multiprocessing.  It
exits when its stdin closes, so a key holder that dies leaves no worker behind.
"""
from __future__ import annotations

import logging
import math
import os
import queue
import struct
import subprocess
import sys
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable

from common.schemes import KeyPair, Scheme, get_scheme
from keyholder.errors import ServiceError

log = logging.getLogger("keyholder")
ROOT = Path(__file__).resolve().parent.parent
KEY, FAILED = b"K", b"E"                 # a worker's answer: a key pair, or an error message
KEY_HEADER = struct.Struct(">IId")       # public length, private length, CPU seconds


class WorkerLost(RuntimeError):
    """A worker process ended (killed, or out of memory) before answering."""


def _read(stream: BinaryIO, count: int) -> bytes:
    data = stream.read(count)
    if data is None or len(data) != count:
        raise WorkerLost("the key generation worker ended")
    return data


def serve_requests(requests: BinaryIO, answers: BinaryIO) -> None:
    """The worker's loop: one "SCHEME BITS" line in, one key (or one error) out, until end of input."""
    while line := requests.readline():
        started = time.process_time()
        try:
            name, bits = line.decode().split()
            key = get_scheme(name).generate_key(int(bits))
            answer = KEY + KEY_HEADER.pack(len(key.public), len(key.private), time.process_time() - started) \
                + key.public + key.private
        except Exception as error:       # noqa: BLE001 - told to the key holder, which refuses the call
            message = f"{type(error).__name__}: {error}".encode()[:500]
            answer = FAILED + struct.pack(">I", len(message)) + message
        answers.write(answer)
        answers.flush()


class _Worker:
    """One worker process, spoken to in raw bytes over its stdin and stdout."""

    def __init__(self) -> None:
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        self.process = subprocess.Popen([sys.executable, "-m", "keyholder.keygen"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        env={**os.environ, "PYTHONPATH": path})

    def generate(self, scheme: str, bits: int) -> tuple[bytes, bytes, float]:
        """(public, private, CPU seconds); ``ValueError`` if the scheme refused, :class:`WorkerLost`."""
        try:
            self.process.stdin.write(f"{scheme} {bits}\n".encode())
            self.process.stdin.flush()
        except OSError as error:
            raise WorkerLost(f"the key generation worker ended ({error})") from None
        out = self.process.stdout
        kind = _read(out, 1)
        if kind == KEY:
            public_length, private_length, cost = KEY_HEADER.unpack(_read(out, KEY_HEADER.size))
            return _read(out, public_length), _read(out, private_length), cost
        (length,) = struct.unpack(">I", _read(out, 4))
        raise ValueError(_read(out, length).decode(errors="replace"))

    def close(self) -> None:
        try:
            self.process.stdin.close()           # the worker's loop ends at end of input
            self.process.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()


@dataclass
class _Job:
    scheme: str
    bits: int
    future: Future


@dataclass
class _Party:
    budget: float                        # worker seconds it may use now (negative: in debt)
    updated: float                       # when the budget was last refilled
    queue: deque = field(default_factory=deque)
    running: bool = False
    mean_cost: float = 1.0               # recent seconds per key (for "retry in N s")
    served: int = 0                      # when it was last served (a count of jobs started); 0: never


class KeyFactory:
    """Generates session keys fairly across parties (see the module docstring)."""

    def __init__(self, workers: int, per_party_queue: int, seconds_per_minute: float,
                 clock: Callable[[], float] = time.monotonic, worker: Callable[[], "_Worker"] | None = None) -> None:
        """``clock`` and ``worker`` (a new worker process) are the real ones unless a test gives others."""
        self.workers, self.queue_limit = workers, per_party_queue
        self._clock, self._new_worker = clock, worker or _Worker
        self.burst, self.rate = seconds_per_minute / 2, seconds_per_minute / 60.0   # a burst never floods
        self._parties: dict[str, _Party] = {}     # in order of arrival
        self._started = 0                            # jobs started, numbering ``_Party.served``
        self._running = 0
        self._lock = threading.RLock()
        self._idle: queue.SimpleQueue[_Worker] = queue.SimpleQueue()      # at most ``workers`` processes
        self._threads = ThreadPoolExecutor(workers, thread_name_prefix="keygen")   # each waits on one worker
        self._timer: threading.Timer | None = None
        self._closed = False

    # -- the pool -----------------------------------------------------------------------------------
    def warm(self) -> None:
        """Start the worker processes now so that the first costly key does not wait for them."""
        for _ in range(self.workers):
            self._idle.put(self._new_worker())

    def close(self) -> None:
        """Stop the workers; queued requests fail with UNAVAILABLE."""
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
            queued = [job for party in self._parties.values() for job in party.queue]
            self._parties.clear()
        for job in queued:
            if job.future.set_running_or_notify_cancel():
                job.future.set_exception(ServiceError("UNAVAILABLE", "the key holder is stopping: retry in 5 s",
                                                      retry_after=5))
        self._threads.shutdown(wait=False, cancel_futures=True)
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                break

    # -- requests -----------------------------------------------------------------------------------
    def submit(self, party: str, scheme: Scheme, bits: int) -> "Future[KeyPair]":
        """A key pair of ``scheme`` for ``party`` (a future; cancelling it drops a queued request)."""
        future: Future = Future()
        if not scheme.costly_keys:
            future.set_running_or_notify_cancel()
            try:
                future.set_result(scheme.generate_key(bits))
            except Exception as error:   # noqa: BLE001 - handed to the caller as the future's exception
                future.set_exception(error)
            return future
        now = self._clock()
        with self._lock:
            if self._closed:
                raise ServiceError("UNAVAILABLE", "the key holder is stopping: retry in 5 s", retry_after=5)
            state = self._parties.get(party)
            if state is None:
                state = self._parties[party] = _Party(budget=self.burst, updated=now)
            self._refill(state, now)
            state.queue = deque(job for job in state.queue if not job.future.cancelled())   # callers gone
            if len(state.queue) >= self.queue_limit:
                wait = max(1, math.ceil(max(0.0, -state.budget) / self.rate + state.mean_cost))
                raise ServiceError("RESOURCE_EXHAUSTED",
                                   f"{self.queue_limit} key generations of '{party}' are already queued "
                                   f"(at most {60 * self.rate:g} s of key generation per party and minute): "
                                   f"retry in {wait} s", retry_after=wait)
            state.queue.append(_Job(scheme.name, bits, future))
            self._dispatch(now)
        return future

    def _refill(self, state: _Party, now: float) -> None:
        state.budget = min(self.burst, state.budget + (now - state.updated) * self.rate)
        state.updated = now

    def _dispatch(self, now: float) -> None:
        """Start queued jobs while workers are free: round-robin over the parties that have a job, none
        running, and budget left, the least recently served first and parties never served before all
        others, in order of arrival (called with the lock held)."""
        wake = None
        for name in sorted(self._parties, key=lambda n: self._parties[n].served):   # a stable sort
            if self._running >= self.workers:
                break
            state = self._parties[name]
            while state.queue and state.queue[0].future.cancelled():
                state.queue.popleft()
            if not state.queue or state.running:
                continue
            self._refill(state, now)
            if state.budget <= 0:
                due = -state.budget / self.rate
                wake = due if wake is None else min(wake, due)
                continue
            job = state.queue.popleft()
            if not job.future.set_running_or_notify_cancel():
                continue
            state.running = True
            self._running += 1
            self._started += 1
            state.served = self._started              # served: last in the round-robin order
            self._start(name, job)
        self._forget_idle()
        if wake is not None and self._running < self.workers and not self._closed:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(wake + 0.01, self._redispatch)
            self._timer.daemon = True
            self._timer.start()

    def _start(self, name: str, job: _Job) -> None:
        self._threads.submit(self._run, name, job)

    def _run(self, name: str, job: _Job) -> None:
        """On a pool thread (waiting for the worker's answer holds no GIL): one job on an idle worker."""
        worker, cost, result, error = None, 0.0, None, None
        try:
            try:
                worker = self._idle.get_nowait()
            except queue.Empty:                  # a job running holds its worker: never more than ``workers``
                worker = self._new_worker()
            public, private, cost = worker.generate(job.scheme, job.bits)
            result = KeyPair(public=public, private=private)
        except ValueError as refused:
            error = ServiceError("INVALID_ARGUMENT", f"no key: {refused}")
        except Exception as lost:                # noqa: BLE001 - WorkerLost, or no process could be started
            log.warning("key generation was interrupted (%s); the caller is asked to retry", lost)
            if worker is not None:
                worker.close()
                worker = None
            error = ServiceError("UNAVAILABLE", "key generation was interrupted: retry in 1 s", retry_after=1)
        if worker is not None:
            if self._closed:
                worker.close()
            else:
                self._idle.put(worker)
        self._finished(name, job, cost, result, error)

    def _redispatch(self) -> None:
        with self._lock:
            self._timer = None
            if not self._closed:
                self._dispatch(self._clock())

    def _forget_idle(self) -> None:
        """Parties with nothing queued or running and a full budget are dropped (memory stays bounded)."""
        now = self._clock()
        for name in [n for n, s in self._parties.items() if not s.queue and not s.running
                     and s.budget + (now - s.updated) * self.rate >= self.burst]:
            del self._parties[name]

    def _finished(self, name: str, job: _Job, cost: float, result: KeyPair | None,
                  error: Exception | None) -> None:
        with self._lock:
            self._running -= 1
            state = self._parties.get(name)
            if state is not None:
                state.running = False
                if error is None:
                    state.budget -= cost
                    state.mean_cost = 0.7 * state.mean_cost + 0.3 * cost
            if not self._closed:
                self._dispatch(self._clock())
        if error is None:
            job.future.set_result(result)
        else:
            job.future.set_exception(error)


if __name__ == "__main__":               # a worker process (see the module docstring)
    serve_requests(sys.stdin.buffer, sys.stdout.buffer)
