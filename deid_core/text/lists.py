"""The shipped word lists (names, places, eponyms, medical terms; data/SOURCES.md) and the Aho-Corasick
automaton that finds all of them in one pass over a note.

Lists are matched on a *folded* copy of the note: lower case, every character that is not a letter or a digit
(apostrophes and hyphens inside words aside) turned into a space, the same length as the note, so offsets
carry over. Each list entry is searched as `` entry `` (spaces around), which finds whole words only.
"""
from __future__ import annotations

import gzip
import re
from functools import lru_cache
from pathlib import Path
from typing import Final

import ahocorasick

DATA: Final = Path(__file__).resolve().parent / "data"

# Word classes of the automaton's values (bit flags; a word may be in several lists).
FIRST, LAST, WORD, EPONYM, MEDICAL, CITY, STATE, COUNTRY, COMMON = (1 << i for i in range(9))
_FILES: Final = {FIRST: "first_names.txt", LAST: "last_names.txt", WORD: "name_words.txt", EPONYM: "eponyms.txt",
                 MEDICAL: "medical_terms.txt", CITY: "cities.txt", COUNTRY: "countries.txt"}
# Trigger words: the first word of a cue, a month, a facility's head word. A recognizer that needs one runs its
# pattern only where the automaton found it, not over the whole note.
T_MONTH, T_TITLE, T_RELATION, T_ID, T_PHONE, T_ZIP, T_FACILITY, T_STREET = (1 << i for i in range(9, 17))
TRIGGERS: Final = {
    T_MONTH: "january february march april may june july august september october november december jan feb mar apr "
             "jun jul aug sep sept oct nov dec",
    T_TITLE: "dr mr mrs ms miss mx prof doctor",
    T_RELATION: "seen evaluated examined discussed spoke called per pt patient son daughter wife husband mother father "
                "brother sister partner fiance fiancee friend neighbor neighbour attending resident pcp cc signed "
                "dictated electronically name caregiver guardian nurse intern fellow surgeon dear referring referred "
                "niece nephew grandson granddaughter aunt uncle",
    T_ID: "ssn social mrn mr medical record chart hospital patient pt acct account billing member insurance policy "
          "encounter visit license licence lic dl driver driver's drivers dea npi certificate serial s sn device model "
          "implant lot udi",
    T_PHONE: "tel telephone phone ph fax cell mobile pager beeper contact call called",
    T_ZIP: "zip postal postcode",
    T_FACILITY: "hospital clinic center centre infirmary home hospice memorial healthcare care associates pediatrics "
                "rehab institute sanatorium living medicine practice group system health",
}
TRIGGER_FLAGS: Final = sum(TRIGGERS) | T_STREET  # T_STREET: the street suffixes (:func:`street_suffix_words`)
#: Street suffixes are also found before an apostrophe or a hyphen ("Main Street's", "St-"), where a pattern's
#: word boundary falls but the folded note goes on with the word.
_STREET_ENDS: Final = "'-"
#: The suffixes of a street written in lower case ("12 oak street"; deid_core.text.recognizers).
LOWER_STREET_SUFFIXES: Final = ("street", "avenue", "road", "drive", "lane", "boulevard", "court", "place", "way")

#: Words never taken for a name on their own (common English and clinical words).
_COMMON_FILES: Final = ("lorem_words.txt", "clinical_words.txt")

# Folding table: ASCII letters lower-cased, other ASCII punctuation to a space (apostrophe and hyphen kept
# so "O'Brien" and "Smith-Jones" stay one word); non-ASCII letters are lower-cased by str.lower first.
_KEEP: Final = set("abcdefghijklmnopqrstuvwxyz0123456789'-")
_FOLD: Final = {c: (chr(c) if chr(c) in _KEEP else " ") for c in range(128)}
_FOLD.update({ord(c): " " for c in "\u00a0\u2018\u201c\u201d\u2013\u2014\u2022\u00b7\u2026"})
_FOLD[ord("\u2019")] = "'"


_FOLD_ASCII: Final = bytes(ord(_FOLD[ord(chr(c).lower())]) for c in range(128)) + bytes(range(128, 256))  # on ASCII bytes


def fold(text: str) -> str:
    """The note as the automaton reads it: `` `` + lower case, punctuation as spaces + `` `` (same length + 2)."""
    if text.isascii():  # most notes: a byte table, several times faster than a table of characters
        return " " + text.encode("ascii").translate(_FOLD_ASCII).decode("ascii") + " "
    lower = text.lower()
    if len(lower) != len(text):  # a character whose lower case is longer (U+0130): fold it alone
        lower = "".join(c.lower()[0] for c in text)
    return " " + lower.translate(_FOLD) + " "


def read_list(name: str) -> list[str]:
    """The entries of a data file: one per line, ``#`` lines are comments."""
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


@lru_cache(maxsize=None)
def states() -> dict[str, str]:
    """US state name (lower case) -> its two-letter abbreviation."""
    return dict(line.split("|") for line in read_list("states.txt"))


@lru_cache(maxsize=None)
def word_classes() -> dict[str, int]:
    """Every listed word (lower case) -> its class flags."""
    classes: dict[str, int] = {}
    for flag, name in _FILES.items():
        for word in read_list(name):
            classes[word] = classes.get(word, 0) | flag
    for word in states():
        classes[word] = classes.get(word, 0) | STATE
    for flag, words in TRIGGERS.items():
        for word in words.split():
            classes[word] = classes.get(word, 0) | flag
    return classes


@lru_cache(maxsize=None)
def common_words() -> frozenset[str]:
    """Common English and clinical words: an unlisted capitalized word among them is no name."""
    return frozenset(w for name in _COMMON_FILES for w in read_list(name)) | {
        w for w, f in word_classes().items() if f & (WORD | MEDICAL | STATE | COUNTRY | CITY)}


@lru_cache(maxsize=None)
def english() -> frozenset[str]:
    """Lower-case English words (SCOWL size 35, data/SOURCES.md): an unlisted word among them is no name."""
    text = gzip.decompress((DATA / "english_words.txt.gz").read_bytes()).decode("utf-8")
    return frozenset(w for w in text.splitlines() if w and not w.startswith("#")) | common_words()


@lru_cache(maxsize=None)
def stop_words() -> frozenset[str]:
    """Function words, clinical words, titles and credentials: never a name, even after a cue."""
    return frozenset(read_list("clinical_words.txt"))


@lru_cache(maxsize=None)
def automaton() -> ahocorasick.Automaton:
    """One Aho-Corasick automaton of all the lists; a match's value is ``(length, word, flags)``."""
    a = ahocorasick.Automaton()
    entries = dict(word_classes())  # and the street suffixes, found for the street patterns only
    for word in street_suffix_words() | set(LOWER_STREET_SUFFIXES):
        entries[word] = entries.get(word, 0) | T_STREET
    for word, flags in entries.items():
        key = f" {fold(word).strip()} "
        a.add_word(key, (len(key) - 2, word, flags))
        if flags & T_STREET:
            for end in _STREET_ENDS:
                a.add_word(key[:-1] + end, (len(key) - 2, word, T_STREET))
    a.make_automaton()
    return a


@lru_cache(maxsize=None)
def first_names() -> tuple[str, ...]:
    return tuple(w for w, f in word_classes().items() if f & FIRST and not f & (WORD | MEDICAL | EPONYM))


@lru_cache(maxsize=None)
def _sexed_first_names() -> tuple[frozenset[str], frozenset[str]]:
    return frozenset(read_list("first_names_female.txt")), frozenset(read_list("first_names_male.txt"))


def sex_of(first_name: str) -> str:
    """``F`` or ``M`` for a first name only Faker's female or male lists hold; ``U`` for one in both (Jean, Robin)
    or in neither."""
    female, male = _sexed_first_names()
    low = first_name.lower()
    return "U" if (low in female) == (low in male) else ("F" if low in female else "M")


@lru_cache(maxsize=None)
def first_names_of_sex(sex: str) -> tuple[str, ...]:
    """The first names of :func:`first_names` of that sex (``F``, ``M`` or ``U``), no trigger word among them."""
    classes = word_classes()
    return tuple(n for n in first_names() if sex_of(n) == sex and not classes[n] & TRIGGER_FLAGS)


@lru_cache(maxsize=None)
def last_names() -> tuple[str, ...]:
    return tuple(w for w, f in word_classes().items() if f & LAST and not f & (WORD | MEDICAL | EPONYM))


@lru_cache(maxsize=None)
def street_suffix_words() -> frozenset[str]:
    """The street suffixes (lower case) and their usual abbreviations."""
    return frozenset(read_list("street_suffixes.txt")) | {"st", "ave", "rd", "blvd", "ln", "dr", "ct", "pl", "hwy",
                                                          "pkwy", "ter", "cir", "sq", "trl"}


@lru_cache(maxsize=None)
def street_suffixes() -> str:
    """A regular-expression alternation of the street suffixes (and their usual abbreviations)."""
    return "|".join(sorted((re.escape(w) for w in street_suffix_words()), key=len, reverse=True))
