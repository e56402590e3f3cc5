"""Does the querier's fixed-base encryption scale over cores?

    python -m benchmarks.encrypt_threads [--ops 4000] [--key-bits 2048]

``Encryptor.encrypt`` is 31 multiplications mod n^2 (plus one for ``1 + m n``):
gmpy2 releases the GIL only inside ``powmod``-like calls, not for ``*`` and
``%``, so the product's thread pool (``encrypt_slots`` -> ``worker_pool``) runs
these one at a time.  This times one thread, the product's thread pool, and a
fork-based process pool (ciphertexts returned as bytes) on the same work.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time

from phe import paillier

from benchmarks.exact_join import busy_cpu_seconds, cpu_seconds
from common.schemes.paillier import Encryptor, PublicKey, worker_pool

_ENCRYPTOR: Encryptor | None = None


def _work(count: int) -> list[bytes]:
    key = _ENCRYPTOR.key
    return [key.to_bytes(_ENCRYPTOR.encrypt_random()) for _ in range(count)]


def main(argv: list[str] | None = None) -> int:
    global _ENCRYPTOR
    parser = argparse.ArgumentParser(prog="python -m benchmarks.encrypt_threads", description=__doc__)
    parser.add_argument("--ops", type=int, default=4000)
    parser.add_argument("--key-bits", type=int, default=2048)
    args = parser.parse_args(argv)
    public, _ = paillier.generate_paillier_keypair(n_length=args.key_bits)
    _ENCRYPTOR = Encryptor(PublicKey(int(public.n)))
    cores = os.cpu_count() or 1
    parts = [args.ops // (4 * cores)] * (4 * cores)
    t = time.perf_counter()
    _work(sum(parts))
    one = time.perf_counter() - t
    pool = worker_pool()
    t = time.perf_counter()
    list(pool.map(_work, parts))
    threads = time.perf_counter() - t
    with mp.get_context("fork").Pool(cores) as processes:
        processes.map(_work, [1] * cores)  # start-up outside the timing
        pids = [worker.pid for worker in processes._pool]
        machine, ours = busy_cpu_seconds(), sum(cpu_seconds(pid) for pid in pids)
        t = time.perf_counter()
        processes.map(_work, parts)
        forked = time.perf_counter() - t
        machine, ours = busy_cpu_seconds() - machine, sum(cpu_seconds(pid) for pid in pids) - ours
    other = max(0.0, machine - ours) / forked
    ops = sum(parts)
    print(f"{ops} encryptions at {args.key_bits} bits, {cores} cores, load {os.getloadavg()[0]:.2f}")
    print(f"  one thread                    {one / ops * 1e3:.3f} ms/op")
    print(f"  worker_pool ({cores} threads)       {threads / ops * 1e3:.3f} ms/op  (speed-up {one / threads:.2f}x)")
    print(f"  fork process pool ({cores} procs)  {forked / ops * 1e3:.3f} ms/op  (speed-up {one / forked:.2f}x)")
    print(f"  (other work kept ~{other:.2f} of {cores} cores busy during the process-pool run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
