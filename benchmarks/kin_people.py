"""A fourth two-registry person set, held out: a city's mixed population (Austrian, Dutch, Irish, Spanish
and Danish names), short forms of given names, umlauts written out, double surnames and particles.

    python -m benchmarks.kin_people [--persons 4000] [--others 1000] [--seed 23] --out FOLDER

writes ``a.csv`` and ``b.csv`` to FOLDER.

Written independently of FEBRL's generator and of benchmarks/corrupted_people.py, slipped_people.py and
census_people.py, with its rates fixed before any level was tried on it, and never used to choose a prior,
weight, level or threshold (benchmarks/README.md, "Name levels, and a fourth generator held out").
Registry A holds ``persons`` people plus ``others`` of its own; registry B one copy of each of A's
``persons`` plus ``others`` strangers.  Origins: Austrian 30 %, Dutch 25 %, Irish 25 %, Spanish 12 %,
Danish 8 % (Faker's ``de_AT``, ``nl_NL``, ``en_IE``, ``es_ES`` and ``da_DK`` lists, MIT licence), names
drawn per list with log-normal weights (sigma 1.3 over a seeded order: a few common names and a long
tail, a shape neither Zipf's nor the census's).  Spanish people carry two surnames ("garcía lópez"),
10 % of Austrians a hyphenated double surname, Dutch surnames a particle as often as Dutch surnames
have one (van 14 %, de 8 %, van der 5 %, van den 3 %).  Columns as FEBRL's plus ``sex``; no id, no
street; A writes dates ``YYYYMMDD``, B ``YYYY/MM/DD``.

Errors in B's copies (each independently, seeded):

- given name: a short form 15 % of the names that have one in the generator's own table (Johannes ->
  Hans, Cornelis -> Kees, Francisco -> Paco, Margaret -> Peggy), otherwise one OCR or phonetic slip 5 %;
  only the initial 3 %; missing 2 %;
- surname: umlauts and ß written out (ü -> ue, ß -> ss) 30 % of the names that have one, ø and æ
  written oe and ae 30 %, Dutch ij written y 10 %; a Spanish second surname dropped 40 %; an Austrian
  double surname losing one part 40 %; a Dutch particle dropped 25 % or run together with the name
  ("vanderberg") 15 %; a woman's married name 4 % (another surname); otherwise one OCR or phonetic
  slip 5 %;
- date of birth: missing 5 %, one digit of day, month or year mistyped 5 % (a valid date), day and month
  swapped 2 % (where both are at most 12), recorded as the 1st of January of the year 2 %;
- sex: missing 3 %, the other 1 %;
- moved (another postcode and city) 12 %; postcode missing 4 %.

Strangers in B: 12 % a sibling of someone in A (same surname, postcode and city, their own given name
and sex, born 1 to 8 years apart), 5 % a namesake (same given name, surname and birth year).
"""
from __future__ import annotations

import sys
from importlib import import_module

import numpy as np
import pandas as pd

from benchmarks.corrupted_people import COLUMNS, generator_main, registries

RATES = {"short_form": 0.15, "first_slip": 0.05, "first_initial": 0.03, "first_missing": 0.02,
         "umlaut_written_out": 0.30, "nordic_written_out": 0.30, "ij_as_y": 0.10, "second_surname_dropped": 0.40,
         "double_part_dropped": 0.40, "particle_dropped": 0.25, "particle_joined": 0.15, "married": 0.04,
         "last_slip": 0.05, "dob_missing": 0.05, "dob_digit": 0.05, "dob_swapped": 0.02, "dob_first_january": 0.02,
         "sex_missing": 0.03, "sex_flipped": 0.01, "moved": 0.12, "postcode_missing": 0.04,
         "siblings": 0.12, "namesakes": 0.05}
ORIGINS = {"de_AT": 0.30, "nl_NL": 0.25, "en_IE": 0.25, "es_ES": 0.12, "da_DK": 0.08}
AUSTRIAN_DOUBLE = 0.10
DUTCH_PARTICLES = {"van": 0.14, "de": 0.08, "van der": 0.05, "van den": 0.03}
SIGMA = 1.3
# Short forms and hypocorisms by language, written for this generator from common usage (not from any
# table the levels use): many are outside English nickname tables, as in a real mixed registry.
SHORT_FORMS = {
    "johannes": ["hans", "jan", "johann"], "josef": ["sepp", "joschi"], "franz": ["franzl"],
    "elisabeth": ["lisa", "sissi", "elli", "liesl"], "katharina": ["kathi", "katja"], "theresia": ["resi"],
    "magdalena": ["leni", "lena"], "matthias": ["hias"], "alexander": ["alex", "xandi"], "andreas": ["andi"],
    "wolfgang": ["wolfi"], "barbara": ["babsi", "barbi"], "christian": ["chris", "christl"],
    "michael": ["michi", "mike"], "stefan": ["steffi"], "stefanie": ["steffi"], "florian": ["flo"],
    "cornelis": ["kees", "cor"], "hendrik": ["henk", "rik"], "willem": ["wim", "pim"], "pieter": ["piet"],
    "jacobus": ["koos", "jaap"], "gerardus": ["gerard", "gert"], "theodorus": ["theo", "ruud"],
    "adrianus": ["arie", "janus"], "wilhelmina": ["mien", "wil"], "johanna": ["anneke", "jo"],
    "margaretha": ["greet", "grietje"], "catharina": ["tineke", "ineke"], "maria": ["mies", "marieke"],
    "francisco": ["paco", "curro"], "josé": ["pepe"], "manuel": ["manolo"], "ignacio": ["nacho"],
    "dolores": ["lola"], "guadalupe": ["lupe"], "concepción": ["concha", "conchi"], "rosario": ["charo"],
    "antonio": ["toni", "toño"], "jesús": ["chuy", "chucho"], "enrique": ["quique"], "mercedes": ["merche"],
    "margaret": ["peggy", "maggie", "meg"], "william": ["bill", "liam", "will"], "robert": ["bob", "rob"],
    "patrick": ["paddy", "pat"], "michael": ["mick", "mike"], "daniel": ["danny", "dan"],
    "elizabeth": ["liz", "betty", "lizzie"], "catherine": ["kate", "cathy", "kathleen"], "thomas": ["tom"],
    "james": ["jim", "jimmy", "seamus"], "edward": ["ned", "eddie", "ted"], "bridget": ["bridie", "biddy"],
    "mary": ["molly", "mamie"], "eleanor": ["nora", "ellie"], "john": ["jack", "johnny", "sean"],
    "anthony": ["tony"], "christopher": ["chris", "kit"], "joseph": ["joe"], "francis": ["frank"],
    "søren": ["søs"], "mette": ["mette"], "jørgen": ["jørn"], "kirsten": ["kirsa"], "rasmus": ["ras"],
}
OCR = [("rn", "m"), ("m", "rn"), ("cl", "d"), ("li", "h"), ("e", "c"), ("i", "l"), ("u", "ii")]
PHONETIC = [("ph", "f"), ("f", "ph"), ("th", "t"), ("ck", "k"), ("tz", "z"), ("ei", "ai"), ("y", "i"), ("c", "k"),
            ("ll", "l"), ("nn", "n")]
WRITTEN_OUT = {"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss"}
NORDIC = {"ø": "oe", "æ": "ae", "å": "aa"}


def _weighted(names: list[str], count: int, rng: np.random.Generator) -> list[str]:
    """``count`` draws from ``names`` (deduplicated, lower case) with log-normal weights over a seeded order."""
    distinct = sorted({n.lower() for n in names})
    weights = rng.lognormal(0.0, SIGMA, len(distinct))
    return [distinct[i] for i in rng.choice(len(distinct), size=count, p=weights / weights.sum())]


def _lists(locale: str) -> tuple[list[str], list[str], list[str]]:
    provider = import_module(f"faker.providers.person.{locale}").Provider
    lasts = [n for n in provider.last_names if " " not in n and "," not in n and "'" not in n]
    return list(provider.first_names_male), list(provider.first_names_female), lasts


def _slip(value: str, rng: np.random.Generator) -> str:
    """``value`` with one OCR misreading or phonetic respelling that applies to it (unchanged if none)."""
    options = [(a, b) for a, b in OCR + PHONETIC if a in value]
    if not options:
        return value
    a, b = options[rng.integers(len(options))]
    places = [i for i in range(len(value)) if value.startswith(a, i)]
    at = places[rng.integers(len(places))]
    return value[:at] + b + value[at + len(a):]


def _dob(rng: np.random.Generator) -> tuple[int, int, int]:
    return int(rng.integers(1925, 2022)), int(rng.integers(1, 13)), int(rng.integers(1, 29))


def _written(dob: tuple[int, int, int] | None, separator: str) -> str:
    if dob is None:
        return ""
    year, month, day = dob
    return f"{year:04d}{separator}{month:02d}{separator}{day:02d}"


def _digit_slip(dob: tuple[int, int, int], rng: np.random.Generator) -> tuple[int, int, int]:
    """One digit of day, month or year replaced, keeping a valid date (day at most 28)."""
    for _ in range(20):
        text = list(f"{dob[2]:02d}{dob[1]:02d}{dob[0]:04d}")
        at = int(rng.integers(len(text)))
        text[at] = str(int(rng.integers(10)))
        day, month, year = int("".join(text[:2])), int("".join(text[2:4])), int("".join(text[4:]))
        if (year, month, day) != dob and 1 <= day <= 28 and 1 <= month <= 12 and 1900 <= year <= 2025:
            return year, month, day
    return dob


def _surname(origin: str, k: int, lasts: dict[str, list[str]], rng: np.random.Generator) -> str:
    own = lasts[origin]
    name = own[k]
    if origin == "es_ES":
        return f"{name} {own[(k * 7 + 3) % len(own)]}"
    if origin == "de_AT" and rng.random() < AUSTRIAN_DOUBLE:
        return f"{name}-{own[(k * 11 + 5) % len(own)]}"
    if origin == "nl_NL":
        draw = rng.random()
        for particle, share in DUTCH_PARTICLES.items():
            if draw < share:
                return f"{particle} {name}"
            draw -= share
    return name


def _corrupt_surname(person: dict, lasts: dict[str, list[str]], rng: np.random.Generator) -> str:
    last, origin = person["surname"], person["origin"]
    if person["sex"] == "f" and rng.random() < RATES["married"]:
        pool = lasts[list(ORIGINS)[rng.integers(len(ORIGINS))]]
        return pool[rng.integers(len(pool))]
    if origin == "es_ES" and " " in last and rng.random() < RATES["second_surname_dropped"]:
        return last.split(" ")[0]
    if "-" in last and rng.random() < RATES["double_part_dropped"]:
        return last.split("-")[int(rng.integers(2))]
    if origin == "nl_NL" and " " in last:
        draw = rng.random()
        if draw < RATES["particle_dropped"]:
            return last.split(" ")[-1]
        if draw < RATES["particle_dropped"] + RATES["particle_joined"]:
            return last.replace(" ", "")
    if any(c in last for c in WRITTEN_OUT) and rng.random() < RATES["umlaut_written_out"]:
        return "".join(WRITTEN_OUT.get(c, c) for c in last)
    if any(c in last for c in NORDIC) and rng.random() < RATES["nordic_written_out"]:
        return "".join(NORDIC.get(c, c) for c in last)
    if "ij" in last and rng.random() < RATES["ij_as_y"]:
        return last.replace("ij", "y")
    if rng.random() < RATES["last_slip"]:
        return _slip(last, rng)
    return last


def _corrupt(person: dict, lasts: dict[str, list[str]], rng: np.random.Generator) -> dict:
    copy = dict(person)
    first = copy["given_name"]
    draw = rng.random()
    if first in SHORT_FORMS and draw < RATES["short_form"]:
        options = SHORT_FORMS[first]
        copy["given_name"] = options[rng.integers(len(options))]
    elif draw < RATES["short_form"] + RATES["first_slip"]:
        copy["given_name"] = _slip(first, rng)
    elif draw < RATES["short_form"] + RATES["first_slip"] + RATES["first_initial"]:
        copy["given_name"] = first[:1]
    elif draw < RATES["short_form"] + RATES["first_slip"] + RATES["first_initial"] + RATES["first_missing"]:
        copy["given_name"] = ""
    copy["surname"] = _corrupt_surname(person, lasts, rng)
    dob, draw = copy["dob"], rng.random()
    if draw < RATES["dob_missing"]:
        dob = None
    elif (draw := draw - RATES["dob_missing"]) < RATES["dob_digit"]:
        dob = _digit_slip(dob, rng)
    elif (draw := draw - RATES["dob_digit"]) < RATES["dob_swapped"]:
        dob = (dob[0], dob[2], dob[1]) if dob[2] <= 12 else dob
    elif draw - RATES["dob_swapped"] < RATES["dob_first_january"]:
        dob = (dob[0], 1, 1)
    copy["dob"] = dob
    draw = rng.random()
    if draw < RATES["sex_missing"] + RATES["sex_flipped"]:
        copy["sex"] = "" if draw < RATES["sex_missing"] else {"m": "f", "f": "m"}[copy["sex"]]
    draw = rng.random()
    if draw < RATES["moved"]:
        copy["postcode"], copy["suburb"] = copy["places"][rng.integers(len(copy["places"]))]
    elif draw < RATES["moved"] + RATES["postcode_missing"]:
        copy["postcode"] = ""
    return copy


def generate(persons: int = 4000, others: int = 1000, seed: int = 23) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The two registries, text frames of FEBRL's columns and ``sex`` in shuffled order; A's ``rec-N-org``
    is B's ``rec-N-dup-0`` (:func:`benchmarks.corrupted_people.true_links` pairs them)."""
    from faker import Faker
    total, rng = persons + 2 * others, np.random.default_rng(seed)
    males, females, lasts = {}, {}, {}
    for origin in ORIGINS:
        male, female, last = _lists(origin)
        males[origin], females[origin] = _weighted(male, total, rng), _weighted(female, total, rng)
        lasts[origin] = _weighted(last, total, rng)
    fake = Faker("de_AT")
    fake.seed_instance(seed)
    places = [(fake.postcode(), fake.city().lower()) for _ in range(500)]
    origins = list(ORIGINS)
    shares = np.array(list(ORIGINS.values()))

    def person(k: int) -> dict:
        origin = origins[rng.choice(len(origins), p=shares / shares.sum())]
        sex = "m" if rng.random() < 0.5 else "f"
        postcode, city = places[rng.integers(len(places))]
        return {"given_name": (males if sex == "m" else females)[origin][k], "surname": _surname(origin, k, lasts, rng),
                "sex": sex, "origin": origin, "street_number": "", "address_1": "", "address_2": "", "suburb": city,
                "postcode": postcode, "state": "", "soc_sec_id": "", "dob": _dob(rng), "places": places}

    def row(p: dict, rec_id: str, separator: str = "/") -> dict:
        return {**{k: v for k, v in p.items() if k not in ("dob", "origin", "places")},
                "date_of_birth": _written(p["dob"], separator), "rec_id": rec_id}
    people = [person(k) for k in range(persons + others)]
    a = [row(p, f"rec-{n}-org", "") for n, p in enumerate(people)]
    b = [row(_corrupt(p, lasts, rng), f"rec-{n}-dup-0") for n, p in enumerate(people[:persons])]
    for k in range(others):
        stranger = person(persons + others + k)
        kin = people[rng.integers(len(people))]
        draw = rng.random()
        if draw < RATES["siblings"]:
            stranger.update({c: kin[c] for c in ("surname", "suburb", "postcode", "origin")})
            year = kin["dob"][0] + int(rng.choice([-1, 1])) * int(rng.integers(1, 9))
            stranger["dob"] = (year, stranger["dob"][1], stranger["dob"][2])
        elif draw < RATES["siblings"] + RATES["namesakes"]:
            stranger.update({c: kin[c] for c in ("given_name", "surname", "sex", "origin")})
            stranger["dob"] = (kin["dob"][0], stranger["dob"][1], stranger["dob"][2])
        b.append(row(stranger, f"rec-{persons + others + k}-org"))
    return registries(a, b, rng, columns=COLUMNS + ("sex",))


def main(argv: list[str] | None = None) -> int:
    return generator_main(argv, __doc__, generate, seed=23)


if __name__ == "__main__":
    sys.exit(main())
