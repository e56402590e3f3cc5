"""The cost of a linkage over comparison levels before anything runs: pairs and comparisons per blocking
pass, querier ciphertexts, and the time each scheme would take.

Blocking passes are padded bins (docs/protocol.md, "Blocking passes as padded bins"): the holder compares
each of its rows having the pass's key with the ``2 * capacity`` entries of its key's two bins, whatever
they hold, so a pass costs exactly (holder rows with a key) x 2 x capacity pairs, and the querier's
ciphertexts are fixed by its own bins.  The querier knows only its own table, so the holder is assumed to
have as many rows with each pass's key as it has records (the one assumption: the count is exact when it
holds).  The time is the querier's ciphertexts plus the comparisons at the CPU cost of each call timed on
this machine when the plan is made (:func:`call_costs`), over its cores, with the overhead measured on
FEBRL 4 (``OVERHEAD``).
"""
from __future__ import annotations

import hashlib
import os
import time
from functools import lru_cache

import pandas as pd

from common.schemes import get_scheme
from party_client.matching.blocking import CHOICES, plan_passes
from party_client.matching.level_rules import LevelRules, block_codes

#: The dry-run places the bins under this fixed secret, so that the same table gives the same plan.
DRY_RUN_SECRET = hashlib.sha256(b"securelink-deid dry-run bins").digest()

# A run's wall time over its arithmetic floor with the three roles on idle cores: FEBRL 4 with the preset
# took 1.09-1.15x the CPU of its calls over 2 cores in four runs of two versions of the preset under two
# exponential-ElGamal groups (ristretto: 82.4 and 86.3 s; benchmarks/README.md, "Linkage peers again, with
# slip and frequent"); the estimate takes the upper end.
OVERHEAD = 1.15
SAMPLE = {"paillier": 24}   # items per timed call (about 0.3 s per scheme)...
DEFAULT_SAMPLE = 256        # ...for the others
SCHEMES = ("ristretto", "paillier")          # the fast one first


@lru_cache(maxsize=None)
def call_costs(scheme_name: str) -> tuple[float, float]:
    """CPU seconds on this machine, timed now, per querier ciphertext (its encryption and the holder's
    validation) and per comparison (the holder's blinded comparison and K's zero test), for a session
    key of the scheme's default size; most comparisons are non-zero, as in a linkage."""
    scheme = get_scheme(scheme_name)
    pair = scheme.generate_key(scheme.fixed_key_bits or 2048)        # K's default session key
    length, count = scheme.encoding_bytes(pair.public), SAMPLE.get(scheme_name, DEFAULT_SAMPLE)
    ours = [os.urandom(length) for _ in range(count)]
    theirs = ours[:count // 8] + [os.urandom(length) for _ in range(count - count // 8)]
    warm = scheme.encrypt(pair.public, ours[:2])                # one-time tables (Paillier's comb), first calls
    scheme.zero_test(pair.public, pair.private, scheme.compare(pair.public, warm, [0, 1], theirs[-2:]))
    started = time.process_time()
    query = scheme.encrypt(pair.public, ours)
    scheme.validate(pair.public, query)
    per_ciphertext = (time.process_time() - started) / count
    started = time.process_time()
    compared = scheme.compare(pair.public, query, list(range(count)), theirs)
    scheme.zero_test(pair.public, pair.private, compared)
    per_comparison = (time.process_time() - started) / count
    return per_ciphertext, per_comparison


def free_cores(cores: int, load: float) -> float:
    """The cores a new CPU-bound job gets beside ``load`` runnable others (the one-minute load average):
    an even share of the machine, ``cores * cores / (cores + load)`` (all of them when idle, half when the
    load fills them, a third at twice that)."""
    return cores * cores / (cores + max(0.0, load))


def estimated_seconds(ciphertexts: int, comparisons: int, cores: float | None = None) -> dict[str, float]:
    """Per scheme: the plan's calls at this machine's measured costs, over ``cores`` (default: the cores
    free at the current load, :func:`free_cores`), times ``OVERHEAD``."""
    cores = cores or free_cores(os.cpu_count() or 1, os.getloadavg()[0])
    seconds = {}
    for name in SCHEMES:
        per_ciphertext, per_comparison = call_costs(name)
        seconds[name] = round(OVERHEAD * (ciphertexts * per_ciphertext + comparisons * per_comparison) / cores, 1)
    return seconds


def plan(rules: LevelRules, frame: pd.DataFrame, timed: bool = True) -> dict:
    """Per pass: querier entries (its bins), records left out, pairs and comparisons for a holder with as
    many keyed rows; totals, per record and (``timed``: the schemes' calls timed here, about a second)
    seconds per scheme."""
    codes = rules.codes(frame)
    layout = rules.layout()
    per_pair, width = layout.comparisons + 1, layout.slots + 1          # + the gate
    keys = [block_codes(rules.model, codes, blocking) for blocking in rules.blocking]
    _, planned = plan_passes(rules.blocking, keys, DRY_RUN_SECRET)
    passes = []
    for blocking, pass_keys, chosen in zip(rules.blocking, keys, planned):
        holder_rows = int((pass_keys != "").sum())
        pairs = holder_rows * CHOICES * chosen.capacity
        passes.append({"pass": blocking.name, "entries": len(chosen.records), "bins": chosen.buckets,
                       "capacity": chosen.capacity, "records": chosen.placed, "left_out": chosen.left_out,
                       "holder_rows": holder_rows, "pairs": pairs, "comparisons_per_pair": per_pair,
                       "comparisons": pairs * per_pair})
    total = sum(p["comparisons"] for p in passes)
    cores, load = os.cpu_count() or 1, os.getloadavg()[0]
    ciphertexts = sum(p["entries"] for p in passes) * width
    records = max(1, len(frame))
    return {"records": len(frame), "passes": passes, "comparisons": total, "ciphertexts": ciphertexts,
            "ciphertexts_per_entry": width, "comparisons_per_record": round(total / records, 1),
            "cores": cores, "load": round(load, 2), "free_cores": round(free_cores(cores, load), 2),
            "seconds": estimated_seconds(ciphertexts, total, free_cores(cores, load)) if timed else {}}


def plan_text(estimate: dict) -> str:
    """The plan as a few lines for the terminal."""
    lines = [f"{'pass':<28} {'entries':>8} {'left out':>9} {'pairs':>10} {'per pair':>9} {'comparisons':>12}"]
    for p in estimate["passes"]:
        lines.append(f"{p['pass']:<28} {p['entries']:>8,} {p['left_out']:>9,} {p['pairs']:>10,} "
                     f"{p['comparisons_per_pair']:>9,} {p['comparisons']:>12,}")
    seconds = ", ".join(f"{scheme} about {value:,.0f} s" for scheme, value in estimate["seconds"].items())
    lines.append(f"total {estimate['comparisons']:,} comparisons ({estimate['comparisons_per_record']:,} per record) and "
                 f"{estimate['ciphertexts']:,} querier ciphertexts ({estimate['ciphertexts_per_entry']} per entry); "
                 f"estimated time with the three roles on this machine's {estimate['cores']} cores at load "
                 f"{estimate['load']:g} (as if {estimate['free_cores']:g} were free; costs per call timed here just "
                 f"now): {seconds}")
    lines.append("(each holder row with a pass's key is compared with 2 x capacity entries of that pass; the counts "
                 "assume the holder has as many rows with each key as you have records: they scale with its rows; "
                 "'left out': your records beyond their key's room in the bins, which that pass does not compare; "
                 "the run draws its bins afresh, so its counts can differ from these by a few records)")
    return "\n".join(lines)
