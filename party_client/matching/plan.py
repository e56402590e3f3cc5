"""The cost of a linkage over comparison levels before anything runs: candidate pairs and comparisons per
blocking pass, querier ciphertexts, and the time each scheme would take.

The querier knows only its own table, so the holder is assumed to resemble it (as many rows, the same
block key frequencies) and every record to have one partner there.  A pass's candidate pairs are then
the partners that share the record's key (the share of true matches whose key parts agree, from the
model's m of each part's levels), the other records with the same key (the sum over keys of the squared
counts, less the record itself), and the pairs keyed buckets merge by chance (entries² / buckets, with
the buckets the risk check picks).  The time is the querier's ciphertexts plus the comparisons, at the
rates measured by ``benchmarks/fuzzy_quality.py`` on an idle 2-core machine (README, "Speed").
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from party_client.matching.blocking import plan_passes
from party_client.matching.fellegi_sunter import ELSE_LEVEL
from party_client.matching.level_rules import LevelRules, block_codes

# per second on 2 idle cores: querier ciphertexts (encryption, validation at the holder) and comparisons
# (blinded at the holder, zero-tested at K).  ec: FEBRL 4 with --preset person encrypted 274,000
# ciphertexts in 15 s and compared 486,000 times in 70 s (benchmarks/README.md); Paillier at 2048 bits:
# a fixed-base encryption costs 0.15 ms per core (docs/protocol.md, "Speed reference") and a
# comparison round about 6 ms, so its comparisons dominate; ristretto: FEBRL 4 with the same preset (37
# comparisons per pair) took 56.5 s for 642,000 comparisons, its calls 1.5x (encryption) and 1.8x
# (comparison and zero test) ec's speed (README, "Speed")
RATES = {"ec": (18_000.0, 7_000.0), "ristretto": (26_000.0, 13_000.0), "paillier": (13_000.0, 160.0)}


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


def plan(rules: LevelRules, frame: pd.DataFrame) -> dict:
    """Per pass: querier entries, buckets, estimated candidate pairs and comparisons; totals, per record
    and seconds per scheme."""
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
            "seconds": {scheme: round(ciphertexts / encrypt + total / compare, 1)
                        for scheme, (encrypt, compare) in RATES.items()}}


def plan_text(estimate: dict) -> str:
    """The plan as a few lines for the terminal."""
    lines = [f"{'pass':<28} {'entries':>8} {'pairs (est.)':>13} {'per pair':>9} {'comparisons':>12}"]
    for p in estimate["passes"]:
        lines.append(f"{p['pass']:<28} {p['entries']:>8,} {p['candidate_pairs']:>13,} {p['comparisons_per_pair']:>9,} "
                     f"{p['comparisons']:>12,}")
    seconds = ", ".join(f"{scheme} about {value:,.0f} s" for scheme, value in estimate["seconds"].items())
    lines.append(f"total {estimate['comparisons']:,} comparisons ({estimate['comparisons_per_record']:,} per record) and "
                 f"{estimate['ciphertexts']:,} querier ciphertexts ({estimate['ciphertexts_per_entry']} per entry); "
                 f"estimated time on 2 idle cores: {seconds}")
    lines.append("(assumes the holder's table resembles yours and holds a partner for each of your records)")
    return "\n".join(lines)
