"""A held-out two-registry person set: German names with skewed frequencies, slipped dates of birth, no id.

    python -m benchmarks.slipped_people [--persons 4000] [--others 1000] [--seed 3] --out FOLDER

writes ``a.csv`` and ``b.csv`` to FOLDER.

Built to differ from the sets the preset's priors were chosen on (FEBRL's generator and
benchmarks/corrupted_people.py), and never used to fit a prior, weight or threshold (its false links were
read once to see why a level failed: benchmarks/README.md, "Three generators and FEBRL"): a check of
how the preset generalizes.  Registry A holds ``persons`` people plus ``others`` of its own; registry B
one copy of each of A's ``persons`` plus ``others`` strangers.  Names are Faker's ``de_DE`` first names
and surnames drawn with Zipf weights (exponent 1.1 over the list in a seeded random order), so a few
names are very common, as real names are; umlauts and ß are kept.  Columns as FEBRL's (``soc_sec_id``
empty: the set has no id; no street address), dates ``YYYYMMDD``.

Errors in B's copies (each independently, seeded):

- given name and surname, each: one edit (insertion, deletion, substitution or adjacent
  transposition) 20 %; otherwise umlauts and ß transliterated (ä -> ae, ö -> oe, ü -> ue, ß -> ss) 10 %
  of the names that have one;
- date of birth: one of day, month or year replaced by another valid value 12 % (a year by one to
  ten years either way); otherwise day and month swapped 3 % (where both are at most 12); missing 4 %;
- moved (another postcode and city) 15 %;
- 10 % of the strangers are a relative of someone in A (same surname, postcode and city; their own
  first name and date of birth), so that precision is tested too.
"""
from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from benchmarks.corrupted_people import edit, generator_main, registries

RATES = {"name_edit": 0.20, "transliterated": 0.10, "dob_one_part": 0.12, "dob_swapped": 0.03,
         "dob_missing": 0.04, "moved": 0.15, "relatives": 0.10}
TRANSLITERATION = {"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss"}
ZIPF = 1.1


def _zipf_names(names: list[str], count: int, rng: np.random.Generator) -> list[str]:
    """``count`` draws from ``names`` (deduplicated, lower case) with Zipf weights over a seeded order."""
    distinct = sorted({n.lower() for n in names})
    order = rng.permutation(len(distinct))
    weights = 1.0 / np.arange(1, len(distinct) + 1) ** ZIPF
    return [distinct[i] for i in order[rng.choice(len(distinct), size=count, p=weights / weights.sum())]]


def _name_lists() -> tuple[list[str], list[str]]:
    """Faker's ``de_DE`` given names (male and female) and surnames (MIT licence)."""
    from faker.providers.person.de_DE import Provider
    return list(Provider.first_names_male) + list(Provider.first_names_female), list(Provider.last_names)


def _dob(rng: np.random.Generator) -> str:
    year, month = int(rng.integers(1920, 2020)), int(rng.integers(1, 13))
    return f"{year:04d}{month:02d}{int(rng.integers(1, 29)):02d}"


def _slipped(dob: str, rng: np.random.Generator) -> str:
    """``dob`` with exactly one of year, month and day replaced by another valid value."""
    year, month, day = int(dob[:4]), int(dob[4:6]), int(dob[6:])
    part = rng.integers(3)
    if part == 0:
        year += int(rng.choice([-1, 1])) * int(rng.integers(1, 11))
    elif part == 1:
        month = int(rng.choice([m for m in range(1, 13) if m != month]))
    else:
        day = int(rng.choice([d for d in range(1, 29) if d != day]))
    return f"{year:04d}{month:02d}{day:02d}"


def _corrupt(person: dict, places: list[tuple[str, str]], rng: np.random.Generator) -> dict:
    copy = dict(person)
    for column in ("given_name", "surname"):
        if rng.random() < RATES["name_edit"]:
            copy[column] = edit(copy[column], rng)
        elif any(c in copy[column] for c in TRANSLITERATION) and rng.random() < RATES["transliterated"]:
            copy[column] = "".join(TRANSLITERATION.get(c, c) for c in copy[column])
    draw, dob = rng.random(), copy["date_of_birth"]
    if draw < RATES["dob_one_part"]:
        copy["date_of_birth"] = _slipped(dob, rng)
    elif draw < RATES["dob_one_part"] + RATES["dob_swapped"] and int(dob[6:]) <= 12:
        copy["date_of_birth"] = dob[:4] + dob[6:] + dob[4:6]
    elif draw < RATES["dob_one_part"] + RATES["dob_swapped"] + RATES["dob_missing"]:
        copy["date_of_birth"] = ""
    if rng.random() < RATES["moved"]:
        copy["postcode"], copy["suburb"] = places[rng.integers(len(places))]
    return copy


def generate(persons: int = 4000, others: int = 1000, seed: int = 3) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(registry A, registry B) as text in FEBRL's columns, rows shuffled; ``rec-N-org`` in A and
    ``rec-N-dup-0`` in B are the true links (:func:`benchmarks.corrupted_people.true_links`)."""
    from faker import Faker
    fake = Faker("de_DE")
    fake.seed_instance(seed)
    rng = np.random.default_rng(seed)
    first_names, last_names = _name_lists()
    total = persons + 2 * others
    firsts, lasts = _zipf_names(first_names, total, rng), _zipf_names(last_names, total, rng)
    places = [(fake.postcode(), fake.city().lower()) for _ in range(600)]

    def person(k: int) -> dict:
        postcode, city = places[rng.integers(len(places))]
        return {"given_name": firsts[k], "surname": lasts[k], "street_number": "", "address_1": "", "address_2": "",
                "suburb": city, "postcode": postcode, "state": "", "date_of_birth": _dob(rng), "soc_sec_id": ""}
    people = [person(k) for k in range(persons + others)]
    a = [{**p, "rec_id": f"rec-{n}-org"} for n, p in enumerate(people)]
    b = [{**_corrupt(p, places, rng), "rec_id": f"rec-{n}-dup-0"} for n, p in enumerate(people[:persons])]
    for k in range(others):
        stranger = person(persons + others + k)
        if rng.random() < RATES["relatives"]:
            relative = people[rng.integers(len(people))]
            stranger.update({c: relative[c] for c in ("surname", "suburb", "postcode")})
        b.append({**stranger, "rec_id": f"rec-{persons + others + k}-org"})
    return registries(a, b, rng)


def main(argv: list[str] | None = None) -> int:
    return generator_main(argv, __doc__, generate, seed=3)


if __name__ == "__main__":
    sys.exit(main())
