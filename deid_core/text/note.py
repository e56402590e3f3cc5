"""A note prepared once for every recognizer: its text, its lower-cased copy (the case-insensitive patterns run
on it), the list words and trigger words the Aho-Corasick automaton found in it, and the windowed search that
runs a pattern only around a trigger (docs/text.md, "Speed")."""
from __future__ import annotations

import re
from functools import partial
from typing import Final, Iterable, Iterator

from .lists import CITY, COUNTRY, FIRST, LAST, STATE, TRIGGER_FLAGS, automaton, fold

_SHAPE: Final = bytes.maketrans(b"0123456789" + bytes(range(65, 91)) + bytes(range(97, 123)) + b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f",
                                b"0" * 10 + b"A" * 26 + b"a" * 26 + b" " * 9)
#: The word classes whose words are gathered in the same pass as the trigger words.
GATHERED: Final = (FIRST | LAST, CITY | STATE | COUNTRY)


def lower(text: str) -> str:
    """``text`` in lower case, the same length (``re.IGNORECASE`` is about twice as slow as this copy)."""
    low = text.lower()
    return low if len(low) == len(text) else "".join(c.lower()[0] for c in text)


def _routes() -> dict[int, tuple[int, ...]]:
    """For each flags value of the automaton's words, the indexes of the lists of :attr:`Note._classes` its
    words go to: one per class of :data:`GATHERED`, then one per trigger class (none for a word of neither)."""
    routes = {}
    for _, _, flags in automaton().values():
        routes[flags] = (*(i for i, mask in enumerate(GATHERED) if flags & mask),
                         *(_TRIGGER_INDEX[bit] for bit in _TRIGGER_BITS if flags & bit))
    return routes


_TRIGGER_BITS: Final = tuple(1 << i for i in range(TRIGGER_FLAGS.bit_length()) if TRIGGER_FLAGS >> i & 1)
_TRIGGER_INDEX: Final = {bit: len(GATHERED) + i for i, bit in enumerate(_TRIGGER_BITS)}
_GATHERED_INDEX: Final = {mask: i for i, mask in enumerate(GATHERED)}
_ROUTES: Final[dict[int, tuple[int, ...]]] = {}  # flags -> :func:`_routes`, filled at the first note


class Note:
    """A note and what every recognizer reads of it, made once: the text, its lower-cased copy (``low``), the text
    reversed (``reverse``: a pattern matched on it from a position reads the note back from there, where a search
    anchored at a position's left tries every start before it) and its shape (``shape``, :meth:`holds`). Slots
    and fields set at once, not cached properties: the recognizers read them some twenty times a note, and a
    slot is read faster than an instance dictionary (and a cached property is computed under a lock in Python
    3.11)."""

    __slots__ = ("text", "low", "reverse", "shape", "_words")
    _words: tuple[tuple[tuple[int, int, int], ...], ...]  # set by :meth:`scan`

    def __init__(self, text: str) -> None:
        self.text = text
        self.low = lower(text)
        self.reverse = text[::-1]
        #: Each digit ``0``, capital ``A``, small letter ``a``, white space a space, any other character itself;
        #: None for a note that is not ASCII. A fixed shape is found in it by a plain substring search, much faster
        #: than a pattern that begins with a class of characters.
        self.shape: bytes | None = text.encode("ascii").translate(_SHAPE) if text.isascii() else None

    def __repr__(self) -> str:
        return f"Note({self.text!r})"

    def _scanned(self) -> tuple[tuple[tuple[int, int, int], ...], ...]:
        if not _ROUTES:
            _ROUTES.update(_routes())
        routes = _ROUTES
        classes: list[list[tuple[int, int, int]]] = [[] for _ in range(len(GATHERED) + len(_TRIGGER_BITS))]
        # Typed, so that compiled (setup.py) the loop unpacks the automaton's matches and appends without generic calls.
        hits: Iterator[tuple[int, tuple[int, str, int]]] = automaton().iter(fold(self.text))
        for last, (length, _, flags) in hits:
            route = routes[flags]
            if route:
                end = last - 1  # ``last`` is the trailing space's index in the folded text, one past the leading one
                word = (end - length, end, flags)
                for i in route:
                    classes[i].append(word)
        # Kept as tuples: a tuple of tuples of numbers is untracked by Python's garbage collector at its first
        # collection, where lists would stay tracked while the batch runs and be carried to the oldest generation
        # (whose collections walk every object the process holds).
        return tuple(map(tuple, classes))

    def scan(self) -> tuple[tuple[tuple[int, int, int], ...], ...]:
        """In the automaton's one pass over the folded note, the words ``(start, end, flags)`` of each class of
        :data:`GATHERED` (the names for the name rules, the places for the place rules) and of each trigger class
        (the lists indexed as in :func:`_routes`); a word of none is passed over. Made once: at the first call
        (:func:`deid_core.text.detect.detect_many` makes the passes of a batch one after another, the automaton
        staying in the processor's caches) or at the first recognizer that needs the words."""
        try:
            return self._words
        except AttributeError:
            self._words = words = self._scanned()
            return words

    def hits(self, flag: int) -> tuple[tuple[int, int, int], ...]:
        """The words ``(start, end, flags)`` of the trigger class ``flag`` (in order of start)."""
        try:
            return self._words[_TRIGGER_INDEX[flag]]
        except AttributeError:
            return self.scan()[_TRIGGER_INDEX[flag]]

    def having(self, mask: int) -> tuple[tuple[int, int, int], ...]:
        """The words ``(start, end, flags)`` with any class of ``mask``, one of :data:`GATHERED` (in order of
        start)."""
        try:
            return self._words[_GATHERED_INDEX[mask]]
        except AttributeError:
            return self.scan()[_GATHERED_INDEX[mask]]

    def holds(self, *shapes: bytes) -> bool:
        """Whether the note's shape holds any of ``shapes`` (True for a note that is not ASCII, which has no shape:
        the patterns that need one of them run in it)."""
        shape = self.shape
        if shape is None:
            return True
        for wanted in shapes:
            if wanted in shape:
                return True
        return False

    def shaped(self, *shapes: bytes) -> list[tuple[int, int]] | None:
        """Where any of ``shapes`` (all of one length) stands in the note, leftmost first and none overlapping the
        one before (as a pattern's matches); None for a note that is not ASCII."""
        shape = self.shape
        if shape is None:
            return None
        starts = []
        for wanted in shapes:
            at = shape.find(wanted)
            while at >= 0:
                starts.append(at)
                at = shape.find(wanted, at + 1)
        if len(shapes) > 1:
            starts.sort()
        size, last, out = len(shapes[0]), 0, []
        for at in starts:
            if at >= last:
                out.append((at, at + size))
                last = at + size
        return out

    def occurrences(self, value: str) -> list[tuple[int, int]]:
        """Where ``value`` (lower case) stands as whole words in the note, in any case."""
        low, size = self.low, len(value)
        out = []
        at = low.find(value) if value else -1
        while at >= 0:
            if self.whole(at, at + size):
                out.append((at, at + size))
            at = low.find(value, at + 1)
        return out

    def whole(self, start: int, end: int) -> bool:
        """Whether ``[start, end)`` is whole words: no letter, digit, apostrophe or hyphen just before it, no letter,
        digit or hyphen just after."""
        low = self.low
        return not (start and (low[start - 1].isalnum() or low[start - 1] in "'’-")
                    or end < len(low) and (low[end].isalnum() or low[end] == "-"))

    def starting_at(self, pattern: re.Pattern[str], anchors: Iterable[tuple[int, ...]], lowered: bool = True) -> list[re.Match[str]]:
        """The matches of ``pattern`` that begin where an anchor does (a cue word that begins the pattern), in
        order, none overlapping the one before (as a scan of the whole note would have them). An anchor is a
        tuple ``(start, end, ...)``."""
        source = self.low if lowered else self.text
        out: list[re.Match[str]] = []
        last = 0
        for anchor in anchors:
            start = anchor[0]
            if start >= last and (m := pattern.match(source, start)):
                out.append(m)
                last = m.end()
        return out

    def around(self, pattern: re.Pattern[str], anchors: Iterable[tuple[int, ...]], before: int, after: int,
               lowered: bool = True, starts: re.Pattern[str] | None = None) -> list[re.Match[str]]:
        """The matches of ``pattern`` in windows ``[start - before, end + after)`` around each anchor (in order of
        start; overlapping windows are merged), each match once; a match cut by its window's end is dropped (the
        whole note would have given it longer). An anchor is a tuple ``(start, end, ...)``.

        ``starts``, a pattern beginning with a class of characters (the engine skips to them) that matches wherever
        a match of ``pattern`` can begin, has ``pattern`` tried only there (:func:`_tried_at`): the same matches,
        where a pattern beginning with a word boundary is tried at every character of the window."""
        source = self.low if lowered else self.text
        size = len(source)
        find = pattern.finditer if starts is None else partial(_tried_at, pattern, starts)
        out: list[re.Match[str]] = []
        lo = hi = -1
        for anchor in anchors:
            start = anchor[0] - before
            end = anchor[1] + after
            if start < 0:
                start = 0
            if end > size:
                end = size
            if start <= hi:
                if end > hi:
                    hi = end
                continue
            if hi >= 0:
                out += [m for m in find(source, lo, hi) if m.end() < hi]  # (hi < size: another window follows)
            lo, hi = start, end
        if hi >= 0:
            out += find(source, lo, hi) if hi == size else [m for m in find(source, lo, hi) if m.end() < hi]
        return out


def _tried_at(pattern: re.Pattern[str], starts: re.Pattern[str], source: str, lo: int, hi: int) -> list[re.Match[str]]:
    """``pattern.finditer(source, lo, hi)`` for a pattern whose every match begins where ``starts`` matches and is
    never empty: ``pattern`` matched only there, the next try at or after the end of each match (as a scan)."""
    out = []
    last = lo
    for start in starts.finditer(source, lo, hi):
        at = start.start()
        if at >= last and (m := pattern.match(source, at, hi)):
            out.append(m)
            last = m.end()
    return out
