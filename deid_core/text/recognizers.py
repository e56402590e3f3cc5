"""Pattern recognizers: dates in every common written form, ages over 89, phone and fax numbers, e-mail
addresses, URLs, identifiers (MRN, SSN, account, licence, device), street addresses, city/state/ZIP,
postal codes, countries and health-care facilities (El Emam & Arbuckle, ch. 8 "Free-Form Text"; the
HIPAA Safe Harbor identifiers, 45 CFR 164.514(b)(2)).

Each recognizer is a pure function ``Note -> list[Found]`` (a span's fields in a plain tuple,
:data:`deid_core.text.spans.Found`) on compiled regular expressions. Patterns over the
whole note begin with a digit or, where digits stand before a separator (``3/14``, ``123-45-6789``), with the
separator, a literal the engine skips to; the others run only in a window around a
trigger word the automaton found (a month, a cue word, a facility's head word; :mod:`deid_core.text.note`).
A shape that is also a clinical measure (a blood pressure 120/80, a motor strength 5/5, a pain score 7/10, an
obstetric code G2P1A1, vertebral levels C6C7T1) is refused by the pattern, its context or the calendar.
"""
from __future__ import annotations

import re
from typing import Final

from .lists import (CITY, COUNTRY, LOWER_STREET_SUFFIXES, STATE, T_FACILITY, T_ID, T_MONTH, T_PHONE, T_STREET,
                    T_ZIP, WORD, states, street_suffixes)
from .note import Note
from .spans import CUE, LIST, PATTERN, Found
from .textdates import read
_MONTH: Final = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
                 r"sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_DAY: Final = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_ORDINALS: Final = ("first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
                    "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth thirtieth").split()
_ORD: Final = rf"(?:(?:twenty|thirty)[- ])?(?:{'|'.join(_ORDINALS)})"
_YEAR: Final = r"(?:(?:19|20)\d{2}|['’]\d{2})"

# On the lower-cased note. A pattern with digits before a separator is searched from the separator, a literal
# the regular-expression engine skips to (it tests every digit of the note otherwise, several times slower);
# the digits before it are in a look-behind, and the match starts at :func:`_start`. Numeric dates are
# checked against the calendar after.


def _after_digits(sep: str, no: str, rest: str) -> re.Pattern[str]:
    """``rest`` after one or two digits and ``sep``, the digits not after a character of the class ``no``."""
    s = re.escape(sep)
    return re.compile(rf"{s}(?:(?<=(?<!{no})\d\d{s})|(?<=(?<!{no})\d{s})){rest}")


#: Each numeric date pattern, how far before the separator it is searched from its match begins (0: one or two
#: digits, :func:`_start`), and its shapes: an ASCII note's shape (:meth:`Note.shape`) holds one of them wherever
#: the pattern matches (its digits and separators), and a note without any is not searched.
_NUMERIC_DATES: Final = [date for sep in "-/." for date in (
    (re.compile(rf"\{sep}(?<=(?<![\w/.-])[12][09]\d\d\{sep})\d\d?[-/.]\d\d?(?![\d/])"), 4,          # 2019-03-14
     (f"0000{sep}0".encode(),)),
    (_after_digits(sep, r"[\w/.-]", rf"\d\d?\{sep}(?:\d{{4}}|\d{{2}})(?![\d/])"), 0,                 # 3-14-19
     (f"0{sep}0{sep}00".encode(), f"0{sep}00{sep}00".encode())),
    *([(_after_digits("/", r"[\w/.-]", r"(?:19|20)\d\d(?![\d/])"), 0, (b"0/0000",))] if sep == "/" else []),  # 03/2019
)]
_NAMED_DATES: Final = re.compile("|".join((  # one alternation: at a start, the first form that matches
    rf"\b{_MONTH}\.?\s+{_DAY}(?:,?\s+{_YEAR})?(?![\w'])",                                  # March 14, 2019
    rf"\b(?:the\s+)?{_DAY}(?:\s+of)?\s+{_MONTH}\b\.?(?:,?\s+{_YEAR}(?![\w']))?",           # 14 March 2019
    rf"\b(?:the\s+)?{_ORD}\s+of\s+{_MONTH}\b(?:,?\s+{_YEAR}(?![\w']))?",                   # the third of July
    rf"\b{_MONTH}\s+(?:the\s+)?{_ORD}\b(?:,?\s+{_YEAR}(?![\w']))?",                        # July the third
    rf"\b{_MONTH}\.?,?\s+(?:of\s+)?{_YEAR}(?![\w'])",                                      # Jan '19, March 2019
)))
# A month and a day without a year ("2/03"), refused after a score's name or before "strength".
_SHORT_DATE: Final = _after_digits("/", r"[\w/.,+-]", r"\d\d?(?![\d/]|\.\d|\s*(?:strength|power|motor|bilat|on the|mm|cm|%))")
_NOT_A_DATE_BEFORE: Final = re.compile(r"(?:pain|score|strength|power|grade|gcs|apgar|ratio|bp|murmur|reflexes|rated|scale|"
                                       r"motor|of|was|is|at)\W*$")
# A month name alone is a date element after a preposition ("in April", "since May"); "May" and "March"
# only capitalized. On the note itself.
_MONTH_ALONE: Final = re.compile(r"\b(?:in|on|since|during|until|till|from|by|early|late|mid|last|next|this|through|of|"
                                 r"before|after|around|between|and)\s+(?:early\s+|late\s+|mid-?)?"
                                 r"((?i:january|february|april|june|july|august|september|october|november|december|"
                                 r"jan|feb|apr|jun|jul|aug|sept?|oct|nov|dec)\.?|May|March)\b(?!\s+[A-Z][a-z])")

# A number from 90 to 119 standing alone (no digit next to it), as every form of _AGE has it.
_AGE_NUMBER: Final = re.compile(r"9\d(?!\d)(?<!\d..)|1[01]\d(?!\d)(?<!\d...)")
_AGE: Final = re.compile("|".join((  # on the lower-cased note, around a number from 90 to 119
    r"\b(9\d|1[01]\d)(?=\s*-?\s*(?:years?|yrs?|y/?o|yo|y\.o\.)\b)",
    r"\b(?:aged?|age:)\s*(9\d|1[01]\d)\b",
    r"\b(9\d|1[01]\d)(?=\s?(?:[mf]|male|female|man|woman)\b)",
)))
_AGE_WORD_CORE: Final = re.compile(r"ninety|hundred")
_AGE_WORDS: Final = re.compile(r"\b(ninety[- ](?:one|two|three|four|five|six|seven|eight|nine)|ninety|one hundred(?:[- ]and)?"
                               r"(?:[- ]\w+)?)(?=[- ]years?[- ]old)")

_PHONE_CORE: Final = re.compile(r"\d\d\d[-.\s]\d{4}")
_PHONE: Final = re.compile(r"(?<![\w/-])(?:\+?1[-.\s]?|001[-.\s]?)?(?:\(\d{3}\)\s?|\d{3}[-.\s])\d{3}[-.\s]\d{4}"
                           r"(?:\s?(?:x|ext\.?)\s?\d{1,5})?(?![\w-])")
_PHONE_CUE: Final = re.compile(r"\b(?:tel|telephone|phone|ph|fax|cell|mobile|pager|beeper|contact|call(?:ed)? at)\b\.?:?\s*#?\s*"
                               r"((?:\+?\d[\d\s().-]{5,}\d)(?:\s?(?:x|ext\.?)\s?\d{1,5})?)")
_EMAIL_CORE: Final = re.compile(r"@")
_EMAIL: Final = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_URL_CORE: Final = re.compile(r"://|www\.|\.(?:com|org|net|edu|gov|io|info)\b")
_URL: Final = re.compile(r"\b(?:https?://|www\.)[^\s<>\"')\]]+[^\s<>\"')\].,;:!?]|\b[\w-]+\.(?:com|org|net|edu|gov|io|info)"
                  r"(?:/[^\s<>\"')\]]*[^\s<>\"')\].,;:!?])?\b")
_SSN: Final = re.compile(r"-(?<=(?<![\w-])\d\d\d-)\d\d-\d{4}(?![\w-])")  # from its first hyphen, 3 digits back
_ID_CUES: Final = (("SSN", r"ssn|social security(?:\s+(?:number|no\.?|#))?"),
                   ("MRN", r"mrn|mr\s?#|medical record(?:\s+(?:number|no\.?|#))?|record\s+(?:number|no\.?|#)|chart\s+(?:number|#)|"
                    r"hospital\s+(?:number|no\.?|#|id)|patient\s+id|pt\s+id"),
                   ("ACCOUNT", r"acct\.?|account(?:\s+(?:number|no\.?|#))?|billing\s+(?:number|#)|member\s+id|insurance\s+id|"
                        r"policy(?:\s+(?:number|no\.?|#))?|encounter(?:\s+(?:number|no\.?|#))?|visit\s+(?:number|#)"),
                   ("LICENSE", r"licen[cs]e(?:\s+(?:number|no\.?|#))?|lic\.?|dl|driver'?s\s+licen[cs]e(?:\s+(?:number|no\.?|#))?|"
                        r"dea(?:\s+(?:number|no\.?|#))?|npi|certificate(?:\s+(?:number|no\.?|#))?"),
                   ("DEVICE", r"serial(?:\s+(?:number|no\.?|#))?|s/n|sn|device(?:\s+(?:id|serial|number|#))?|"
                       r"model(?:\s+(?:number|no\.?|#))?|implant\s+id|lot(?:\s+(?:number|no\.?|#))?|udi"))
_ID_CUE: Final = re.compile(r"\b(?:" + "|".join(f"(?P<{name}>{cue})" for name, cue in _ID_CUES) +
                            r")(?:\s*(?:number|no\.?|#|:|is|was|=))*\s*([a-z]{0,4}[-#]?\d[\w-]*\d|\d)(?![\w])")
# Unlabelled identifiers: six digits or more (letters before or after allowed), not a decimal.
_ID_CORE: Final = re.compile(r"\d{6}")
_ID_BARE: Final = re.compile(r"(?<![\w.,/-])(?=[A-Za-z]{0,3}-?\d{6})[A-Za-z]{0,3}-?\d[\d-]{5,}[A-Za-z]?(?![\w,/-]|\.\d)")

_STATE_NAMES: Final = sorted(states(), key=len, reverse=True)
_ABBR: Final = "|".join(states().values())
# Two-letter codes that are also clinical or common words need a ZIP or a listed city.
AMBIGUOUS_ABBR: Final = frozenset("MD PA ME IN OR OK HI MA MS DE LA CO NE AL GA ID OH".split())
_CAP: Final = r"[A-Z][a-zA-Z'’.-]+"
_STATE_CORE: Final = re.compile(r",[ \t]+[A-Z]")
# "City, ST 12345" and "City, State 12345", run apart so that "Knolls, Washington, WI 90977" yields both readings
# and overlap resolution keeps the city of the second.
# Each with its gate: a comma and the state, searched over the whole note first (a literal the engine skips to);
# a note without one cannot match, and most notes have none.
_CITY_STATE: Final = [(re.compile(rf"\b({_CAP}(?:[ -]{_CAP}){{0,2}}),\s+({state})" r"(?:,?\s+(\d{5}(?:-\d{4})?))?(?![\w-])"), abbr,
                       re.compile(rf",\s+(?:{state})"))
                      for state, abbr in ((rf"(?:{_ABBR})\b\.?", True), (rf"(?i:{'|'.join(_STATE_NAMES)})\b", False))]
_ZIP_CUE: Final = re.compile(r"\b(?:zip(?:\s*code)?|postal\s+code|postcode)\s*:?\s*(\d{5}(?:-\d{4})?|[a-z]\d[a-z]\s?\d[a-z]\d)\b")
_POSTAL: Final = re.compile(r"[A-Z](?<![\w][A-Z])(?:\d[A-Z]\s\d[A-Z]\d|[A-Z]?\d[A-Z\d]?\s\d[A-Z]{2})\b")
_STREET_WORDS: Final = r"(?:(?:[NSEW]\.?|North|South|East|West)\s+)?(?:[A-Z0-9][a-zA-Z0-9'’.-]*\s+){1,3}?"
_UNIT: Final = r"(?:,?\s+(?:apt\.?|apartment|suite|ste\.?|unit|#|room|rm\.?|floor|fl\.?)\s*#?\s*[\w-]+)?"
_STREET: Final = re.compile(rf"\d(?<![\w/-]\d)\d{{0,5}}(?:-\d+)?[A-Z]?\s+{_STREET_WORDS}(?:(?i:{street_suffixes()}))\b\.?{_UNIT}")
_STREET_LOWER: Final = re.compile(r"\d(?<![\w/-]\d)\d{0,5}\s+(?:[a-z][a-z'-]*\s+){1,3}?(?:" + "|".join(LOWER_STREET_SUFFIXES) +
                                  rf"){_UNIT}\b")  # on the lower-cased note
# A street's number is at most this far before its suffix, its unit this far after (the window of _streets).
_STREET_WINDOW: Final = (120, 50)
_STREET_LEAD: Final = re.compile(r"\d[\d-]*[A-Z]?(?: [A-Z0-9][A-Za-z0-9'’.-]*){1,4}$")
_STREET_LEAD_LOWER: Final = re.compile(r"\d(?: [A-Za-z][A-Za-z'-]*){1,3}$")
_PO_BOX: Final = re.compile(r"p(?<![\w]p)\.?\s?o\.?\s+box\s+\d+")  # on the lower-cased note
_FACILITY_HEADS: Final = (r"Hospital|Medical Center|Medical Centre|Health Center|Health Centre|Clinic|Infirmary|Nursing Home|"
                          r"Rehabilitation Center|Rehab Center|Rehab|Hospice|Care Center|Health System|Healthcare|Health Care|"
                          r"Urgent Care|Surgery Center|Surgical Center|Cancer Center|Cancer Institute|Children's Hospital|"
                          r"Medical Group|Family Practice|Family Medicine|Pediatrics|Associates|Sanatorium|Home Health|"
                          r"Assisted Living|Senior Living|Dialysis Center|Imaging Center|Memorial")
_FACILITY: Final = re.compile(rf"\b(?:(?:St\.?|Saint|Mt\.?|Mount)\s+)?(?:{_CAP}\s+(?:of\s+)?){{0,3}}{_CAP}\s+(?:{_FACILITY_HEADS})"
                              rf"\b(?:\s+(?:Hospital|Clinic|Center|Centre)\b)?(?:\s+of\s+{_CAP}(?:\s+{_CAP})?)?"
                              rf"|\b(?:{_FACILITY_HEADS}) of {_CAP}(?: {_CAP})?")
#: Where a pattern that begins with a word boundary and a capital can begin: a capital after no word character.
_CAPITAL_START: Final = re.compile(r"[A-Z](?<!\w[A-Z])")
_FACILITY_LEAD: Final = re.compile(r"(?:(?:the|at|to|from|in|on|by|via|per|and|patient|pt|transferred|discharged|admitted|seen|"
                                   r"followed|presented|presents|sent|referred|returned|dr|call|called|contact|with)\b\.?\s+)+",
                                   re.IGNORECASE)


def _span(note: Note, m: re.Match[str], type_: str, source: str, priority: int, group: int = 0) -> Found:
    start, end = m.span(group)
    return start, end, type_, note.text[start:end], source, priority


def _cores(note: Note, pattern: re.Pattern[str], *shapes: bytes) -> list[tuple[int, int]]:
    """Where ``pattern`` (digits and separators, the ``shapes`` of :meth:`Note.shaped`) matches in the note."""
    found = note.shaped(*shapes)
    return found if found is not None else [m.span() for m in pattern.finditer(note.low)]


def _start(low: str, m: re.Match[str], back: int) -> int:
    """Where a match found from its separator begins: ``back`` characters before it, or (``back`` 0) one or two
    digits before it."""
    at = m.start()
    return at - back if back else (at - 2 if at >= 2 and low[at - 2].isdigit() else at - 1)


def _from_separator(note: Note, pattern: re.Pattern[str], back: int, type_: str, source: str) -> list[Found]:
    low, text = note.low, note.text
    return [(start, m.end(), type_, text[start:m.end()], source, PATTERN)
            for m in pattern.finditer(low) for start in (_start(low, m, back),)]


def _all(note: Note, pattern: re.Pattern[str], type_: str, source: str, priority: int, lowered: bool = True) -> list[Found]:
    return [_span(note, m, type_, source, priority) for m in pattern.finditer(note.low if lowered else note.text)]


def dates(note: Note) -> list[Found]:
    """Every written form of a date but a bare year: numeric (checked against the calendar), ISO, month names,
    ordinals, "2/03" (not after a score's name)."""
    out = [s for p, back, shapes in _NUMERIC_DATES if note.holds(*shapes)
           for s in _from_separator(note, p, back, "DATE", "date") if read(s[3])]
    if note.holds(b"0/0"):
        for s in _from_separator(note, _SHORT_DATE, 0, "DATE", "date"):
            if read(s[3]) and not _NOT_A_DATE_BEFORE.search(note.low, max(0, s[0] - 12), s[0]):
                out.append(s)
    months = note.hits(T_MONTH)
    if months:
        out += [_span(note, m, "DATE", "date", PATTERN) for m in note.around(_NAMED_DATES, months, 30, 16)]
        out += [_span(note, m, "DATE", "month", CUE, 1) for m in note.around(_MONTH_ALONE, months, 24, 16, False)]
    return out


def ages(note: Note) -> list[Found]:
    """Ages over 89 (Safe Harbor aggregates them into "90 or older"): the number (or number words) only."""
    numbers = [m.span() for m in _AGE_NUMBER.finditer(note.low)]
    out = [_span(note, m, "AGE", "age", PATTERN, m.lastindex or 0) for m in note.around(_AGE, numbers, 8, 14)]
    low = note.low
    if "ninety" not in low and "hundred" not in low:  # a substring test is cheaper than the scan below
        return out
    words = (m.span() for m in _AGE_WORD_CORE.finditer(low))
    return out + [_span(note, m, "AGE", "age", PATTERN, 1) for m in note.around(_AGE_WORDS, words, 4, 40)]


def contacts(note: Note) -> list[Found]:
    """Phone and fax numbers, e-mail addresses and URLs."""
    phones = _cores(note, _PHONE_CORE, b"000-0000", b"000.0000", b"000 0000")
    return ([_span(note, m, "PHONE", "phone", PATTERN) for m in note.around(_PHONE, phones, 22, 14)]
            + [_span(note, m, "PHONE", "phone-cue", CUE, 1) for m in note.starting_at(_PHONE_CUE, note.hits(T_PHONE))]
            + ([_span(note, m, "EMAIL", "email", PATTERN + 1)
                for m in note.around(_EMAIL, (m.span() for m in _EMAIL_CORE.finditer(note.text)), 64, 64, False)]
               if "@" in note.text else [])
            + [_span(note, m, "URL", "url", PATTERN)
               for m in note.around(_URL, (m.span() for m in _URL_CORE.finditer(note.low)), 64, 120)])


def identifiers(note: Note) -> list[Found]:
    """MRN, SSN, account, licence and device numbers after their cue word; SSN-shaped and long numbers."""
    out = _from_separator(note, _SSN, 3, "SSN", "ssn") if note.holds(b"000-00-0000") else []
    value = len(_ID_CUES) + 1
    for m in note.starting_at(_ID_CUE, note.hits(T_ID)):
        kind = next(n for n, _ in _ID_CUES if m.group(n))
        out.append(_span(note, m, kind, "id-cue", PATTERN + 2, value))
    cores = _cores(note, _ID_CORE, b"000000")
    return out + [_span(note, m, "ID", "id", LIST) for m in note.around(_ID_BARE, cores, 5, 40, False)]


def places(note: Note) -> list[Found]:
    """Street addresses, "City, ST 12345", postal codes, and listed cities, states and countries."""
    text = note.text
    out = [_span(note, m, "STREET", "street", PATTERN) for m in _streets(note)]
    if "box" in note.low:  # a literal of the pattern: most notes have none
        out += _all(note, _PO_BOX, "STREET", "street", PATTERN)
    cores = [m.span() for m in _STATE_CORE.finditer(text)]
    for m, is_abbr in ((m, a) for p, a, gate in _CITY_STATE if cores and gate.search(text)
                       for m in note.around(p, cores, 50, 40, False, _CAPITAL_START)):
        city, zip_ = m.group(1), m.group(3)
        if is_abbr and m.group(2).rstrip(".") in AMBIGUOUS_ABBR and not zip_ and not _listed_city(note, m):
            continue
        city_start = m.start(1)
        lead = _FACILITY_LEAD.match(city)
        if lead:
            city_start += lead.end()
        if city_start < m.end(1):
            out.append((city_start, m.end(1), "CITY", text[city_start:m.end(1)], "city-state", PATTERN + is_abbr))
        out.append(_span(note, m, "STATE", "city-state", PATTERN + is_abbr, 2))
        if zip_:
            out.append(_span(note, m, "ZIP", "city-state", PATTERN + 1, 3))
    out += [_span(note, m, "ZIP", "zip-cue", PATTERN + 1, 1) for m in note.starting_at(_ZIP_CUE, note.hits(T_ZIP))]
    if note.shape is None or b" 0A" in note.shape:  # every postal code has a space, a digit, a capital
        out += _all(note, _POSTAL, "ZIP", "postal", PATTERN, False)
    for start, end, flags in note.having(CITY | STATE | COUNTRY):
        if not text[start].isupper() or flags & WORD and not flags & (STATE | COUNTRY):
            continue
        kind = "CITY" if flags & CITY else ("STATE" if flags & STATE else "COUNTRY")
        out.append((start, end, kind, text[start:end], kind.lower() + "-list", LIST))
    return out


def _streets(note: Note) -> list[re.Match[str]]:
    """Street addresses, searched around their suffix ("Street", "Ave", ...: the automaton's street words that
    follow a space) in ASCII notes, over the whole note in others (whose spaces and case folding the automaton's
    folded copy may not share)."""
    if not note.text.isascii():
        return list(_STREET.finditer(note.text)) + list(_STREET_LOWER.finditer(note.low))
    text = note.text
    # Before a street's suffix: its number, then one to four words (a direction, up to three words), capitalized
    # (or any case before one of the suffixes of the lower-case pattern).
    capitalized, lower = [], []
    for s, e, _ in note.hits(T_STREET):
        if s and text[s - 1].isspace():
            lead = " ".join(text[max(0, s - _STREET_WINDOW[0]):s].split()[-5:])
            if _STREET_LEAD.search(lead):
                capitalized.append((s, e))
            if note.low[s:e] in LOWER_STREET_SUFFIXES and _STREET_LEAD_LOWER.search(lead):
                lower.append((s, e))
    return note.around(_STREET, capitalized, *_STREET_WINDOW, False) + note.around(_STREET_LOWER, lower, *_STREET_WINDOW)


def _listed_city(note: Note, m: re.Match[str]) -> bool:
    return any(f & CITY and m.start(1) <= s and e <= m.end(1) for s, e, f in note.having(CITY | STATE | COUNTRY))


def facilities(note: Note) -> list[Found]:
    """Named health-care facilities ("St. Mary's Hospital", "Mercy Clinic"), without a leading "the"/"at"."""
    out = []
    heads = [w for w in note.hits(T_FACILITY) if note.text[w[0]].isupper()]
    for m in note.around(_FACILITY, heads, 80, 40, False, _CAPITAL_START):
        start = m.start()
        lead = _FACILITY_LEAD.match(note.text, start, m.end())
        if lead:
            start = lead.end()
        if " " in note.text[start:m.end()].strip():
            out.append((start, m.end(), "FACILITY", note.text[start:m.end()], "facility", PATTERN))
    return out
