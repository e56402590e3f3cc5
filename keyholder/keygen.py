"""Session key generation off the serving process: a fair scheduler of per-party queues in front of a
few worker processes, each party within a budget of key-generation time.

A Paillier key is a search for two large primes; ``gmpy2.next_prime`` holds the GIL throughout (0.3 s
to over a second for a 4096-bit modulus), so generated in the key holder's own process it would stall
the event loop and every other party's calls.  Costly keys (:attr:`common.schemes.base.Scheme.costly_keys`)
are therefore generated in worker processes.  Each party's requests wait in a queue of their own (at
most ``queue`` long, RESOURCE_EXHAUSTED with "retry in N s" above that); the workers take the parties
round-robin, one running job per party at a time, and a party whose budget of worker seconds is spent
waits until it refills (a token bucket: ``seconds_per_minute`` seconds of generation per minute, as a
burst or spread out).  So one party churning sessions costs the others at most one job's wait, and the
machine at most its budget.  Keys of cheap schemes (one scalar draw, microseconds) are made at once.
"""
from __future__ import annotations

import logging
import math
import multiprocessing
import os
import sys
import threading
import time
from collections import OrderedDict, deque
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field

from common.schemes import KeyPair, Scheme, get_scheme
from keyholder.errors import ServiceError

log = logging.getLogger("keyholder")


def _generate(scheme_name: str, bits: int) -> tuple[bytes, bytes, float]:
    """In a worker process: a key pair and the CPU seconds it took."""
    started = time.process_time()
    key = get_scheme(scheme_name).generate_key(bits)
    return key.public, key.private, time.process_time() - started


def _ready() -> bool:
    return True


def _quiet_worker() -> None:
    """Worker initializer: a worker reports through its futures only.  Its stderr is closed so that a
    worker orphaned by a killed key holder (its task pipe at end of file) exits without a traceback in
    the key holder's log."""
    sys.stderr = open(os.devnull, "w")


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


class KeyFactory:
    """Generates session keys fairly across parties (see the module docstring)."""

    def __init__(self, workers: int, queue: int, seconds_per_minute: float) -> None:
        self.workers, self.queue_limit = workers, queue
        self.burst, self.rate = seconds_per_minute, seconds_per_minute / 60.0
        self._parties: OrderedDict[str, _Party] = OrderedDict()   # round-robin order: the next served first
        self._running = 0
        self._lock = threading.RLock()           # a job that fails at submission finishes within _dispatch
        self._pool: ProcessPoolExecutor | None = None
        self._timer: threading.Timer | None = None
        self._closed = False

    # -- the pool -----------------------------------------------------------------------------------
    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:                # spawned, not forked: the serving process runs gRPC threads
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_quiet_worker)
        return self._pool

    def warm(self) -> None:
        """Start the worker processes now (in the background) so that the first costly key does not wait
        for them."""
        with self._lock:
            for _ in range(self.workers):
                self._executor().submit(_ready)

    def close(self) -> None:
        """Stop the workers; queued requests fail with UNAVAILABLE."""
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
            queued = [job for party in self._parties.values() for job in party.queue]
            self._parties.clear()
            pool, self._pool = self._pool, None
        for job in queued:
            if job.future.set_running_or_notify_cancel():
                job.future.set_exception(ServiceError("UNAVAILABLE", "the key holder is stopping: retry in 5 s",
                                                      retry_after=5))
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

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
        now = time.monotonic()
        with self._lock:
            if self._closed:
                raise ServiceError("UNAVAILABLE", "the key holder is stopping: retry in 5 s", retry_after=5)
            state = self._parties.get(party)
            if state is None:
                state = self._parties[party] = _Party(budget=self.burst, updated=now)
            self._refill(state, now)
            if len(state.queue) >= self.queue_limit:
                wait = max(1, math.ceil(max(0.0, -state.budget) / self.rate + state.mean_cost))
                raise ServiceError("RESOURCE_EXHAUSTED",
                                   f"{self.queue_limit} key generations of '{party}' are already queued "
                                   f"(at most {self.burst:g} s of key generation per party and minute): "
                                   f"retry in {wait} s", retry_after=wait)
            state.queue.append(_Job(scheme.name, bits, future))
            self._dispatch(now)
        return future

    def _refill(self, state: _Party, now: float) -> None:
        state.budget = min(self.burst, state.budget + (now - state.updated) * self.rate)
        state.updated = now

    def _dispatch(self, now: float) -> None:
        """Start queued jobs while workers are free: round-robin over the parties that have a job, none
        running, and budget left (called with the lock held)."""
        wake = None
        for name in list(self._parties):
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
            self._parties.move_to_end(name)           # served: last in the round-robin order
            self._start(name, job)
        self._forget_idle()
        if wake is not None and self._running < self.workers and not self._closed:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(wake + 0.01, self._redispatch)
            self._timer.daemon = True
            self._timer.start()

    def _start(self, name: str, job: _Job) -> None:
        try:
            work = self._executor().submit(_generate, job.scheme, job.bits)
        except (BrokenProcessPool, RuntimeError) as error:
            work = Future()
            work.set_exception(error)
        work.add_done_callback(lambda done: self._finished(name, job, done))

    def _redispatch(self) -> None:
        with self._lock:
            self._timer = None
            if not self._closed:
                self._dispatch(time.monotonic())

    def _forget_idle(self) -> None:
        """Parties with nothing queued or running and a full budget are dropped (memory stays bounded)."""
        now = time.monotonic()
        for name in [n for n, s in self._parties.items() if not s.queue and not s.running
                     and s.budget + (now - s.updated) * self.rate >= self.burst]:
            del self._parties[name]

    def _finished(self, name: str, job: _Job, done: Future) -> None:
        error = done.exception()
        with self._lock:
            self._running -= 1
            state = self._parties.get(name)
            if state is not None:
                state.running = False
                if error is None:
                    cost = done.result()[2]
                    state.budget -= cost
                    state.mean_cost = 0.7 * state.mean_cost + 0.3 * cost
            if isinstance(error, BrokenProcessPool) and self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = None                      # a worker died: the next job starts a fresh pool
            if not self._closed:
                self._dispatch(time.monotonic())
        if error is None:
            public, private, _ = done.result()
            job.future.set_result(KeyPair(public=public, private=private))
        elif isinstance(error, (BrokenProcessPool, RuntimeError)):
            log.warning("key generation was interrupted (%s); the caller is asked to retry", type(error).__name__)
            job.future.set_exception(ServiceError("UNAVAILABLE", "key generation was interrupted: retry in 1 s",
                                                  retry_after=1))
        else:
            job.future.set_exception(error)
