"""The speed floor (docs/protocol.md, "Speed reference"): raw arithmetic rates measured in this run.

Paillier (``Rates``, :func:`measure`): raw gmpy2 rates.

Per holder row ``h`` exponentiations mod n^2 (exponent uniform in [1, n)) at the
holder, ``h`` constant-time half-size exponentiations ``c^(p-1) mod p^2`` (``gmpy2.powmod_sec``,
the key holder's zero test, one per comparison whatever it finds) at the key holder, and
per querier slot one fixed-base encryption.  For the encryption we time the product's own primitive
``common.schemes.paillier.Encryptor.encrypt`` (a 32-entry comb over a
precomputed table: 31 multiplications mod n^2 plus ``(1 + m n)``), because raw
``gmpy2.powmod`` has no fixed-base mode; ``r^n mod n^2`` is printed for scale.

ristretto (``GroupRates``, :func:`measure_group`): raw libsodium calls on ristretto255.
"""
from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass, asdict

import gmpy2
from phe import paillier

from common.schemes.paillier import Encryptor, PublicKey


@dataclass
class Rates:
    """Seconds per operation, single core."""

    key_bits: int
    samples: int
    full_exp: float          # powmod(x, r < n, n^2)
    half_crt: float          # powmod_sec(c, p - 1, p^2): the zero test
    encrypt: float           # Encryptor.encrypt (fixed-base comb)
    encrypt_powmod: float    # r^n mod n^2 (textbook obfuscator, for scale only)

    def as_dict(self) -> dict:
        return {k: (round(v * 1e3, 4) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def _per_op(function, args: list, clock=time.perf_counter) -> float:
    started = clock()
    for a in args:
        function(*a)
    return (clock() - started) / len(args)


def measure(key_bits: int, samples: int = 200) -> Rates:
    """Time ``samples`` operations of each kind on one core (this thread)."""
    public, private = paillier.generate_paillier_keypair(n_length=key_bits)
    n = gmpy2.mpz(public.n)
    n2 = n * n
    p = gmpy2.mpz(private.p)
    p2, p1 = p * p, p - 1
    bases = [gmpy2.mpz(secrets.randbelow(int(n2) - 2) + 2) for _ in range(samples)]
    full = [gmpy2.mpz(secrets.randbelow(int(n) - 1) + 1) for _ in range(samples)]
    powmod = gmpy2.powmod
    full_exp = _per_op(powmod, [(b, r, n2) for b, r in zip(bases, full)])
    half_crt = _per_op(gmpy2.powmod_sec, [(b, p1, p2) for b in bases])
    encryptor = Encryptor(PublicKey(int(n)))
    messages = [secrets.randbelow(int(n)) for _ in range(samples)]
    encrypt = _per_op(encryptor.encrypt, [(m,) for m in messages])
    small = max(10, samples // 10)
    encrypt_powmod = _per_op(powmod, [(b % n, n, n2) for b in bases[:small]])
    return Rates(key_bits, samples, full_exp, half_crt, encrypt, encrypt_powmod)


def best(*rates: Rates) -> Rates:
    """Per operation, the fastest of several measurements (the floor is what the machine can do)."""
    first = rates[0]
    return Rates(first.key_bits, sum(r.samples for r in rates),
                 *(min(getattr(r, f) for r in rates)
                   for f in ("full_exp", "half_crt", "encrypt", "encrypt_powmod")))


def floor_seconds(rates: Rates, comparisons: int, slots: int, cores: int | None = None) -> dict:
    """The floor for a run with these counts, spread over ``cores`` cores (one zero test per comparison)."""
    cores = cores or os.cpu_count() or 1
    holder = comparisons * rates.full_exp
    keyholder = comparisons * rates.half_crt
    querier = slots * rates.encrypt
    return {"holder_cpu": holder, "keyholder_cpu": keyholder, "querier_cpu": querier,
            "cores": cores, "floor": (holder + keyholder + querier) / cores}


@dataclass
class GroupRates:
    """Seconds per libsodium call on ristretto255 (through rbcl), single core: the floor of the
    ``ristretto`` scheme; ``valid`` is the decoding itself."""

    samples: int
    mult: float              # crypto_scalarmult_ristretto255(r, P)
    base: float              # crypto_scalarmult_ristretto255_base(s)
    add: float               # crypto_core_ristretto255_add / _sub
    valid: float             # crypto_core_ristretto255_is_valid_point

    def as_dict(self) -> dict:
        return {k: (round(v * 1e3, 4) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def measure_group(samples: int = 2000, clock=time.perf_counter) -> GroupRates:
    """Time ``samples`` libsodium calls of each kind on ristretto255 on one core (``clock``: wall time by
    default; ``time.thread_time`` counts only this thread's CPU)."""
    import rbcl

    from common.schemes.ristretto import random_scalars
    scalars = random_scalars(samples)
    points = [rbcl.crypto_scalarmult_ristretto255_base(s) for s in scalars]
    pairs = list(zip(points, points[1:] + points[:1]))
    mult = _per_op(rbcl.crypto_scalarmult_ristretto255, list(zip(scalars, points)), clock)
    base = _per_op(rbcl.crypto_scalarmult_ristretto255_base, [(s,) for s in scalars], clock)
    add = (_per_op(rbcl.crypto_core_ristretto255_add, pairs, clock)
           + _per_op(rbcl.crypto_core_ristretto255_sub, pairs, clock)) / 2
    valid = _per_op(rbcl.crypto_core_ristretto255_is_valid_point, [(p,) for p in points], clock)
    return GroupRates(samples, mult, base, add, valid)


def best_group(*rates: GroupRates) -> GroupRates:
    """Per call, the fastest of several measurements."""
    return GroupRates(sum(r.samples for r in rates),
                      *(min(getattr(r, f) for r in rates) for f in ("mult", "base", "add", "valid")))


def floor_seconds_elgamal(rates: GroupRates, comparisons: int, slots: int, holder_terms: int,
                          cores: int | None = None) -> dict:
    """The floor of the ``ristretto`` scheme for a run with these counts (docs/protocol.md, "Comparison
    schemes"):

    - querier, per slot: ``k·G`` and ``X·G`` (fixed base), ``k·P`` and one addition;
    - holder, per slot: both points validated on receipt; per holder row and term: ``Y·G``;
      per comparison: one subtraction and two multiplications (``r·c1``, ``r·(c2 − Y·G)``);
    - key holder, per comparison: ``x·c1`` and the second point validated (a match's too: the
      zero test's work does not depend on its result).
    """
    cores = cores or os.cpu_count() or 1
    querier = slots * (2 * rates.base + rates.mult + rates.add)
    holder = slots * 2 * rates.valid + holder_terms * rates.base + comparisons * (rates.add + 2 * rates.mult)
    keyholder = comparisons * (rates.mult + rates.valid)
    return {"holder_cpu": holder, "keyholder_cpu": keyholder, "querier_cpu": querier,
            "cores": cores, "floor": (holder + keyholder + querier) / cores}


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.floor [--samples 20000]``: per-call libsodium costs on ristretto255 (the
    fastest of three rounds per call), in CPU time of the measuring thread (on a shared machine, wall
    time would count other processes' turns)."""
    import argparse
    parser = argparse.ArgumentParser(prog="python -m benchmarks.floor", description=main.__doc__)
    parser.add_argument("--samples", type=int, default=20000, help="calls per kind and round")
    args = parser.parse_args(argv)
    rates = best_group(*(measure_group(args.samples, time.thread_time) for _ in range(3)))
    print(f"{'µs of CPU per call, one core':38s} {'ristretto':>10s}")
    for field, what in (("mult", "variable-base scalar multiplication"), ("base", "fixed-base multiplication"),
                        ("add", "addition / subtraction"), ("valid", "validation of a received point")):
        print(f"{what:38s} {getattr(rates, field) * 1e6:10.1f}")
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
