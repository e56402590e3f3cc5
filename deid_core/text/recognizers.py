"""Pattern recognizers: dates in every common written form, ages over 89, phone and fax numbers, e-mail
addresses, URLs, identifiers (MRN, SSN, account, licence, device), street addresses, city/state/ZIP,
postal codes, countries and health-care facilities (El Emam & Arbuckle, ch. 8 "Free-Form Text"; the
HIPAA Safe Harbor identifiers, 45 CFR 164.514(b)(2)).

Each recognizer is a pure function ``text -> list[Span]`` built on compiled regular expressions; a shape
that is also a clinical measure (a blood pressure 120/80, a motor strength 5/5, a pain score 7/10, an
obstetric code G2P1A1, vertebral levels C6C7T1) is refused by the pattern or its context.
"""
from __future__ import annotations

import re

from .lists import CITY, COUNTRY, STATE, WORD, states, street_suffixes
from .spans import CUE, LIST, PATTERN, Span

MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
               "october", "november", "december")
_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
          r"sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_ORDINALS = ("first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
             "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth thirtieth").split()
_ORD = rf"(?:(?:twenty|thirty)[- ])?(?:{'|'.join(_ORDINALS)})"
_YEAR = r"(?:(?:19|20)\d{{2}}|['’]\d{{2}})".replace("{{", "{").replace("}}", "}")
_SEP = r"[-/.]"

_DATES = [re.compile(p) for p in (  # on the lower-cased note
    rf"\b(?:19|20)\d{{2}}{_SEP}(?:0?[1-9]|1[0-2]){_SEP}(?:0?[1-9]|[12]\d|3[01])\b",             # 2019-03-14
    rf"(?<![\d/.-])(?:[12]\d|3[01]|0?[1-9])([-/.])(?:[12]\d|3[01]|0?[1-9])\1(?:(?:19|20)\d{{2}}|\d{{2}})(?![\d/])",
    rf"\b{_MONTH}\.?\s+{_DAY}(?:,?\s+{_YEAR})?(?![\w'])",                                       # March 14, 2019
    rf"\b(?:the\s+)?{_DAY}(?:\s+of)?\s+{_MONTH}\b\.?(?:,?\s+{_YEAR}(?![\w']))?",                # 14 March 2019
    rf"\b(?:the\s+)?{_ORD}\s+of\s+{_MONTH}\b(?:,?\s+{_YEAR}(?![\w']))?",                        # the third of July
    rf"\b{_MONTH}\s+(?:the\s+)?{_ORD}\b(?:,?\s+{_YEAR}(?![\w']))?",                             # July the third
    rf"\b{_MONTH}\.?,?\s+(?:of\s+)?{_YEAR}(?![\w'])",                                           # Jan '19, March 2019
    r"(?<![\d/.-])(?:0?[1-9]|1[0-2])/(?:19|20)\d{2}(?![\d/])",                                # 03/2019
)]
# A month and a day without a year ("2/03"), refused after a score's name or before "strength".
_SHORT_DATE = re.compile(r"(?<![\d/.,+-])(?:0?[1-9]|1[0-2])/(?:[12]\d|3[01]|0?[1-9])(?![\d/]|\.\d|\s*(?:strength|power|"
                         r"motor|bilat|on the|mm|cm|%))")
_NOT_A_DATE_BEFORE = re.compile(r"(?:pain|score|strength|power|grade|gcs|apgar|ratio|bp|murmur|reflexes|"
                                r"rated|scale|motor|of|was|is|at)\W*$", re.IGNORECASE)
# A month name alone is a date element after a preposition ("in April", "since May"); "May" and "March"
# only capitalized.
_MONTH_ALONE = re.compile(r"\b(?:in|on|since|during|until|till|from|by|early|late|mid|last|next|this|through|of|"
                          r"before|after|around|between|and)\s+(?:early\s+|late\s+|mid-?)?"
                          r"((?i:january|february|april|june|july|august|september|october|november|december|"
                          r"jan|feb|apr|jun|jul|aug|sept?|oct|nov|dec)\.?|May|March)\b(?!\s+[A-Z][a-z])")

_AGE = [re.compile(p) for p in (  # on the lower-cased note
    r"\b(9\d|1[01]\d)(?=\s*-?\s*(?:years?|yrs?|y/?o|yo|y\.o\.)\b)",
    r"\b(?:aged?|age:)\s*(9\d|1[01]\d)\b",
    r"\b(9\d|1[01]\d)(?=\s?(?:[mf]|male|female|man|woman)\b)",
    r"\b(ninety[- ](?:one|two|three|four|five|six|seven|eight|nine)|ninety|one hundred(?:[- ]and)?(?:[- ]\w+)?)"
    r"(?=[- ]years?[- ]old)",
)]

_PHONE = re.compile(r"(?<![\w/-])(?:\+?1[-.\s]?|001[-.\s]?)?(?:\(\d{3}\)\s?|\d{3}[-.\s])\d{3}[-.\s]\d{4}"
                    r"(?:\s?(?:x|ext\.?)\s?\d{1,5})?(?![\w-])")
_PHONE_CUE = re.compile(r"\b(?:tel|telephone|phone|ph|fax|cell|mobile|pager|beeper|contact|call(?:ed)? at)\b\.?:?\s*#?\s*"
                        r"((?:\+?\d[\d\s().-]{5,}\d)(?:\s?(?:x|ext\.?)\s?\d{1,5})?)")
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"')\]]+[^\s<>\"')\].,;:!?]|\b[\w-]+\.(?:com|org|net|edu|gov|io|info)"
                  r"(?:/[^\s<>\"')\]]*[^\s<>\"')\].,;:!?])?\b")
_SSN = re.compile(r"(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])")
_ID_CUES = (("SSN", r"ssn|social security(?:\s+(?:number|no\.?|#))?"),
            ("MRN", r"mrn|mr\s?#|medical record(?:\s+(?:number|no\.?|#))?|record\s+(?:number|no\.?|#)|chart\s+(?:number|#)|"
                    r"hospital\s+(?:number|no\.?|#|id)|patient\s+id|pt\s+id"),
            ("ACCOUNT", r"acct\.?|account(?:\s+(?:number|no\.?|#))?|billing\s+(?:number|#)|member\s+id|insurance\s+id|"
                        r"policy(?:\s+(?:number|no\.?|#))?|encounter(?:\s+(?:number|no\.?|#))?|visit\s+(?:number|#)"),
            ("LICENSE", r"licen[cs]e(?:\s+(?:number|no\.?|#))?|lic\.?|dl|driver'?s\s+licen[cs]e(?:\s+(?:number|no\.?|#))?|"
                        r"dea(?:\s+(?:number|no\.?|#))?|npi|certificate(?:\s+(?:number|no\.?|#))?"),
            ("DEVICE", r"serial(?:\s+(?:number|no\.?|#))?|s/n|sn|device(?:\s+(?:id|serial|number|#))?|"
                       r"model(?:\s+(?:number|no\.?|#))?|implant\s+id|lot(?:\s+(?:number|no\.?|#))?|udi"))
_ID_CUE = re.compile(r"\b(?:" + "|".join(f"(?P<{name}>{cue})" for name, cue in _ID_CUES) +
                     r")(?:\s*(?:number|no\.?|#|:|is|was|=))*\s*([a-z]{0,4}[-#]?\d[\w-]*\d|\d)(?![\w])")
# Unlabelled identifiers: six digits or more (letters before or after allowed), not a decimal.
_ID_BARE = re.compile(r"(?<![\w.,/-])(?=[A-Za-z]{0,3}-?\d{6})[A-Za-z]{0,3}-?\d[\d-]{5,}[A-Za-z]?(?![\w,/-]|\.\d)")

_STATE_NAMES = sorted(states(), key=len, reverse=True)
_ABBR = "|".join(states().values())
# Two-letter codes that are also clinical or common words need a ZIP or a listed city.
AMBIGUOUS_ABBR = frozenset("MD PA ME IN OR OK HI MA MS DE LA CO NE AL GA ID OH".split())
_CAP = r"[A-Z][a-zA-Z'’.-]+"
_CITY_STATE = re.compile(rf"\b({_CAP}(?:[ -]{_CAP}){{0,2}}),\s+(?:({_ABBR})\b\.?|((?i:{'|'.join(_STATE_NAMES)}))\b)"
                         r"(?:,?\s+(\d{5}(?:-\d{4})?))?(?![\w-])")
_ZIP_CUE = re.compile(r"\b(?:zip(?:\s*code)?|postal\s+code|postcode)\s*:?\s*(\d{5}(?:-\d{4})?|[a-z]\d[a-z]\s?\d[a-z]\d)\b")
_POSTAL = re.compile(r"\b(?:[A-Z]\d[A-Z]\s\d[A-Z]\d|[A-Z]{1,2}\d[A-Z\d]?\s\d[A-Z]{2})\b")
_STREET_WORDS = r"(?:(?:[NSEW]\.?|North|South|East|West)\s+)?(?:[A-Z0-9][a-zA-Z0-9'’.-]*\s+){1,3}?"
_UNIT = r"(?:,?\s+(?:apt\.?|apartment|suite|ste\.?|unit|#|room|rm\.?|floor|fl\.?)\s*#?\s*[\w-]+)?"
_STREET = re.compile(rf"(?<![\w/-])\d{{1,6}}(?:-\d+)?[A-Z]?\s+{_STREET_WORDS}(?:(?i:{street_suffixes()}))\b\.?{_UNIT}"
                     r"|\bP\.?\s?O\.?\s+Box\s+\d+")
_STREET_LOWER = re.compile(r"(?<![\w/-])\d{1,6}\s+(?:[a-z][a-z'-]*\s+){1,3}?(?:street|avenue|road|drive|lane|boulevard|"
                           rf"court|place|way){_UNIT}\b")  # on the lower-cased note
_FACILITY_HEADS = (r"Hospital|Medical Center|Medical Centre|Health Center|Health Centre|Clinic|Infirmary|Nursing Home|"
                   r"Rehabilitation Center|Rehab Center|Rehab|Hospice|Care Center|Health System|Healthcare|Health Care|"
                   r"Urgent Care|Surgery Center|Surgical Center|Cancer Center|Cancer Institute|Children's Hospital|"
                   r"Medical Group|Family Practice|Family Medicine|Pediatrics|Associates|Sanatorium|Home Health|"
                   r"Assisted Living|Senior Living|Dialysis Center|Imaging Center|Memorial")
_FACILITY = re.compile(rf"\b(?:(?:St\.?|Saint|Mt\.?|Mount)\s+)?(?:{_CAP}\s+(?:of\s+)?){{0,3}}{_CAP}\s+(?:{_FACILITY_HEADS})"
                       rf"\b(?:\s+(?:Hospital|Clinic|Center|Centre)\b)?(?:\s+of\s+{_CAP}(?:\s+{_CAP})?)?"
                       rf"|\b(?:{_FACILITY_HEADS}) of {_CAP}(?: {_CAP})?")
_FACILITY_LEAD = re.compile(r"(?:(?:the|at|to|from|in|on|by|via|per|and|patient|pt|transferred|discharged|admitted|seen|"
                            r"followed|presented|presents|sent|referred|returned|dr|call|called|contact|with)\b\.?\s+)+",
                            re.IGNORECASE)


def lower(text: str) -> str:
    """The note in lower case, the same length (the case-insensitive patterns run on it, without
    ``re.IGNORECASE``, which is about twice as slow)."""
    low = text.lower()
    return low if len(low) == len(text) else "".join(c.lower()[0] for c in text)


def _spans(pattern: re.Pattern, text: str, type_: str, source: str, priority: int, group: int = 0,
           low: str | None = None) -> list[Span]:
    """The spans of ``pattern`` (run on ``low`` when given) with the note's own text."""
    return [Span(m.start(group), m.end(group), type_, text[m.start(group):m.end(group)], source, priority)
            for m in pattern.finditer(text if low is None else low) if m.group(group)]


def dates(text: str, low: str | None = None) -> list[Span]:
    """Every written form of a date but a bare year: numeric, ISO, month names, ordinals, "2/03"."""
    low = lower(text) if low is None else low
    out = [s for p in _DATES for s in _spans(p, text, "DATE", "date", PATTERN, low=low)]
    for m in _SHORT_DATE.finditer(low):
        if not _NOT_A_DATE_BEFORE.search(text, max(0, m.start() - 12), m.start()):
            out.append(Span(m.start(), m.end(), "DATE", text[m.start():m.end()], "date", PATTERN))
    out += _spans(_MONTH_ALONE, text, "DATE", "month", CUE, 1)
    return out


def ages(text: str, low: str) -> list[Span]:
    """Ages over 89 (Safe Harbor aggregates them into "90 or older"): the number only."""
    return [s for p in _AGE for s in _spans(p, text, "AGE", "age", PATTERN, 1, low)]


def contacts(text: str, low: str) -> list[Span]:
    """Phone and fax numbers, e-mail addresses and URLs."""
    return (_spans(_PHONE, text, "PHONE", "phone", PATTERN, low=low)
            + _spans(_PHONE_CUE, text, "PHONE", "phone-cue", CUE, 1, low)
            + _spans(_EMAIL, text, "EMAIL", "email", PATTERN + 1) + _spans(_URL, text, "URL", "url", PATTERN, low=low))


def identifiers(text: str, low: str) -> list[Span]:
    """MRN, SSN, account, licence and device numbers after their cue word; SSN-shaped and long numbers."""
    out = _spans(_SSN, text, "SSN", "ssn", PATTERN)
    value = len(_ID_CUES) + 1
    for m in _ID_CUE.finditer(low):
        kind = next(n for n, _ in _ID_CUES if m.group(n))
        out.append(Span(m.start(value), m.end(), kind, text[m.start(value):m.end()], "id-cue", PATTERN + 2))
    return out + _spans(_ID_BARE, text, "ID", "id", LIST)


def places(text: str, low: str, words: list[tuple[int, int, int]]) -> list[Span]:
    """Street addresses, "City, ST 12345", postal codes, and listed cities, states and countries.

    ``words`` are the list matches of the note (:func:`deid_core.text.lists.find_words`)."""
    out = (_spans(_STREET, text, "STREET", "street", PATTERN)
           + _spans(_STREET_LOWER, text, "STREET", "street", PATTERN, low=low))
    for m in _CITY_STATE.finditer(text):
        city, abbr, zip_ = m.group(1), m.group(2), m.group(4)
        if abbr and abbr in AMBIGUOUS_ABBR and not zip_ and city.lower() not in _listed_cities(words, text, m):
            continue
        city_start = m.start(1)
        lead = _FACILITY_LEAD.match(city)
        if lead:
            city_start += lead.end()
        if city_start < m.end(1):
            out.append(Span(city_start, m.end(1), "CITY", text[city_start:m.end(1)], "city-state", PATTERN))
        st = 2 if abbr else 3
        out.append(Span(m.start(st), m.end(st), "STATE", m.group(st), "city-state", PATTERN))
        if zip_:
            out.append(Span(m.start(4), m.end(4), "ZIP", zip_, "city-state", PATTERN + 1))
    out += _spans(_ZIP_CUE, text, "ZIP", "zip-cue", PATTERN + 1, 1, low) + _spans(_POSTAL, text, "ZIP", "postal", PATTERN)
    for start, end, flags in words:
        if not text[start].isupper() or flags & WORD and not flags & (STATE | COUNTRY):
            continue
        if flags & CITY:
            out.append(Span(start, end, "CITY", text[start:end], "city-list", LIST))
        elif flags & STATE:
            out.append(Span(start, end, "STATE", text[start:end], "state-list", LIST))
        elif flags & COUNTRY:
            out.append(Span(start, end, "COUNTRY", text[start:end], "country-list", LIST))
    return out


def _listed_cities(words: list[tuple[int, int, int]], text: str, m: re.Match) -> set[str]:
    return {text[s:e].lower() for s, e, f in words if f & CITY and m.start(1) <= s and e <= m.end(1)}


def facilities(text: str) -> list[Span]:
    """Named health-care facilities ("St. Mary's Hospital", "Mercy Clinic"), without a leading "the"/"at"."""
    out = []
    for m in _FACILITY.finditer(text):
        start = m.start()
        lead = _FACILITY_LEAD.match(text, start, m.end())
        if lead:
            start = lead.end()
        if " " in text[start:m.end()].strip():
            out.append(Span(start, m.end(), "FACILITY", text[start:m.end()], "facility", PATTERN))
    return out


__all__ = ["MONTH_NAMES", "ages", "contacts", "dates", "facilities", "identifiers", "places", "LIST", "CUE"]
