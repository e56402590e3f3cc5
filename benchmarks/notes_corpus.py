"""A development corpus of short clinical notes (discharge summary, nurse note, radiology report) with planted,
annotated PHI: names (some lower case, some "Lastname, Firstname", some from locales the shipped lists do not
hold, a few misspelt), addresses, phones, e-mails, identifiers, dates in many written forms, ages over 89,
facilities; and look-alikes that are not PHI (eponyms, Apgar scores, G2P1A1, C6C7T1, 5/5, 120/80, drug names).

Seeded (Faker and ``random``), so a seed gives the same notes. Writes ``notes.jsonl`` (``{doc, patient, text,
hints}``) and ``gold.jsonl`` (standoff ``{doc, start, end, type}``)::

    python -m benchmarks.notes_corpus --notes 100 --seed 7 --out tests/data/notes
"""
from __future__ import annotations

import argparse
import json
import random
import unicodedata
from pathlib import Path

from faker import Faker

HELD_OUT = ("fi_FI", "sv_SE", "cs_CZ")  # name locales the shipped lists leave out
EPONYM_PHRASES = ("Parkinson's disease", "Huntington's disease", "Apgar 9", "Apgar scores 8 and 9", "Babinski sign "
                  "negative", "Bankart lesion", "Foley catheter", "Murphy's sign negative", "Jackson-Pratt drain",
                  "Bell's palsy", "Crohn's disease", "Hodgkin lymphoma", "Graves disease", "Wilson's disease",
                  "Alzheimer dementia", "Trendelenburg position", "Glasgow coma scale 15", "Homan's sign negative",
                  "Cushing syndrome", "Kernig sign absent")
LOOKALIKES = ("G2P1A1", "C6C7T1", "S1S2S4", "BP 120/80", "strength 5/5 bilaterally", "pain 7/10", "Lasix 40 mg",
              "WBC 12.3", "Na 138", "INR 2.1", "HbA1c 7.2%", "T2DM since 2015", "x3 days", "metoprolol 25 mg BID",
              "Coumadin 5 mg", "EF 55%", "L4-L5 disc", "SpO2 94% on 2L", "GCS 15", "ECOG 1")
TYPOS = {"patient": "paitent", "history": "histroy", "with": "wtih", "denies": "denise", "pain": "pian",
         "discharged": "dischraged", "stable": "stabel"}


def _ascii(s: str) -> str:
    return unicodedata.normalize("NFKD", s).encode("ascii", "ignore").decode()


class Note:
    """Text built piece by piece; each PHI piece is recorded with its type and offsets."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.spans: list[tuple[int, int, str]] = []
        self.size = 0

    def t(self, text: str) -> "Note":
        self.parts.append(text)
        self.size += len(text)
        return self

    def p(self, type_: str, value: str) -> "Note":
        self.spans.append((self.size, self.size + len(value), type_))
        return self.t(value)

    def name(self, first: str | None, last: str | None, middle: str | None = None, style: str = "plain") -> "Note":
        if style == "last-first" and first and last:
            self.p("LAST_NAME", last).t(", ").p("FIRST_NAME", first)
            return self
        if first:
            self.p("FIRST_NAME", first)
        if middle:
            self.t(" ").p("MIDDLE_NAME", middle)
        if first and last:
            self.t(" ")
        if last:
            self.p("LAST_NAME", last)
        return self

    @property
    def text(self) -> str:
        return "".join(self.parts)


class Corpus:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.fake = Faker("en_US")
        self.fake.seed_instance(seed)
        self.held = [Faker(loc) for loc in HELD_OUT]
        for i, f in enumerate(self.held):
            f.seed_instance(seed + i + 1)
        from deid_core.text.lists import read_list
        self.cities = [c.title() for c in read_list("cities.txt")]

    def person(self) -> tuple[str, str]:
        f = self.rng.choice(self.held) if self.rng.random() < 0.2 else self.fake
        return _ascii(f.first_name()), _ascii(f.last_name())

    def case(self, s: str, lower: float = 0.15) -> str:
        return s.lower() if self.rng.random() < lower else s

    def date(self) -> str:
        d = self.fake.date_between("-6y", "today")
        forms = [f"{d.month}/{d.day:02d}", f"{d.month:02d}/{d.day:02d}/{d.year}", f"{d.day} {d:%B %Y}", d.isoformat(),
                 f"{d:%B} {d.day}, {d.year}", f"{d:%b} '{d:%y}", f"the {_ORD[d.day - 1]} of {d:%B}", f"{d.month}/{d.day}",
                 f"{d:%b}. {d.day}", f"{d.month}/{d.day}/{d:%y}"]
        return self.rng.choice(forms)

    def mrn(self) -> str:
        return f"{self.rng.randrange(10 ** 7):07d}"

    def facility(self) -> str:
        return self.rng.choice([f"St. {self.fake.first_name()}'s Hospital", f"{self.fake.last_name()} Memorial Hospital",
                                "Mercy Clinic", f"{self.fake.last_name()} Medical Center", f"{self.rng.choice(self.cities)}"
                                f" General Hospital", f"{self.fake.last_name()} Family Clinic"])

    def filler(self, note: Note, k: int = 2) -> None:
        for phrase in self.rng.sample(EPONYM_PHRASES + LOOKALIKES, k):
            note.t(f" {self._typo('History')} of {phrase}." if phrase in EPONYM_PHRASES else f" {phrase}.")

    def _typo(self, word: str) -> str:
        typo = TYPOS.get(word.lower(), word) if self.rng.random() < 0.1 else word.lower()
        return typo.capitalize() if word[0].isupper() else typo

    def address(self, note: Note) -> None:
        street = f"{self.fake.building_number()} {self.fake.street_name()}"
        if self.rng.random() < 0.3:
            street += f" Apt {self.rng.randint(1, 40)}"
        city = self.rng.choice(self.cities) if self.rng.random() < 0.7 else self.fake.city()
        state = self.fake.state_abbr(include_territories=False)
        note.p("STREET", street).t(", ").p("CITY", city).t(", ").p("STATE", state).t(" ").p("ZIP", self.fake.zipcode())

    def discharge(self, note: Note, first: str, last: str, ctx: dict) -> None:
        doc_first, doc_last = self.person()
        note.t("DISCHARGE SUMMARY\nPatient: ").name(first, last, style="last-first" if self.rng.random() < .4 else "plain")
        note.t("  MRN: ").p("MRN", ctx["mrn"]).t("\nDOB: ").p("DATE", ctx["dob_text"]).t("  Admitted: ")
        note.p("DATE", self.date()).t("  Discharged: ").p("DATE", self.date()).t("\nAttending: Dr. ")
        note.p("LAST_NAME", self.case(doc_last, 0.3)).t("\n\nHISTORY: ")
        age = self.rng.choice([ctx["age"], self.rng.randint(90, 103)])
        note.t("Mr. " if self.rng.random() < .5 else "Ms. ").p("LAST_NAME", last).t(" is a ")
        note.p("AGE", str(age)) if age > 89 else note.t(str(age))
        note.t(f"-year-old {self.rng.choice(['man', 'woman'])} {self._typo('with')} history of ")
        note.t(self.rng.choice(EPONYM_PHRASES)).t(" admitted from ").p("FACILITY", ctx["facility"]).t(" on ")
        note.p("DATE", self.date()).t(".")
        self.filler(note)
        note.t(" Seen by ").name(self.case(doc_first, .3), self.case(doc_last, .3)).t(" in consultation.")
        note.t(" Lives with ").t(self.rng.choice(["wife", "husband", "daughter", "son"])).t(" ").p("FIRST_NAME", ctx["rel"])
        note.t(" at ")
        self.address(note)
        note.t(". Contact ").p("PHONE", self.fake.phone_number()).t(". Follow up with Dr. ")
        note.p("LAST_NAME", self.case(self.person()[1], .2)).t(" in ").p("DATE", self.rng.choice(
            ["April", "May", "June", "August", "January"])).t(".\n")

    def nurse(self, note: Note, first: str, last: str, ctx: dict) -> None:
        note.t("NURSING NOTE ").p("DATE", self.date()).t("\npt ").name(self.case(first, .5), self.case(last, .5))
        note.t(f" resting in bed, {self._typo('denies')} {self._typo('pain')}.")
        self.filler(note)
        note.t(" ").t(self.rng.choice(["Wife", "Son", "Daughter", "Husband"])).t(" ").p("FIRST_NAME", ctx["rel"])
        note.t(" called at ").p("PHONE", self.fake.phone_number()).t(" and asked about discharge.")
        if self.rng.random() < .5:
            note.t(" Email from family: ").p("EMAIL", self.fake.email()).t(".")
        if self.rng.random() < .4:
            note.t(" SSN on file ").p("SSN", self.fake.ssn()).t(".")
        note.t(" Spoke with ").name(None, self.case(self.person()[1], .3)).t(" RN re: ").t(self.rng.choice(
            EPONYM_PHRASES)).t(". Acct ").p("ACCOUNT", str(self.rng.randrange(10 ** 8, 10 ** 9))).t(".")
        if self.rng.random() < .5:
            note.t(" Plan: transfer to ").p("FACILITY", ctx["facility"]).t(" on ").p("DATE", self.date()).t(".")
        note.t(" -- ").name(self.person()[0], self.person()[1]).t(", RN\n")

    def radiology(self, note: Note, first: str, last: str, ctx: dict) -> None:
        note.t("RADIOLOGY REPORT\nName: ").name(first, last, style="last-first").t("   MR#: ").p("MRN", ctx["mrn"])
        note.t("\nExam date: ").p("DATE", self.date()).t("   Referring: ").name(None, self.case(self.person()[1], .3))
        note.t(", MD\nINDICATION: ").p("AGE", str(self.rng.randint(90, 101))).t(" yo with fall.").t(
            " Prior study ").p("DATE", self.date()).t(" at ").p("FACILITY", ctx["facility"]).t(".")
        note.t(" Pacemaker serial number ").p("DEVICE", f"PM{self.rng.randrange(10 ** 6, 10 ** 7)}").t(".")
        note.t("\nFINDINGS: ").t(self.rng.choice(["C6C7T1 levels unremarkable.", "No Bankart lesion.",
                                                  "Degenerative change at L4-L5."]))
        self.filler(note, 1)
        note.t(" Results called to ").name(self.case(self.person()[0], .4), self.case(self.person()[1], .4))
        note.t(" at ").p("PHONE", self.fake.phone_number()).t(". Images: ").p("URL", self.fake.url()).t("\n")

    def note(self, i: int) -> tuple[dict, list[dict]]:
        first, last = self.person()
        dob = self.fake.date_of_birth(minimum_age=20, maximum_age=100)
        ctx = {"mrn": self.mrn(), "dob_text": self.rng.choice([f"{dob:%m/%d/%Y}", dob.isoformat(), f"{dob:%B} {dob.day}, "
                                                                f"{dob.year}"]),
               "age": self.rng.randint(20, 89), "facility": self.facility(), "rel": self.person()[0]}
        note = Note()
        self.rng.choice([self.discharge, self.nurse, self.radiology])(note, first, last, ctx)
        doc = f"note{i:04d}"
        hints = {"name": f"{first} {last}", "mrn": ctx["mrn"], "dob": dob.isoformat()}
        return ({"doc": doc, "patient": f"P{i:04d}", "text": note.text, "hints": hints},
                [{"doc": doc, "start": s, "end": e, "type": t} for s, e, t in note.spans])


_ORD = ("first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth "
        "fifteenth sixteenth seventeenth eighteenth nineteenth twentieth twenty-first twenty-second twenty-third "
        "twenty-fourth twenty-fifth twenty-sixth twenty-seventh twenty-eighth twenty-ninth thirtieth thirty-first").split()


def generate(n: int, seed: int = 7) -> tuple[list[dict], list[dict]]:
    """``n`` notes and their gold spans."""
    corpus = Corpus(seed)
    notes, gold = [], []
    for i in range(n):
        note, spans = corpus.note(i)
        notes.append(note)
        gold += spans
    return notes, gold


def write(notes: list[dict], gold: list[dict], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "notes.jsonl").write_text("".join(json.dumps(n) + "\n" for n in notes), encoding="utf-8")
    (out / "gold.jsonl").write_text("".join(json.dumps(g, separators=(",", ":")) + "\n" for g in gold), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=int, default=300)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    write(*generate(args.notes, args.seed), args.out)


if __name__ == "__main__":
    main()
