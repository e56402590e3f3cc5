"""Peer: anonlink + clkhash (Bloom-filter CLKs) link two CSV registries with clkhash's tutorial schema
for FEBRL; run with their own environment's python (benchmarks/README.md, "Linkage peers").

    /work/peers/anonlink/venv/bin/python benchmarks/peers/anonlink_link.py A.csv B.csv OUT.csv [FLOOR]

The schema is the final one of clkhash's "Tutorial for Python API" (Data61, clkhash documentation):
bigrams of names and address text, unigrams with positions of street number, postcode and date of
birth, a fixed number of bits per feature (200 for names and date of birth, 100 for the rest), 1024
bits, the id ignored.  Both sides hash with one shared secret; anonlink's candidate generation (Dice
coefficient) keeps the pairs at or above ``FLOOR`` (0.75) and its greedy solver makes the mapping
one-to-one.  Writes ``rec_id_a,rec_id_b,similarity,solved`` for every candidate pair, ``solved`` 1 for
the pairs of the greedy solution: the greedy solution at a threshold t is exactly the solved pairs
with similarity >= t (greedy takes pairs in order of decreasing similarity), so the caller reads the
tutorial's threshold (0.8) and a sweep off one run, and may read the unsolved candidates where the
links are not one-to-one.
"""
import csv
import io
import sys
import time

import anonlink
from clkhash import clk
from clkhash.comparators import NgramComparison
from clkhash.field_formats import (BitsPerFeatureStrategy, FieldHashingProperties, Ignore, IntegerSpec,
                                   MissingValueSpec, StringSpec)
from clkhash.schema import Schema


def properties(ngram: int, bits: int, positional: bool = False, missing: bool = False) -> FieldHashingProperties:
    return FieldHashingProperties(comparator=NgramComparison(ngram, positional), strategy=BitsPerFeatureStrategy(bits),
                                  missing_value=MissingValueSpec(sentinel="") if missing else None)


SCHEMA = Schema([
    Ignore("rec_id"),
    StringSpec("given_name", properties(2, 200)),
    StringSpec("surname", properties(2, 200)),
    IntegerSpec("street_number", properties(1, 100, True, missing=True)),
    StringSpec("address_1", properties(2, 100)),
    StringSpec("address_2", properties(2, 100)),
    StringSpec("suburb", properties(2, 100)),
    IntegerSpec("postcode", properties(1, 100, True, missing=True)),   # missing in the held-out sets
    StringSpec("state", properties(2, 100)),
    IntegerSpec("date_of_birth", properties(1, 200, True, missing=True)),
    Ignore("soc_sec_id"),
], 1024)
SECRET = "shared secret of both registries"


def read(path: str) -> tuple[list[str], str]:
    """Record ids and the CSV text with values stripped (as text)."""
    with open(path, newline="") as handle:
        rows = [[v.strip() for v in row] for row in csv.reader(handle)]
    text = io.StringIO()
    csv.writer(text).writerows(rows)
    return [row[0] for row in rows[1:]], text.getvalue()


def main(path_a: str, path_b: str, out: str, floor: str = "0.75") -> int:
    started = time.perf_counter()
    filters, ids = [], []
    for path in (path_a, path_b):
        rec_ids, text = read(path)
        ids.append(rec_ids)
        filters.append(clk.generate_clk_from_csv(io.StringIO(text), SECRET, SCHEMA, progress_bar=False))
    candidates = anonlink.candidate_generation.find_candidate_pairs(
        filters, anonlink.similarities.dice_coefficient, float(floor))
    similarity = {(int(i), int(j)): float(s) for s, (i, j) in zip(candidates[0], zip(*candidates[2]))}
    solution = anonlink.solving.greedy_solve(candidates)
    solved = {tuple(r for _, r in sorted(group)) for group in solution}
    with open(out, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["rec_id_a", "rec_id_b", "similarity", "solved"])
        for (i, j), s in similarity.items():
            writer.writerow([ids[0][i], ids[1][j], s, int((i, j) in solved)])
    print(f"anonlink {len(solution)} pairs in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
