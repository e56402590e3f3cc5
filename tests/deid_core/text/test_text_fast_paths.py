"""The fast paths of detection find what the plain forms they replace found: the numeric patterns searched from
their separator (deid_core.text.recognizers), credentials found by their letters, streets searched around their
suffix, relation cues split by their first word, "Last, First" from its comma, the name before a credential
searched from where it can begin (deid_core.text.names), ages around a number standing alone. The plain forms are kept here as the
reference and both run on random strings built to hit the edge cases."""
from __future__ import annotations

import random
import re

from deid_core.text.names import _NAME, _RELATION_BY_WORD, _RELATIONS, _credential_leads
from deid_core.text.note import Note
from deid_core.text.recognizers import _NUMERIC_DATES, _SHORT_DATE, _SSN, _STREET, _STREET_LOWER, _from_separator, _streets
from deid_core.text.lists import T_RELATION

REFERENCE_DATES = [re.compile(p) for p in (
    r"[12](?<![\w/.-][12])[09]\d\d[-/.]\d\d?[-/.]\d\d?(?![\d/])",
    r"\d(?<![\w/.-]\d)\d?([-/.])\d\d?\1(?:\d{4}|\d{2})(?![\d/])",
    r"\d(?<![\w/.-]\d)\d?/(?:19|20)\d\d(?![\d/])",
)]
REFERENCE_SHORT = re.compile(r"\d(?<![\w/.,+-]\d)\d?/\d\d?(?![\d/]|\.\d|\s*(?:strength|power|motor|bilat|on the|mm|cm|%))")
REFERENCE_SSN = re.compile(r"\d(?<![\w-]\d)\d\d-\d\d-\d{4}(?![\w-])")
REFERENCE_CREDENTIAL = re.compile(r"(?:,[ \t]*|[ \t]+)(?:RN|MD|NP|LPN|CNA|PhD|MSW|RD|PT|OT)\b|,[ \t]*(?:DO|PA|PA-C)\b")


def _strings(n: int, alphabet: list[str], seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(n)]


def _numbers(n: int, seed: int) -> list[str]:
    """Digit groups joined by separators, with look-alike neighbours on both sides."""
    rng = random.Random(seed)
    groups = ["1", "3", "12", "03", "31", "45", "123", "2019", "1999", "6789", "99", "123-45-6789", "45-6789"]
    seps = list("/-.") + [", ", " "]
    edges = ["", " ", "x", "/", "-", ".", "1", "+", ",", "_"]
    tails = ["", " ", "/", "-", "x", ".5", " mm", " strength", "'"]
    out = []
    for _ in range(n):
        parts = [rng.choice(edges), rng.choice(groups)]
        for _ in range(rng.randint(1, 3)):
            parts += [rng.choice(seps), rng.choice(groups)]
        out.append("".join(parts) + rng.choice(tails) + " " + rng.choice(groups))
    return out


def test_numeric_patterns_match_their_digit_first_forms():
    for text in _numbers(6000, 5):
        note = Note(text)
        got = sorted({s[:2] for p, back, _ in _NUMERIC_DATES
                      for s in _from_separator(note, p, back, "DATE", "")})
        want = sorted({m.span() for p in REFERENCE_DATES for m in p.finditer(text)})
        assert got == want, text
        assert [s[:2] for s in _from_separator(note, _SHORT_DATE, 0, "DATE", "")] == \
            [m.span() for m in REFERENCE_SHORT.finditer(text)], text
        assert [s[:2] for s in _from_separator(note, _SSN, 3, "SSN", "")] == \
            [m.span() for m in REFERENCE_SSN.finditer(text)], text


def test_credential_leads_match_the_lead_first_form():
    alphabet = ["RN", "MD", "DO", "PA", "PA-C", "PhD", "LPN", ",", " ", "  ", "\t", "Smith", "x", "-", "'s", "A"]
    for text in _strings(6000, alphabet, 6):
        assert list(_credential_leads(text)) == [m.start() for m in REFERENCE_CREDENTIAL.finditer(text)], text


def test_streets_around_their_suffix_are_those_of_the_whole_note():
    rng = random.Random(7)
    words = ["12", "4410", "7-B", "N.", "West", "Oak", "oak", "Main", "Street", "street", "St", "St.", "Avenue", "Ave",
             "Dr", "Dr.", "drive", "Way", "Lane", "Apt 4", "Suite 210", "Street's", "St-Jean", ",", "\n", "Smith",
             "Fall", "fall", "Center", "seen", "5", "q", "boulevard", "Blvd", "main", "yo", "with", "2/03", "#12"]
    for _ in range(3000):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(2, 14)))
        for note in (Note(text), Note(text.replace(" ", "\u2003", 1) + " é")):
            want = sorted({m.span() for m in _STREET.finditer(note.text)}
                          | {m.span() for m in _STREET_LOWER.finditer(note.low)})
            assert sorted({m.span() for m in _streets(note)}) == want, note.text


def test_relation_cues_split_by_first_word_match_as_the_whole_alternation():
    whole = re.compile(r"\b(?i:" + "|".join(sorted(_RELATIONS, key=len, reverse=True)) + r")\b:?[ \t]+"
                       rf"((?:{_NAME})(?:[ \t]+(?:{_NAME})){{0,2}})")
    rng = random.Random(8)
    words = list(_RELATIONS) + ["by", "to", "with", "Maria", "villegas", "J.", ":", "SEEN BY", "Pt", "called-to", "is"]
    for _ in range(3000):
        note = Note(" ".join(rng.choice(words) for _ in range(rng.randint(1, 6))))
        for s, e, _ in note.hits(T_RELATION):
            split = _RELATION_BY_WORD.get(note.low[s:e])
            got = split.match(note.text, s) if split else None
            want = whole.match(note.text, s)
            assert (got and got.span(1)) == (want and want.span(1)), note.text


def test_the_word_before_a_run_is_the_one_its_pattern_finds():
    from deid_core.text.names import _word_before

    prev = re.compile(r"(?<![\w.'’-])([A-Za-z][A-Za-z'’-]*[A-Za-z])[ \t]+$")
    rng = random.Random(9)
    alphabet = list("ab AB'’-_.9\t é") + ["Smith", "o'neil", "-x", "  ", "xx"]
    for _ in range(8000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 45)))
        for at in range(len(text) + 1):
            m = prev.search(text, max(0, at - 30), at) if at and text[at - 1] in " \t" else None
            assert _word_before(text, text[::-1], at) == (m.span(1) if m else None), (text, at)


def test_digit_cores_found_in_the_note_shape_are_the_pattern_matches():
    from deid_core.text.recognizers import _ID_CORE, _PHONE_CORE, _POSTAL

    rng = random.Random(10)
    alphabet = list("0123456789" * 2) + list("-. \t\nAZaz") + ["555", "1234", "K1A", "0B6", "\x1c"]
    for _ in range(5000):
        note = Note("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))))
        assert note.shaped(b"000-0000", b"000.0000", b"000 0000") == [m.span() for m in _PHONE_CORE.finditer(note.low)]
        assert note.shaped(b"000000") == [m.span() for m in _ID_CORE.finditer(note.low)]
        assert b" 0A" in note.shape or not _POSTAL.search(note.text), note.text
    assert Note("café 1234567").shaped(b"000000") is None  # not ASCII: the patterns run


def test_resolution_by_groups_of_overlapping_spans_is_the_ranking_over_all():
    import bisect

    from deid_core.text.resolve import resolve
    from deid_core.text.spans import Span

    def ranked_over_all(spans):
        starts, ends, kept = [], [], {}
        for s in sorted(spans, key=lambda s: (s.start - s.end, -s.priority, s.start)):
            i = bisect.bisect_right(starts, s.start)
            if s.end <= s.start or i and ends[i - 1] > s.start or i < len(starts) and starts[i] < s.end:
                continue
            starts.insert(i, s.start)
            ends.insert(i, s.end)
            kept[s.start] = s
        return [kept[start] for start in starts]

    rng = random.Random(11)
    for _ in range(5000):
        spans = [Span(a, a + rng.randint(-1, 8), rng.choice("XYZ"), "t", rng.choice("ab"), rng.choice([10, 20, 30]))
                 for a in (rng.randint(0, 30) for _ in range(rng.randint(0, 12)))]
        assert resolve(spans) == ranked_over_all(spans), spans


def test_last_first_from_the_comma_is_the_scan_of_the_whole_note():
    from deid_core.text.names import _comma_pairs

    whole = re.compile(r"\b([A-Za-z][A-Za-z'’-]*[A-Za-z]),[ \t]*([A-Za-z][A-Za-z'’-]*[A-Za-z])(?:[ \t]+([A-Z])\.?(?!\w))?")
    alphabet = ["Doe", "jane", ",", ", ", " ", "A", "B.", "x", "-", "'", "’", "3", "_", "é", "\t", "Smith", "o'neil", "Q"]
    for text in _strings(20000, alphabet, 12):
        want = [(m.start(1), m.end(1), m.span(2), m.span(3) if m.group(3) else None) for m in whole.finditer(text)]
        got = [(start, comma, m.span(1), m.span(2) if m.group(2) else None) for start, comma, m in _comma_pairs(text)]
        assert got == want, text


def test_the_name_before_a_credential_is_searched_from_where_it_can_begin():
    from deid_core.text.names import _BEFORE_CREDENTIAL, _name_before

    alphabet = ["Robin", "summers", " ", "  ", "\t", ",", "J.", "A", "x", "-", "'", "’", "3", ".", "é", ", RN", " MD",
                ", DO", "Smith", "Mary-Jo", "o'neil", "\n", "\r"]
    for text in _strings(15000, alphabet, 13):
        for lead in _credential_leads(text):
            want = _BEFORE_CREDENTIAL.search(text, max(0, lead - 60), lead)
            got = _name_before(text, text[::-1], lead)
            assert (got and got.span(1)) == (want and want.span(1)), (text, lead)


def test_every_age_stands_on_a_number_alone():
    from deid_core.text.recognizers import _AGE, _AGE_NUMBER

    alphabet = ["9", "1", "0", "5", "95", "101", "119", "120", "89", " ", "-", "yo", " years", "y/o", "m", "F", "aged ",
                "age: ", "x", "/", "é", "٩"]
    for text in _strings(20000, alphabet, 14):
        low = text.lower()
        cores = {m.span() for m in _AGE_NUMBER.finditer(low)}
        for m in _AGE.finditer(low):
            assert m.span(m.lastindex) in cores, text


def test_patterns_tried_only_where_a_capital_begins_a_word_find_what_the_window_scan_finds():
    from deid_core.text.recognizers import _CAPITAL_START, _CITY_STATE, _FACILITY

    rng = random.Random(15)
    words = ["St.", "Saint", "Mt", "Mary's", "Mercy", "General", "Hospital", "Clinic", "Medical Center", "of", "Boston",
             "Boston,", "MA", "Ma", "Washington", "WI", "02139", ",", ", ", "\n", "é", "Élan", "_X", "3B", "the", "at",
             "Home", "Health", "Care", "x", "O'Neil", "Mc-Donald", "-", "Memorial", "Boston, MA 02139", "Salem, Oregon",
             "Knolls, Washington, WI 90977", "New York, NY", ", ME"]
    for _ in range(4000):
        text = "".join(rng.choice(words) + rng.choice([" ", "", "  ", "\t"]) for _ in range(rng.randint(1, 16)))
        note = Note(text)
        anchors = sorted((a, a + rng.randint(0, 6)) for a in (rng.randrange(len(text) + 1) for _ in range(3)))
        before, after = rng.choice([(0, 0), (5, 3), (50, 40), (80, 40)])
        for pattern in (_FACILITY, *(p for p, _, _ in _CITY_STATE)):
            want = [m.span() for m in note.around(pattern, anchors, before, after, False)]
            got = [m.span() for m in note.around(pattern, anchors, before, after, False, _CAPITAL_START)]
            assert got == want, (text, anchors, pattern.pattern[:30])


def test_a_date_falls_on_a_day_only_where_the_substring_test_says_it_may():
    """A date-of-birth hint parses a note's dates only where :func:`may_fall_on` says the day may be in them: every
    written form the recognizers find, on every day, the test lets through every date of that day."""
    import datetime as dt

    from deid_core.text.textdates import may_fall_on, parse

    forms = ["{m}/{d}/{Y}", "{m:02d}/{d:02d}/{y:02d}", "{Y}-{m:02d}-{d:02d}", "{d} {B} {Y}", "{B} {d}, {Y}",
             "{b}. {d}", "{B} {d}{sfx}", "the {ord} of {B}", "{B} the {ord}", "{m}/{d}", "{d:02d}.{m:02d}.{Y}",
             "{B} {Y}", "{b} '{y:02d}", "the {d}{sfx} of {B}, {Y}"]
    from deid_core.text.textdates import _ORDINALS
    words = {d: w for w, d in _ORDINALS.items()}
    checked = 0
    for day in range(1, 32):
        date = dt.date(2019, 1 if day > 28 else 2, day) if day > 28 else dt.date(2019, 3, day)
        sfx = "th" if 11 <= day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
        for form in forms:
            text = form.format(m=date.month, d=day, Y=date.year, y=date.year % 100, B=date.strftime("%B"),
                               b=date.strftime("%b"), sfx=sfx, ord=words[day])
            p = parse(text)
            for other in range(1, 32):
                if p is not None and p.day == other:
                    assert may_fall_on(text, other), (text, other)
                    checked += 1
    assert checked > 300


def test_a_name_hints_initials_read_before_the_last_name_are_those_each_form_finds_by_itself():
    """"J. Doe" and "J Doe" read before each place of the last name (deid_core.text.hints) are what a search of the
    note for each form finds."""
    from deid_core.text.hints import _initials

    rng = random.Random(18)
    pieces = ["J.", "j", "J", "Doe", "doe", "DOE", "Doe's", "doe-", "xdoe", "Jdoe", " ", "  ", ".", ",", "\n", "é", "Jo",
              "j. doe", "J Doe", "jj doe", "-j doe"]
    for _ in range(6000):
        note = Note("".join(rng.choice(pieces) for _ in range(rng.randint(1, 10))))
        want = []
        for form in ("j. doe", "j doe"):
            want += [(s, s + len(form) - 4) for s, _ in note.occurrences(form)]
        assert [s[:2] for s in _initials(note, "j", note.occurrences("doe"))] == want, note.text
