"""A seeded two-registry person set with known true links and stated corruption (names with edits,
swapped names, transposed digits, missing dates of birth), in FEBRL's columns.

    python -m benchmarks.corrupted_people [--persons 4000] [--others 1000] [--seed 1] --out FOLDER

Registry A holds ``persons`` people plus ``others`` people of its own; registry B holds one copy of
each of A's ``persons`` (``rec-N-org`` in A, ``rec-N-dup-0`` in B, as FEBRL 4 names them) plus
``others`` records of its own, of which 30% are *relatives* of someone in A (same surname, address,
suburb and postcode; another first name and date of birth) so that precision is tested too.  Names,
streets and suburbs come from Faker's ``en_AU`` provider (a few hundred distinct first names and
surnames, so unrelated people often share a name), dates of birth are uniform over 0-100 years, the
id is a distinct 7-digit number and the postcode Faker's 4-digit one.

Corruption of B's copies (each independently, seeded):

- given name and surname, each: unchanged 50%, one edit 35%, two edits 15%; an edit is one of an
  insertion, a deletion, a substitution (a random lower-case letter) or a transposition of two
  adjacent different letters, chosen uniformly (Christen, *Data Matching*, 2012, section 3.3: the
  four single-character errors that make up most typing errors);
- given name and surname swapped: 5% (after the edits);
- id missing: 20%; otherwise two adjacent different digits transposed: 10%;
- moved (another street number, street, suburb and postcode): 10%; otherwise the postcode's two
  adjacent different digits transposed: 10%;
- date of birth missing: 10% (and 2% of A's records have none).

So about 75% of the copies have at least one edited name.  The files are written as text (every
value a string, as the project reads them); ``rec_id`` keys the truth.
"""
from __future__ import annotations

import argparse
import string
import sys
from pathlib import Path

import numpy as np
import pandas as pd

COLUMNS = ("rec_id", "given_name", "surname", "street_number", "address_1", "address_2", "suburb", "postcode",
           "state", "date_of_birth", "soc_sec_id")
RATES = {"name_one_edit": 0.35, "name_two_edits": 0.15, "swapped_names": 0.05, "id_missing": 0.20,
         "id_transposed": 0.10, "moved": 0.10, "postcode_transposed": 0.10, "dob_missing": 0.10,
         "dob_missing_a": 0.02, "relatives": 0.30}


def edit(value: str, rng: np.random.Generator) -> str:
    """``value`` with one insertion, deletion, substitution or adjacent transposition (uniformly), always
    different from ``value`` (a transposition of two equal letters or a same-letter substitution is redrawn)."""
    letters = string.ascii_lowercase
    while True:
        kind = rng.integers(4) if len(value) > 1 else rng.choice([0, 2])
        if kind == 0:                                    # insertion
            at = rng.integers(len(value) + 1)
            out = value[:at] + letters[rng.integers(26)] + value[at:]
        elif kind == 1:                                  # deletion
            at = rng.integers(len(value))
            out = value[:at] + value[at + 1:]
        elif kind == 2:                                  # substitution
            at = rng.integers(len(value)) if value else 0
            out = value[:at] + letters[rng.integers(26)] + value[at + 1:]
        else:                                            # adjacent transposition
            at = rng.integers(len(value) - 1)
            out = value[:at] + value[at + 1] + value[at] + value[at + 2:]
        if out != value:
            return out


def transpose_digits(value: str, rng: np.random.Generator) -> str:
    """``value`` with two adjacent different characters swapped (unchanged if it has none)."""
    places = [i for i in range(len(value) - 1) if value[i] != value[i + 1]]
    if not places:
        return value
    at = places[rng.integers(len(places))]
    return value[:at] + value[at + 1] + value[at] + value[at + 2:]


def _people(fake, count: int, rng: np.random.Generator, ids: set[str]) -> list[dict]:
    people = []
    for _ in range(count):
        while (number := str(rng.integers(1_000_000, 10_000_000))) in ids:
            pass
        ids.add(number)
        people.append({**_address(fake), "given_name": fake.first_name().lower(), "surname": fake.last_name().lower(),
                       "date_of_birth": fake.date_of_birth(minimum_age=0, maximum_age=100).strftime("%Y%m%d"),
                       "soc_sec_id": number})
    return people


def _address(fake) -> dict:
    return {"street_number": fake.building_number(), "address_1": fake.street_name().lower(), "address_2": "",
            "suburb": fake.city().lower(), "postcode": fake.postcode(), "state": fake.state_abbr().lower()}


def _corrupt(person: dict, fake, rng: np.random.Generator) -> dict:
    copy = dict(person)
    for column in ("given_name", "surname"):
        draw = rng.random()
        edits = 2 if draw < RATES["name_two_edits"] else 1 if draw < RATES["name_two_edits"] + RATES["name_one_edit"] else 0
        for _ in range(edits):
            copy[column] = edit(copy[column], rng)
    if rng.random() < RATES["swapped_names"]:
        copy["given_name"], copy["surname"] = copy["surname"], copy["given_name"]
    if rng.random() < RATES["id_missing"]:
        copy["soc_sec_id"] = ""
    elif rng.random() < RATES["id_transposed"] / (1 - RATES["id_missing"]):
        copy["soc_sec_id"] = transpose_digits(copy["soc_sec_id"], rng)
    if rng.random() < RATES["moved"]:
        copy.update({k: v for k, v in _address(fake).items() if k != "state"})
    elif rng.random() < RATES["postcode_transposed"] / (1 - RATES["moved"]):
        copy["postcode"] = transpose_digits(copy["postcode"], rng)
    if rng.random() < RATES["dob_missing"]:
        copy["date_of_birth"] = ""
    return copy


def generate(persons: int = 4000, others: int = 1000, seed: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(registry A, registry B), both ``persons + others`` rows of text in FEBRL's columns, rows shuffled;
    A's ``rec-N-org`` and B's ``rec-N-dup-0`` are the true links."""
    from faker import Faker
    fake = Faker("en_AU")
    fake.seed_instance(seed)
    rng = np.random.default_rng(seed)
    ids: set[str] = set()
    people = _people(fake, persons + others, rng, ids)
    a = [{**p, "rec_id": f"rec-{n}-org"} for n, p in enumerate(people)]
    for row in a:
        if rng.random() < RATES["dob_missing_a"]:
            row["date_of_birth"] = ""
    b = [{**_corrupt(p, fake, rng), "rec_id": f"rec-{n}-dup-0"} for n, p in enumerate(people[:persons])]
    strangers = _people(fake, others, rng, ids)
    for k, stranger in enumerate(strangers):
        if rng.random() < RATES["relatives"]:        # a relative of someone in A: shares surname and address
            relative = people[rng.integers(len(people))]
            stranger.update({c: relative[c] for c in ("surname", "street_number", "address_1", "suburb", "postcode",
                                                      "state")})
        b.append({**stranger, "rec_id": f"rec-{persons + others + k}-org"})
    return registries(a, b, rng)


def registries(a: list[dict], b: list[dict], rng: np.random.Generator,
               columns: tuple[str, ...] = COLUMNS) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two registries' rows as text frames in ``columns`` (FEBRL's), each shuffled (seeded by ``rng``)."""
    frames = []
    for rows in (a, b):
        frame = pd.DataFrame(rows, columns=list(columns)).astype(str)
        frames.append(frame.sample(frac=1, random_state=int(rng.integers(1 << 31))).reset_index(drop=True))
    return frames[0], frames[1]


def true_links(a: pd.DataFrame, b: pd.DataFrame) -> set[tuple[int, int]]:
    """(A position, B position) of the same person: ``rec-N-org`` in A and ``rec-N-dup-0`` in B."""
    person_a = {rec.split("-")[1]: i for i, rec in enumerate(a["rec_id"])}
    return {(person_a[rec.split("-")[1]], j) for j, rec in enumerate(b["rec_id"]) if rec.endswith("-dup-0")}


def generator_main(argv: list[str] | None, doc: str, generate, seed: int) -> int:
    """The command line every generator of this folder shares: ``--persons --others --seed --out FOLDER``,
    writing ``a.csv`` and ``b.csv`` and saying how many true links they hold."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--persons", type=int, default=4000, help="people in both registries")
    parser.add_argument("--others", type=int, default=1000, help="people in one registry only, per registry")
    parser.add_argument("--seed", type=int, default=seed)
    parser.add_argument("--out", required=True, help="folder for a.csv and b.csv")
    args = parser.parse_args(argv)
    a, b = generate(args.persons, args.others, args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    a.to_csv(out / "a.csv", index=False)
    b.to_csv(out / "b.csv", index=False)
    print(f"{len(a)} + {len(b)} records, {len(true_links(a, b))} true links in {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return generator_main(argv, __doc__, generate, seed=1)


if __name__ == "__main__":
    sys.exit(main())
