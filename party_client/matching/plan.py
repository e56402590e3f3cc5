"""The cost of a linkage over comparison levels before anything runs: candidate pairs and comparisons per
blocking pass, querier ciphertexts, and the time each scheme would take.

The querier knows only its own table, so the holder is assumed to resemble it (as many rows, the same
block key frequencies) and every record to have one partner there.  A pass's candidate pairs are then
the partners that share the record's key (the share of true matches whose key parts agree, from the
model's m of each part's levels), the other records with the same key (the sum over keys of the squared
counts, less the record itself), and the pairs keyed buckets merge by chance (entries² / buckets, with
the buckets the risk check picks).  The time is the querier's ciphertexts plus the comparisons at the CPU
cost of each call timed on this machine when the plan is made (:func:`call_costs`), over its cores, with
the overhead measured on FEBRL 4 (``OVERHEAD``).
"""
from __future__ import annotations

import os
import time
from functools import lru_cache

import numpy as np
import pandas as pd

from common.schemes import get_scheme
from party_client.matching.blocking import plan_passes
from party_client.matching.fellegi_sunter import ELSE_LEVEL
from party_client.matching.level_rules import LevelRules, block_codes

# A run's wall time over its arithmetic floor with the three roles on idle cores: FEBRL 4 with the preset
# took 1.09-1.15x the CPU of its calls over 2 cores (ec 153.3 and 170.0 s, ristretto 82.4 and 86.3 s in two
# versions of the preset; benchmarks/README.md, "Linkage peers again, with slip and frequent"); the
# estimate takes the upper end.
OVERHEAD = 1.15
SAMPLE = {"paillier": 24}   # items per timed call (about 0.3 s per scheme)...
DEFAULT_SAMPLE = 256        # ...for the others
SCHEMES = ("ec", "ristretto", "paillier")


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


def estimated_seconds(ciphertexts: int, comparisons: int, cores: int | None = None) -> dict[str, float]:
    """Per scheme: the plan's calls at this machine's measured costs, over its cores, times ``OVERHEAD``."""
    cores = cores or os.cpu_count() or 1
    seconds = {}
    for name in SCHEMES:
        per_ciphertext, per_comparison = call_costs(name)
        seconds[name] = round(OVERHEAD * (ciphertexts * per_ciphertext + comparisons * per_comparison) / cores, 1)
    return seconds


def key_agreement(rules: LevelRules, parts: tuple[str, ...]) -> float:
    """The share of true matches whose block key agrees: per part the model's m of the levels that imply
    it (``exact`` for the value itself; for a transform the levels up to and including the level of that
    name, or every level but ``else`` when the field has no such level), multiplied; 1 without m."""
    share = 1.0
    for part in parts:
        name, _, transform = part.partition(":")
        m = rules.model.m.get(name)
        if not m:
            return 1.0
        levels = [level.name for level in rules.fields[name].levels]
        if not transform:
            share *= m.get("exact", 1.0)
        elif transform in levels:
            share *= sum(m[level] for level in levels[:levels.index(transform) + 1])
        else:
            share *= 1.0 - m.get(ELSE_LEVEL, 0.0)
    return share


def plan(rules: LevelRules, frame: pd.DataFrame, timed: bool = True) -> dict:
    """Per pass: querier entries, buckets, estimated candidate pairs and comparisons; totals, per record
    and (``timed``: the schemes' calls timed here, about a second) seconds per scheme."""
    codes = rules.codes(frame)
    layout = rules.layout()
    per_pair, slots = layout.comparisons, layout.slots
    keys = [block_codes(rules.model, codes, blocking) for blocking in rules.blocking]
    _, planned = plan_passes(rules.blocking, keys, rules.risk, len(frame))     # the buckets the risk allows
    passes = []
    for blocking, pass_keys, chosen in zip(rules.blocking, keys, planned):
        pass_keys = pass_keys[pass_keys != ""]
        entries = len(pass_keys)
        counts = pass_keys.value_counts().to_numpy(dtype=np.float64)
        partners = entries * key_agreement(rules, blocking.fields)
        others = float((counts ** 2).sum()) - entries
        merged = entries * entries / chosen.buckets if chosen.buckets else 0.0
        pairs = int(round(partners + others + merged))
        passes.append({"pass": blocking.name, "entries": entries, "buckets": chosen.buckets or "clear",
                       "candidate_pairs": pairs, "comparisons_per_pair": per_pair, "comparisons": pairs * per_pair})
    total = sum(p["comparisons"] for p in passes)
    ciphertexts = sum(p["entries"] for p in passes) * slots
    records = max(1, len(frame))
    return {"records": len(frame), "passes": passes, "comparisons": total, "ciphertexts": ciphertexts,
            "ciphertexts_per_entry": slots, "comparisons_per_record": round(total / records, 1),
            "cores": os.cpu_count() or 1,
            "seconds": estimated_seconds(ciphertexts, total) if timed else {}}


def plan_text(estimate: dict) -> str:
    """The plan as a few lines for the terminal."""
    lines = [f"{'pass':<28} {'entries':>8} {'pairs (est.)':>13} {'per pair':>9} {'comparisons':>12}"]
    for p in estimate["passes"]:
        lines.append(f"{p['pass']:<28} {p['entries']:>8,} {p['candidate_pairs']:>13,} {p['comparisons_per_pair']:>9,} "
                     f"{p['comparisons']:>12,}")
    seconds = ", ".join(f"{scheme} about {value:,.0f} s" for scheme, value in estimate["seconds"].items())
    lines.append(f"total {estimate['comparisons']:,} comparisons ({estimate['comparisons_per_record']:,} per record) and "
                 f"{estimate['ciphertexts']:,} querier ciphertexts ({estimate['ciphertexts_per_entry']} per entry); "
                 f"estimated time with the three roles on this machine's {estimate['cores']} idle cores "
                 f"(costs per call timed here just now): {seconds}")
    lines.append("(assumes the holder's table resembles yours and holds a partner for each of your records)")
    return "\n".join(lines)
