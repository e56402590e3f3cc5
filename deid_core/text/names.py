"""Person names in a note: list look-ups (first and last names), title and relation cues ("Dr.", "Mrs.",
"seen by", "pt", "wife"), "Lastname, Firstname", runs of name words, and every other mention of a name once
found (El Emam & Arbuckle, ch. 8 "Free-Form Text": one missed mention discloses the document).

Each word is of one kind: a listed name; a listed name that is also a common English word ("Hope", "Grant",
"Brown") or a month ("April"); a foreign word (in no list and no English dictionary: "Villegas" when the
lists lack it, "hautamaki"); an English word; or a stop word (function and clinical words, titles, medical
terms such as "Foley", "Apgar", "Lasix"), never a name. A listed name counts alone when capitalized; the
others need a cue or a neighbouring name. An eponym before a term of eponymy ("Parkinson's disease",
"Murphy's sign") is never a name.
"""
from __future__ import annotations

import re
from typing import Callable, Final, Iterator, Sequence

from .lists import EPONYM, FIRST, LAST, MEDICAL, T_RELATION, T_TITLE, WORD, english, stop_words, word_classes
from .note import Note
from .textdates import MONTH_NAMES
from .spans import CUE, LIST, Found

_NAME: Final = r"[A-Za-z][A-Za-z'’-]*[A-Za-z]|[A-Z]\.?"
_TITLE: Final = re.compile(rf"\b(?i:dr|mr|mrs|ms|miss|mx|prof|doctor)\b\.?\s+((?:{_NAME})(?:\s+(?:{_NAME})){{0,2}})")
_RELATIONS: Final = ("seen by", "evaluated by", "examined by", "discussed with", "spoke with", "spoke to", "called", "called to",
                     "per", "pt", "patient", "son", "daughter", "wife", "husband", "mother", "father", "brother", "sister",
                     "partner", "fiance", "fiancee", "friend", "neighbor", "neighbour", "attending", "resident", "pcp", "cc",
                     "signed by", "dictated by", "electronically signed by", "name", "caregiver", "guardian", "nurse", "intern",
                     "fellow", "surgeon", "dear", "referring", "referred by", "niece", "nephew", "grandson", "granddaughter",
                     "aunt", "uncle")


def _by_first_word(phrases: tuple[str, ...]) -> dict[str, re.Pattern[str]]:
    """A relation cue (the longest phrase first, any case) and the name words after it, one pattern per first
    word of the phrases: at a trigger word only the phrases that begin with it can match, and a short alternation
    is tried much faster than one of fifty phrases."""
    groups: dict[str, list[str]] = {}
    for phrase in sorted(phrases, key=len, reverse=True):
        groups.setdefault(phrase.split()[0], []).append(phrase)
    return {word: re.compile(r"\b(?i:" + "|".join(group) + r")\b:?[ \t]+" + rf"((?:{_NAME})(?:[ \t]+(?:{_NAME})){{0,2}})")
            for word, group in groups.items()}


_RELATION_BY_WORD: Final = _by_first_word(_RELATIONS)
# A name signed with a credential ("Robin Summers, RN"): the words before it, read from the right.
# Found by the credential alone (the engine skips to its first letters; a pattern beginning with the comma or the
# spaces before it would be tried at every space), then its lead is read back: a comma, or spaces (not before
# DO and PA, which need the comma).
_CREDENTIAL: Final = re.compile(r"(?:RN|MD|NP|LPN|CNA|PhD|MSW|RD|PT|OT|DO|PA)\b")
_COMMA_CREDENTIALS: Final = frozenset(("DO", "PA"))
_BEFORE_CREDENTIAL: Final = re.compile(rf"((?:{_NAME})(?:[ \t]+(?:{_NAME})){{0,2}})$")
# Where such a name can begin at the earliest: the characters of name words with at most two runs of spaces
# between them, matched on the reversed note from the lead (a search anchored at its end tries every start of its
# window; from there it tries a few). A newline may stand last: ``$`` matches before it.
_BEFORE_CREDENTIAL_REACH: Final = re.compile(r"\n?[A-Za-z'’.-]*(?:[ \t]+[A-Za-z'’.-]*){0,2}")
# "Lastname, Firstname" from its comma (the word before it is read back: :func:`_comma_pairs`).
_AFTER_COMMA: Final = re.compile(r",[ \t]*([A-Za-z][A-Za-z'’-]*[A-Za-z])(?:[ \t]+([A-Z])\.?(?!\w))?")
_WORD_CHAR: Final = re.compile(r"\w").match
_LABEL: Final = re.compile(r"(?i:name|patient|pt)\s*:\s*$")
_WORD: Final = re.compile(r"[A-Za-z][A-Za-z'’-]*[A-Za-z]|[A-Z]\.?")
_GAP: Final = re.compile(r"[ \t]+(?:[A-Z]\.?[ \t]+)?$")  # what may separate two words of one name (a middle initial)
_GAP_FIRST: Final = " \t"  # the first character of a gap, of the spaces before a word (_word_before) and after one (_NEXT)
_WORD_BEFORE_REVERSED: Final = re.compile(r"[ \t]+([A-Za-z][A-Za-z'’-]*[A-Za-z])(?![\w.'’-])")  # :func:`_word_before`
_MIDDLE_INITIAL: Final = re.compile(r"\b[A-Z]\.?(?=[ \t]+$)")
_NAME_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'’-")
_ASCII_LETTER: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ").__contains__
_NEXT: Final = re.compile(r"[ \t]+(?:[A-Z]\.?[ \t]+)?([A-Za-z][A-Za-z'’-]*[A-Za-z])(?![\w'’-])")
_EPONYM_TAIL: Final = re.compile(r"(?:['’]?s)?\s*(?:-\s*[A-Za-z]+\s+)?(?:sign|disease|syndrome|palsy|test|score|scale|maneuver|"
                                 r"manoeuvre|reflex|criteria|classification|lesion|fracture|cyst|drain|catheter|tube|procedure|"
                                 r"fundoplication|operation|repair|stage|grade|stain|triad|phenomenon|node|lymphoma|chorea|"
                                 r"dementia|thyroiditis|ulcer|ratio|sounds?|position|rule|respiration|breathing|murmur|"
                                 r"disorder|tumou?r|method|technique|line|boot|collar|coma)\b", re.IGNORECASE)
_MONTHS: Final = frozenset(MONTH_NAMES) | {"jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"}
NAME_TYPES: Final = ("FIRST_NAME", "MIDDLE_NAME", "LAST_NAME")
# Word kinds, from surest name to never a name.
LISTED: Final = 0
AMBIGUOUS: Final = 1
FOREIGN: Final = 2
ENGLISH: Final = 3
STOP: Final = 4


class ByWord:
    """A function of a word, each value computed once and kept in a plain dictionary of strings to numbers, which
    Python's garbage collector never tracks (an ``lru_cache`` it walks entry by entry at every collection of its
    oldest generation); emptied at :data:`BY_WORD_SIZE` words, a bound on its memory. Compiled (setup.py), a call is a
    native call and one look-up."""

    __slots__ = ("_of", "_values")

    def __init__(self, of: Callable[[str], int]) -> None:
        self._of = of
        self._values: dict[str, int] = {}

    def __call__(self, word: str) -> int:
        value = self._values.get(word)
        if value is None:
            if len(self._values) >= BY_WORD_SIZE:
                self._values.clear()
            value = self._values[word] = self._of(word)
        return value


BY_WORD_SIZE: Final = 65536


def _kind(word: str) -> int:
    """The kind of a word (see the module docstring); case-insensitive."""
    low = word.lower().rstrip(".")
    flags = word_classes().get(low, 0)
    if flags & MEDICAL or low in stop_words():
        return STOP
    if flags & (FIRST | LAST):
        return AMBIGUOUS if flags & WORD or low in _MONTHS or low in english() else LISTED
    if low in english() or low in _MONTHS or word_classes().get(low, 0) or not low.replace("'", "").isalpha():
        return ENGLISH
    return FOREIGN


kind: Final = ByWord(_kind)
_flags: Final = ByWord(lambda word: word_classes().get(word.lower(), 0))


def _eponym(text: str, end: int, word: str) -> bool:
    return bool(_flags(word) & EPONYM and _EPONYM_TAIL.match(text, end))


def _continues(word: str) -> bool:
    """A word that continues a name already begun (after a cue or beside a name)."""
    if len(word.rstrip(".")) == 1:
        return word[0].isupper()
    k = kind(word)
    return k in (LISTED, FOREIGN) or k == AMBIGUOUS and word[0].isupper()


_more: Final = ByWord(_continues)


def _surname_after_first(previous: str, word: str) -> bool:
    """After a cue and a first name, a listed surname that is also a common word ("pt Derrick jordan")."""
    return kind(word) == AMBIGUOUS and bool(_flags(word) & LAST) and bool(_flags(previous) & FIRST)


def _type_of(word: str, position: int, size: int, surname_first: bool) -> str:
    if size >= 2:
        return "FIRST_NAME" if position == 0 else ("LAST_NAME" if position == size - 1 else "MIDDLE_NAME")
    flags = _flags(word)
    if flags & FIRST and not flags & LAST and not surname_first:
        return "FIRST_NAME"
    return "LAST_NAME" if surname_first or flags & LAST else "FIRST_NAME"


def _cued(note: Note) -> list[Found]:
    """The name words after a title ("Dr. villegas": any word but a stop word) or a relation ("wife Maria")."""
    out: list[Found] = []
    text, low = note.text, note.low
    for s, _, _ in note.hits(T_TITLE):
        m = _TITLE.match(text, s)
        if m:
            out += _cue_names(text, m, True)
    for s, e, _ in note.hits(T_RELATION):
        pattern = _RELATION_BY_WORD.get(low[s:e])
        m = pattern.match(text, s) if pattern else None
        if m:
            out += _cue_names(text, m, False)
    return out


def _cue_names(text: str, m: re.Match[str], title: bool) -> list[Found]:
    """The spans of the name words after a cue (``m``'s group 1), up to a listed eponym before its term.

    Not cached by phrase: what follows a cue ("Thomas Reid at") is seldom met twice, and a cache of such
    phrases keeps nested tuples that Python's garbage collector walks again and again."""
    offset = m.start(1)
    words = _cue_words(m.group(1), title)
    for i, (_, end, word) in enumerate(words):
        if _flags(word) & EPONYM and _EPONYM_TAIL.match(text, offset + end):  # an eponym before its term ends the name
            words = words[:i]
            break
    return _name_words(offset, words, title, "cue")


def _cue_words(phrase: str, title: bool) -> tuple[tuple[int, int, str], ...]:
    """``(start, end, word)`` of the words of ``phrase`` (what follows a cue) that make a name, by their kind
    alone: a function of the phrase, so computed once per distinct phrase."""
    words: list[tuple[int, int, str]] = []
    for w in _WORD.finditer(phrase):
        word = w.group()
        k = kind(word)
        first_ok = k != STOP and (k != ENGLISH or word[0].isupper()) if title else (_more(word) or k == AMBIGUOUS)
        if not (first_ok if not words else _more(word) or _surname_after_first(words[-1][2], word)):
            break
        words.append((w.start(), w.end(), word))
    return tuple(words)


def _name_words(offset: int, words: Sequence[tuple[int, int, str]], surname_alone: bool, source: str) -> list[Found]:
    """Spans of the words ``(start, end, word)`` of one name (a trailing initial belongs to no name), typed by
    position."""
    size = len(words)
    while size and len(words[size - 1][2].rstrip(".")) == 1:
        size -= 1
    return [(offset + s, offset + e, _type_of(w, i, size, surname_alone), w, source, CUE)
            for i, (s, e, w) in enumerate(words[:size])]


def _credentialed(note: Note) -> list[Found]:
    """The name before a credential: up to three name words (an English word ends it), the last a surname."""
    out = []
    text = note.text
    for lead in _credential_leads(text):
        m = _name_before(text, note.reverse, lead)
        if not m:
            continue
        words = list(_WORD.finditer(m.group(1)))
        kept: list[tuple[int, int, str]] = []
        for w in reversed(words):
            if not (_more(w.group()) or kind(w.group()) == AMBIGUOUS and w.group()[0].isupper()):
                break
            kept.insert(0, (w.start(), w.end(), w.group()))
        out += _name_words(m.start(1), kept, True, "credential")
    return out


def _name_before(text: str, reverse: str, lead: int) -> re.Match[str] | None:
    """:data:`_BEFORE_CREDENTIAL` in the 60 characters before ``lead``, searched only from where a name can begin
    (``reverse`` is ``text`` reversed)."""
    back = len(text) - lead
    reached = _BEFORE_CREDENTIAL_REACH.match(reverse, back)  # never None: every part of the pattern is optional
    reach = reached.end() - back if reached else 0
    return _BEFORE_CREDENTIAL.search(text, max(0, lead - 60, lead - reach), lead)


def _credential_leads(text: str) -> Iterator[int]:
    """Where each credential's lead begins: ``, RN``, ``,RN``, ``  RN`` (``, DO``, ``, PA`` with a comma only)."""
    for c in _CREDENTIAL.finditer(text):
        at = start = c.start()
        while start and text[start - 1] in " \t":
            start -= 1
        if start and text[start - 1] == ",":
            yield start - 1
        elif start < at and c.group() not in _COMMA_CREDENTIALS:
            yield start


def _last_first(note: Note) -> list[Found]:
    """"Villegas, Yosef": two name words around a comma (with a middle initial after), both listed, or capitalized
    with one listed, or after a "Name:" label in any case."""
    out = []
    text = note.text
    for start, comma, m in _comma_pairs(text):
        last, first = text[start:comma], m.group(1)
        kl, kf = kind(last), kind(first)
        if not (_more(last) and _more(first)) or ENGLISH in (kl, kf):
            continue
        listed = (kl == LISTED) + (kf == LISTED)
        capital = last[0].isupper() and first[0].isupper()
        # after a "Name:" label in any case ("Name: villegas, yosef"): neither word is English (tested above)
        if listed == 2 or capital and listed or _LABEL.search(text, max(0, start - 12), start):
            out.append((start, comma, "LAST_NAME", last, "last-first", CUE))
            out.append((m.start(1), m.end(1), "FIRST_NAME", first, "last-first", CUE))
            if m.group(2):
                out.append((m.start(2), m.end(2), "MIDDLE_NAME", m.group(2), "last-first", CUE))
    return out


def _comma_pairs(text: str) -> Iterator[tuple[int, int, re.Match[str]]]:
    """``(start, comma, match)`` for each word, comma and word after it (and a middle initial) that a scan of the
    whole note by ``\\b(word),[ \\t]*(word)( initial)?`` finds, leftmost first and none overlapping the one before: found from each comma (a
    pattern beginning with a word boundary is tried at every character), the word before read back."""
    last_end = 0
    for comma in _commas(text):
        start = _word_ending_at(text, comma, last_end)
        if start >= 0 and (m := _AFTER_COMMA.match(text, comma)):
            last_end = m.end()
            yield start, comma, m


def _word_ending_at(text: str, end: int, lo: int) -> int:
    """Where the first name word of a "Last, First" (``\\b[A-Za-z][A-Za-z'’-]*[A-Za-z]``) ending at ``end`` begins, at
    ``lo`` or after, as a scan from the left finds it (-1 for none): the first letter of the run of name
    characters before ``end`` that follows no word character, read back with string methods."""
    if end - lo < 2 or not _ASCII_LETTER(text[end - 1]):
        return -1
    start = end - 1
    while start > lo and text[start - 1] in _NAME_CHARS:
        start -= 1
    for at in range(start, end - 1):
        if _ASCII_LETTER(text[at]) and not (at and _WORD_CHAR(text[at - 1])):
            return at
    return -1


def _commas(text: str) -> Iterator[int]:
    at = text.find(",")
    while at >= 0:
        yield at
        at = text.find(",", at + 1)


def _runs(note: Note) -> list[Found]:
    """Listed names in runs of adjacent name words: a run counts with one capitalized listed name in it, or a
    first name then a surname, or a listed word beside a capitalized foreign one ("Brandy Matejka")."""
    text = note.text
    cands = []
    for s, e, f in note.having(FIRST | LAST):
        if f & MEDICAL:
            continue
        candidate = _candidate(text[s:e])
        if candidate == NO_NAME or f & EPONYM and _EPONYM_TAIL.match(text, e):
            continue
        cands.append((s, e, candidate == STRONG))
    out: list[Found] = []
    i, count = 0, len(cands)
    while i < count:
        run = [cands[i]]
        strong = cands[i][2]
        # the gap to the next word begins with a space or a tab (tested before the pattern, most often not)
        while (i + 1 < count and cands[i + 1][0] > run[-1][1] and text[run[-1][1]] in _GAP_FIRST
               and _GAP.match(text, run[-1][1], cands[i + 1][0])):
            i += 1
            run.append(cands[i])
            strong = strong or cands[i][2]
        i += 1
        if len(run) == 1 and not strong and text[run[0][0]].islower():
            continue  # a lone lower-case common word ("may", "hope") is never a name without a cue
        run, grown = _extend(text, note.reverse, run, strong)
        if not (strong or grown or len(run) >= 2 and _pair(text, run)):
            continue
        if len(run) > 1:
            run = _initials(text, run)
        size = len(run)
        for k, (s, e, _) in enumerate(run):
            word = text[s:e]
            out.append((s, e, _type_of(word, k, size, False), word, "name-list", LIST))
    return out


#: What a listed word is to :func:`_runs`: no name on its own (an English word, a stop word), a weak name, or a strong
#: one (a capitalized listed name that is not a word of capitals).
NO_NAME: Final = 0
WEAK: Final = 1
STRONG: Final = 2


def _candidacy(word: str) -> int:
    k = kind(word)
    if k > AMBIGUOUS:
        return NO_NAME
    return STRONG if k == LISTED and word[0].isupper() and not (len(word) > 3 and word.isupper()) else WEAK


_candidate: Final = ByWord(_candidacy)


def _pair(text: str, run: list[tuple[int, int, bool]]) -> bool:
    """Two weak words that still make a name: a first name then a surname, not both common words."""
    a, b = text[run[0][0]:run[0][1]], text[run[-1][0]:run[-1][1]]
    return bool(_flags(a) & FIRST and _flags(b) & LAST and LISTED in (kind(a), kind(b)))


def _extend(text: str, reverse: str, run: list[tuple[int, int, bool]], strong: bool
            ) -> tuple[list[tuple[int, int, bool]], bool]:
    """Add a foreign word just before or after a run ("Yosef Villegas", "Karen hautamaki"): capitalized, or
    lower case beside a strong name. True when a capitalized foreign word was added."""
    grown = False
    start, end = run[0][0], run[-1][1]
    before = _word_before(text, reverse, start) if start and text[start - 1] in _GAP_FIRST else None
    if before and kind(text[before[0]:before[1]]) == FOREIGN and (strong or text[before[0]].isupper()):
        run = [(before[0], before[1], False)] + run
        grown = text[before[0]].isupper() and text[run[1][0]].isupper()
    after = _NEXT.match(text, end) if end < len(text) and text[end] in _GAP_FIRST else None
    if after and kind(after.group(1)) == FOREIGN and (strong or after.group(1)[0].isupper()):
        run = run + [(after.start(1), after.end(1), False)]
        grown = grown or after.group(1)[0].isupper() and text[run[-2][0]].isupper()
    return run, grown


def _word_before(text: str, reverse: str, at: int) -> tuple[int, int] | None:
    """Where the name-like word just before ``at`` and its spaces is (``[A-Za-z][A-Za-z'’-]*[A-Za-z]``, not after a
    word character, a period, an apostrophe or a hyphen, within the 30 characters before ``at``), matched on
    ``reverse`` (``text`` reversed) from ``at``: a regular-expression search anchored at the end tries every start
    in the window. Only the whole run of name characters before the spaces can be followed (read backwards) by no
    such character, so the match is that run or none."""
    back = len(text) - at
    m = _WORD_BEFORE_REVERSED.match(reverse, back)
    if m is None or m.end() - back > 30:
        return None
    return len(text) - m.end(), len(text) - m.start(1)


def _initials(text: str, run: list[tuple[int, int, bool]]) -> list[tuple[int, int, bool]]:
    """The middle initials between the words of a run ("Jane Q. Doe") as words of the run."""
    out = [run[0]]
    for nxt in run[1:]:
        m = _MIDDLE_INITIAL.search(text, out[-1][1], nxt[0])
        if m:
            out.append((m.start(), m.end(), False))
        out.append(nxt)
    return out


def mentions(note: Note, found: list[Found]) -> list[Found]:
    """Every other mention, in any case, of a name already found (an English word only when capitalized); not
    the found spans themselves."""
    values: dict[str, str] = {}
    taken = {s[:2] for s in found}  # (start, end)
    for s in found:
        if s[2] in NAME_TYPES and len(s[3].rstrip(".")) > 1:
            values.setdefault(s[3].lower(), s[2])
    if not values:
        return []
    out = []
    text, low = note.text, note.low
    for value, type_ in values.items():  # :meth:`Note.occurrences`, the found ranges left out before the rest
        size = len(value)
        at = low.find(value)
        while at >= 0:
            end = at + size
            if (at, end) not in taken and note.whole(at, end):
                word = text[at:end]
                if not _eponym(text, end, word) and (word[0].isupper() or kind(word) not in (AMBIGUOUS, ENGLISH, STOP)):
                    out.append((at, end, type_, word, "mention", LIST))
            at = low.find(value, at + 1)
    return out


#: The name rules, each ``Note -> list[Found]``: cues, credentials, "Last, First", runs of listed names.
RULES: Final = (_cued, _credentialed, _last_first, _runs)


def names(note: Note) -> list[Found]:
    """Name spans from cues, "Last, First" and listed names (mentions are added after overlap resolution)."""
    return [span for rule in RULES for span in rule(note)]
