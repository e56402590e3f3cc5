"""Do libsodium's Ed25519 calls (through PyNaCl) scale over cores with threads, or only with processes?

    python -m benchmarks.ec_threads [--ops 20000] [--batch 500]

PyNaCl calls libsodium through cffi, which releases the GIL around each C call; the Python
wrapper around it (argument checks, buffer allocation) runs under the GIL.  This times ``--ops``
variable-base scalar multiplications (``crypto_scalarmult_ed25519_noclamp``) on one thread, on a
thread pool with one thread per core, and on a fork-based process pool fed raw bytes (scalars
and points concatenated, results returned concatenated), then the same for the scheme's own ``compare`` batches, then the cost of each libsodium
operation and of one encryption, comparison and zero test of the ``ec`` scheme
(common/schemes/ec.py).
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from nacl.bindings import (
    crypto_core_ed25519_add,
    crypto_core_ed25519_is_valid_point,
    crypto_core_ed25519_scalar_reduce,
    crypto_core_ed25519_sub,
    crypto_scalarmult_ed25519_base_noclamp,
    crypto_scalarmult_ed25519_noclamp,
)

from benchmarks.exact_join import busy_cpu_seconds, cpu_seconds
from common.schemes.ec import EcScheme, random_scalar


def _mults(raw: bytes) -> bytes:
    """``s_i · P_i`` for the concatenated 64-byte items ``s_i ‖ P_i`` of ``raw``."""
    return b"".join(crypto_scalarmult_ed25519_noclamp(raw[at:at + 32], raw[at + 32:at + 64])
                    for at in range(0, len(raw), 64))


def _compare_chunk(task: tuple[bytes, bytes, bytes]) -> bytes:
    """The scheme's ``compare`` on raw bytes: public key, query block, concatenated 64-byte encodings."""
    public, query, encodings = task
    ys = [encodings[at:at + 64] for at in range(0, len(encodings), 64)]
    return EcScheme().compare(public, query, [i // 2 for i in range(len(ys))], ys)


class _Timer:
    """Wall time of a run and the cores other work kept busy meanwhile (machine CPU minus ours)."""

    def __init__(self, pids: list[int] = ()) -> None:
        self.pids = list(pids)

    def _ours(self) -> float:
        return time.process_time() + sum(cpu_seconds(pid) for pid in self.pids)

    def __enter__(self) -> "_Timer":
        self._machine, self._own, self._t = busy_cpu_seconds(), self._ours(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.elapsed = time.perf_counter() - self._t
        other = (busy_cpu_seconds() - self._machine) - (self._ours() - self._own)
        self.other = max(0.0, other) / self.elapsed


def three_ways(work: Callable[[object], bytes], tasks: list, items: int, workers: int) -> dict[str, tuple]:
    """Items per second and other load for ``work`` over ``tasks``: one thread, a thread pool and a
    fork-based process pool of ``workers``; the three must return the same bytes where ``work`` is
    deterministic (checked by the caller)."""
    out: dict[str, tuple] = {}
    with _Timer() as timer:
        one = [work(task) for task in tasks]
    out["1 thread"] = (items / timer.elapsed, timer.other, one)
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(work, tasks[:workers]))  # start-up outside the timing
        with _Timer() as timer:
            threaded = list(pool.map(work, tasks))
        out[f"{workers} threads"] = (items / timer.elapsed, timer.other, threaded)
    with mp.get_context("fork").Pool(workers) as processes:
        processes.map(work, tasks[:workers])
        with _Timer([worker.pid for worker in processes._pool]) as timer:
            forked = processes.map(work, tasks)
        out[f"{workers} processes"] = (items / timer.elapsed, timer.other, forked)
    return out


def scaling(ops: int, batch: int, workers: int) -> dict[str, tuple]:
    """Scalar multiplications (raw libsodium calls on raw bytes) per second, three ways."""
    items = [random_scalar() + crypto_scalarmult_ed25519_base_noclamp(random_scalar()) for _ in range(64)]
    raw = b"".join(items[i % len(items)] for i in range(ops))
    chunks = [raw[at:at + 64 * batch] for at in range(0, len(raw), 64 * batch)]
    out = three_ways(_mults, chunks, ops, workers)
    results = [result for _, _, result in out.values()]
    assert all(result == results[0] for result in results)
    return out


def compare_scaling(comparisons: int, batch: int, workers: int) -> dict[str, tuple]:
    """The ``ec`` scheme's comparisons per second (``compare`` batches fed raw bytes), three ways."""
    scheme = EcScheme()
    key = scheme.generate_key(256)
    query = scheme.encrypt(key.public, [os.urandom(64) for _ in range(batch // 2)])
    tasks = [(key.public, query, b"".join(os.urandom(64) * 2 for _ in range(batch // 2)))
             for _ in range(max(comparisons // batch, 4 * workers))]
    return three_ways(_compare_chunk, tasks, len(tasks) * (batch // 2) * 2, workers)


def _per_op(fn: Callable[[], object], count: int) -> float:
    t = time.perf_counter()
    for _ in range(count):
        fn()
    return (time.perf_counter() - t) / count


def operation_costs(count: int) -> dict[str, float]:
    """Seconds per libsodium call and per scheme operation (one item of a batch)."""
    s = random_scalar()
    p, q = (crypto_scalarmult_ed25519_base_noclamp(random_scalar()) for _ in range(2))
    scheme = EcScheme()
    key = scheme.generate_key(256)
    n = max(count // 10, 50)
    xs = [os.urandom(64) for _ in range(n)]
    query = scheme.encrypt(key.public, xs)
    positions = [i for i in range(n) for _ in range(2)]  # a holder row: h = 2 positions, one encoding
    ys = [xs[i] if i % 4 == 0 else os.urandom(64) for i in range(n) for _ in range(2)]
    comparisons = scheme.compare(key.public, query, positions, ys)
    costs = {
        "scalarmult (variable base, checks its point)": _per_op(lambda: crypto_scalarmult_ed25519_noclamp(s, p), count),
        "scalarmult_base": _per_op(lambda: crypto_scalarmult_ed25519_base_noclamp(s), count),
        "point add": _per_op(lambda: crypto_core_ed25519_add(p, q), count),
        "point sub": _per_op(lambda: crypto_core_ed25519_sub(p, q), count),
        "is_valid_point": _per_op(lambda: crypto_core_ed25519_is_valid_point(p), count),
        "scalar_reduce (64 bytes)": _per_op(lambda: crypto_core_ed25519_scalar_reduce(xs[0]), count),
        "random_scalar": _per_op(random_scalar, count),
    }
    t = time.perf_counter()
    scheme.encrypt(key.public, xs)
    costs["ec encrypt (per ciphertext)"] = (time.perf_counter() - t) / n
    t = time.perf_counter()
    scheme.validate(key.public, query)
    costs["ec validate (per ciphertext)"] = (time.perf_counter() - t) / n
    t = time.perf_counter()
    scheme.compare(key.public, query, positions, ys)
    costs["ec compare (per comparison, h = 2)"] = (time.perf_counter() - t) / len(positions)
    t = time.perf_counter()
    results = scheme.zero_test(key.public, key.private, comparisons)
    costs["ec zero_test (per comparison, 1/4 zero)"] = (time.perf_counter() - t) / len(positions)
    assert sum(results) == n // 2
    return costs


def _print_rates(title: str, rates: dict[str, tuple], unit: str, cores: int) -> None:
    print(title)
    base = rates["1 thread"][0]
    for name, (rate, other, _) in rates.items():
        print(f"  {name:<12} {rate:9.0f} {unit}/s  (x{rate / base:.2f}; other work kept {other:.2f} "
              f"of {cores} cores busy)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ec_threads", description=__doc__)
    parser.add_argument("--ops", type=int, default=20000, help="scalar multiplications per run")
    parser.add_argument("--batch", type=int, default=500, help="multiplications (comparisons) per task")
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    print(f"{cores} cores, load {os.getloadavg()[0]:.2f}")
    _print_rates(f"{args.ops} scalar multiplications (crypto_scalarmult_ed25519_noclamp)",
                 scaling(args.ops, args.batch, cores), "ops", cores)
    _print_rates(f"{args.ops // 4} ec comparisons (EcScheme.compare, h = 2), batches of {args.batch}",
                 compare_scaling(args.ops // 4, args.batch, cores), "comparisons", cores)
    print("per operation:")
    for name, seconds in operation_costs(min(args.ops, 5000)).items():
        print(f"  {name:<44} {seconds * 1e6:8.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
