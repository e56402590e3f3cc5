"""A two-registry person set: US names at their census frequencies, nicknames, married names, twins and
namesakes, ISO dates on one side.  It was held out until the ``compound`` surname level was weighed and
adopted on it; benchmarks/kin_people.py is the held-out set now.

    python -m benchmarks.census_people [--persons 4000] [--others 1000] [--seed 11] --out FOLDER

writes ``a.csv`` and ``b.csv`` to FOLDER.

Written independently of FEBRL's generator, benchmarks/corrupted_people.py and
benchmarks/slipped_people.py (other names, other frequencies, other errors and missingness), and never
used to choose a prior, weight, level or threshold.  Registry A holds ``persons`` people plus ``others``
of its own; registry B one copy of each of A's ``persons`` plus ``others`` strangers.  Names are Faker's
``en_US`` given names and surnames drawn with the weights Faker ships with them (the US census
frequencies: Smith 2.2 % of surnames), so a few names are common as real names are.  Columns as
FEBRL's plus ``sex``; no id, no street address; A writes dates ``YYYYMMDD``, B ``YYYY-MM-DD``.

Errors in B's copies (each independently, seeded):

- given name: a short form or nickname 30 % of the names that have one in a table of common ones
  (Robert -> Bob), otherwise one keyboard slip (a letter replaced by a neighbour on the keyboard) 8 %;
- surname: a woman's married name 6 % (another surname, often moved too); a double surname
  ("garcia-lopez", 4 % of people) loses its second part 50 %; otherwise one keyboard slip 8 %;
- date of birth: missing 6 %, month and day swapped 3 % (where both are at most 12), year one off 3 %,
  another date entirely 1 %;
- sex: missing 5 %, the other 1 %;
- postcode: moved 20 % (another postcode), two adjacent digits transposed 3 %, missing 5 %.

Strangers in B: 10 % are a twin of someone in A (same surname, date of birth and postcode, their own
given name and sex), 10 % a namesake (same given name and surname, their own date and postcode).
"""
from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from benchmarks.corrupted_people import COLUMNS, generator_main, registries, transpose_digits

RATES = {"nickname": 0.30, "first_slip": 0.08, "married": 0.06, "double": 0.04, "double_dropped": 0.5,
         "last_slip": 0.08, "dob_missing": 0.06, "dob_swapped": 0.03, "dob_year": 0.03, "dob_other": 0.01,
         "sex_missing": 0.05, "sex_flipped": 0.01, "moved": 0.20, "postcode_transposed": 0.03,
         "postcode_missing": 0.05, "twins": 0.10, "namesakes": 0.10}
# Common English short forms (after the tables of given-name variants in Christen, Data Matching, 2012,
# ch. 4): only names in Faker's en_US lists, so a copy's nickname is a real alternative of its name.
NICKNAMES = {"robert": ["bob", "rob", "bobby"], "william": ["bill", "will", "billy"], "james": ["jim", "jimmy"],
             "john": ["jack", "johnny"], "richard": ["rick", "dick", "rich"], "michael": ["mike", "mikey"],
             "joseph": ["joe", "joey"], "thomas": ["tom", "tommy"], "charles": ["charlie", "chuck"],
             "christopher": ["chris"], "daniel": ["dan", "danny"], "matthew": ["matt"], "anthony": ["tony"],
             "steven": ["steve"], "edward": ["ed", "eddie", "ted"], "andrew": ["andy", "drew"],
             "benjamin": ["ben"], "nicholas": ["nick"], "samuel": ["sam"], "jonathan": ["jon"],
             "elizabeth": ["liz", "beth", "betty"], "margaret": ["maggie", "peggy"], "katherine": ["kate", "kathy"],
             "jennifer": ["jen", "jenny"], "patricia": ["pat", "patty"], "susan": ["sue", "susie"],
             "deborah": ["debbie", "deb"], "rebecca": ["becky"], "victoria": ["vicky", "tori"],
             "christina": ["chris", "tina"], "alexandra": ["alex"], "samantha": ["sam"], "jessica": ["jess"],
             "kimberly": ["kim"], "cynthia": ["cindy"], "pamela": ["pam"], "stephanie": ["steph"],
             "abigail": ["abby"], "catherine": ["cathy", "kate"], "barbara": ["barb"]}
KEYBOARD = ["qwertyuiop", "asdfghjkl", "zxcvbnm"]


def _neighbours() -> dict[str, str]:
    """Each letter's horizontal neighbours on a QWERTY keyboard."""
    out = {}
    for row in KEYBOARD:
        for i, letter in enumerate(row):
            out[letter] = row[max(0, i - 1):i] + row[i + 1:i + 2]
    return out


NEIGHBOURS = _neighbours()


def slip(value: str, rng: np.random.Generator) -> str:
    """``value`` with one letter replaced by a keyboard neighbour."""
    places = [i for i, c in enumerate(value) if c in NEIGHBOURS]
    if not places:
        return value
    at = places[rng.integers(len(places))]
    options = NEIGHBOURS[value[at]]
    return value[:at] + options[rng.integers(len(options))] + value[at + 1:]


def _weighted(table: dict[str, float], count: int, rng: np.random.Generator) -> list[str]:
    names = [n.lower() for n in table]
    weights = np.array(list(table.values()), dtype=float)
    return [names[i] for i in rng.choice(len(names), size=count, p=weights / weights.sum())]


def _dob(rng: np.random.Generator) -> tuple[int, int, int]:
    return int(rng.integers(1925, 2020)), int(rng.integers(1, 13)), int(rng.integers(1, 29))


def _corrupt(person: dict, lasts: list[str], rng: np.random.Generator) -> dict:
    copy = dict(person)
    first = copy["given_name"]
    if first in NICKNAMES and rng.random() < RATES["nickname"]:
        options = NICKNAMES[first]
        copy["given_name"] = options[rng.integers(len(options))]
    elif rng.random() < RATES["first_slip"]:
        copy["given_name"] = slip(first, rng)
    last = copy["surname"]
    if copy["sex"] == "f" and rng.random() < RATES["married"]:
        copy["surname"] = lasts[rng.integers(len(lasts))]
        if rng.random() < 0.5:
            copy["postcode"] = f"{int(rng.integers(1000, 99999)):05d}"
    elif "-" in last and rng.random() < RATES["double_dropped"]:
        copy["surname"] = last.split("-")[0]
    elif rng.random() < RATES["last_slip"]:
        copy["surname"] = slip(last, rng)
    year, month, day = copy.pop("dob")
    draw = rng.random()
    if draw < RATES["dob_missing"]:
        copy["date_of_birth"] = ""
    else:
        draw -= RATES["dob_missing"]
        if draw < RATES["dob_swapped"] and day <= 12:
            month, day = day, month
        elif RATES["dob_swapped"] <= draw < RATES["dob_swapped"] + RATES["dob_year"]:
            year += int(rng.choice([-1, 1]))
        elif RATES["dob_swapped"] + RATES["dob_year"] <= draw < RATES["dob_swapped"] + RATES["dob_year"] + \
                RATES["dob_other"]:
            year, month, day = _dob(rng)
        copy["date_of_birth"] = f"{year:04d}-{month:02d}-{day:02d}"
    draw = rng.random()
    if draw < RATES["sex_missing"]:
        copy["sex"] = ""
    elif draw < RATES["sex_missing"] + RATES["sex_flipped"]:
        copy["sex"] = "m" if copy["sex"] == "f" else "f"
    draw = rng.random()
    if draw < RATES["moved"]:
        copy["postcode"] = f"{int(rng.integers(1000, 99999)):05d}"
    elif draw < RATES["moved"] + RATES["postcode_transposed"]:
        copy["postcode"] = transpose_digits(copy["postcode"], rng)
    elif draw < RATES["moved"] + RATES["postcode_transposed"] + RATES["postcode_missing"]:
        copy["postcode"] = ""
    return copy


def generate(persons: int = 4000, others: int = 1000, seed: int = 11) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(registry A, registry B) as text in FEBRL's columns plus ``sex``, rows shuffled; ``rec-N-org`` in A
    and ``rec-N-dup-0`` in B are the true links (:func:`benchmarks.corrupted_people.true_links`)."""
    from faker.providers.person.en_US import Provider
    rng = np.random.default_rng(seed)
    total = persons + 2 * others
    lasts = _weighted(Provider.last_names, total * 2, rng)
    males, females = _weighted(Provider.first_names_male, total, rng), _weighted(Provider.first_names_female, total, rng)
    zips = [f"{int(z):05d}" for z in rng.integers(1000, 99999, 800)]

    def person(k: int) -> dict:
        sex = "m" if rng.random() < 0.5 else "f"
        last = lasts[k] + (f"-{lasts[total + k]}" if rng.random() < RATES["double"] else "")
        return {"given_name": (males if sex == "m" else females)[k], "surname": last, "sex": sex,
                "street_number": "", "address_1": "", "address_2": "", "suburb": "", "state": "", "soc_sec_id": "",
                "postcode": zips[rng.integers(len(zips))], "dob": _dob(rng)}

    def written(p: dict) -> dict:          # A's form: YYYYMMDD
        year, month, day = p["dob"]
        return {**{k: v for k, v in p.items() if k != "dob"}, "date_of_birth": f"{year:04d}{month:02d}{day:02d}"}
    people = [person(k) for k in range(persons + others)]
    a = [{**written(p), "rec_id": f"rec-{n}-org"} for n, p in enumerate(people)]
    b = [{**_corrupt(p, lasts, rng), "rec_id": f"rec-{n}-dup-0"} for n, p in enumerate(people[:persons])]
    for k in range(others):
        stranger = person(persons + others + k)
        kin = people[rng.integers(len(people))]
        draw = rng.random()
        if draw < RATES["twins"]:
            stranger.update({c: kin[c] for c in ("surname", "dob", "postcode")})
        elif draw < RATES["twins"] + RATES["namesakes"]:
            stranger.update({c: kin[c] for c in ("given_name", "surname", "sex")})
        year, month, day = stranger.pop("dob")
        b.append({**stranger, "date_of_birth": f"{year:04d}-{month:02d}-{day:02d}",
                  "rec_id": f"rec-{persons + others + k}-org"})
    return registries(a, b, rng, columns=COLUMNS + ("sex",))


def main(argv: list[str] | None = None) -> int:
    return generator_main(argv, __doc__, generate, seed=11)


if __name__ == "__main__":
    sys.exit(main())
