"""The cost of a linkage over comparison levels before anything runs: candidate pairs and comparisons per
blocking pass, and the time each scheme would take.

The querier knows only its own table, so the holder is assumed to resemble it (as many rows, the same
block key frequencies): a pass's candidate pairs are estimated as the sum over its clear keys of the
squared counts, plus the pairs keyed buckets merge by chance.  The rates are the comparisons per
second measured on FEBRL 4 by ``benchmarks/fuzzy_quality.py`` on a 2-core machine (README, "Speed").
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from party_client.matching.level_rules import LevelRules, block_codes

# comparisons per second, whole round (encryption, relay, blinded comparisons, zero tests), 2 cores
RATES = {"ec": 4_500.0, "paillier": 160.0}


def plan(rules: LevelRules, frame: pd.DataFrame) -> dict:
    """Per pass: querier entries, estimated candidate pairs and comparisons; totals and seconds per scheme."""
    codes = rules.codes(frame)
    per_pair = rules.layout().comparisons
    passes = []
    for blocking in rules.blocking:
        keys = block_codes(rules.model, codes, blocking)
        keys = keys[keys != ""]
        counts = keys.value_counts().to_numpy(dtype=np.float64)
        pairs = float((counts ** 2).sum())
        passes.append({"pass": blocking.name, "entries": int(len(keys)), "candidate_pairs": int(round(pairs)),
                       "comparisons_per_pair": per_pair, "comparisons": int(round(pairs)) * per_pair})
    total = sum(p["comparisons"] for p in passes)
    return {"records": len(frame), "passes": passes, "comparisons": total,
            "comparisons_per_record": round(total / max(1, len(frame)), 1),
            "seconds": {scheme: round(total / rate, 1) for scheme, rate in RATES.items()}}


def plan_text(estimate: dict) -> str:
    """The plan as a few lines for the terminal."""
    lines = [f"{'pass':<28} {'entries':>8} {'pairs (est.)':>13} {'per pair':>9} {'comparisons':>12}"]
    for p in estimate["passes"]:
        lines.append(f"{p['pass']:<28} {p['entries']:>8,} {p['candidate_pairs']:>13,} {p['comparisons_per_pair']:>9,} "
                     f"{p['comparisons']:>12,}")
    seconds = ", ".join(f"{scheme} about {value:,.0f} s" for scheme, value in estimate["seconds"].items())
    lines.append(f"total {estimate['comparisons']:,} comparisons ({estimate['comparisons_per_record']:,} per record); "
                 f"estimated time: {seconds}")
    return "\n".join(lines)
