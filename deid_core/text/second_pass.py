"""An optional second pass over the detections (El Emam & Arbuckle, ch. 8 "Free-Form Text": rules first, then
a classifier that weighs each candidate, the hybrid the book describes; docs/text.md, "A second pass"): a
function of the data owner's that only accepts or rejects the spans found, to raise precision. It cannot add
a span, and a span of the record's own values (a hint) is never rejected. Off unless named.

The function is named as ``module:function`` (a module on the import path) or ``path/to/file.py:function``; it is
called with a batch of notes and their spans, ``keep(texts, spans) -> flags``, one list of booleans per note, one
flag per span (:data:`Keep`). Nothing is downloaded: whatever model it uses is the owner's, loaded by the owner's
code. A worker process loads it again from its name."""
from __future__ import annotations

import importlib
import importlib.util
import sys
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Callable, Sequence

from ..errors import DeidInputError
from .spans import HINT, Span

#: ``keep(texts, spans)``: for each note of ``texts`` and its spans (sorted, disjoint), one boolean per span,
#: True to keep it.
Keep = Callable[[list[str], list[list[Span]]], Sequence[Sequence[bool]]]


class SecondPass:
    """The second pass named ``name`` (``module:function`` or ``file.py:function``), loaded once per process."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.keep: Keep = _load(name)
        where, _, attribute = name.rpartition(":")
        # a worker process gets the name and loads the function itself, a file by its whole path (its working
        # folder may differ)
        self._loadable = f"{Path(where).resolve()}:{attribute}" if where.endswith(".py") else name

    def __reduce__(self):
        return SecondPass, (self._loadable,)

    def filter(self, texts: Sequence[str], found: Sequence[Sequence[Span]]) -> tuple[list[list[Span]], Counter]:
        """Each note's spans that the function keeps (and every hint's span), and the rejected spans counted by
        type."""
        try:
            flags = self.keep(list(texts), [list(spans) for spans in found])
        except Exception as exc:  # the owner's code: its failure is one line naming it
            raise DeidInputError(f"second pass {self.name!r} failed: {type(exc).__name__}: {exc}") from None
        if not isinstance(flags, Sequence) or len(flags) != len(found):
            raise DeidInputError(f"second pass {self.name!r} gave {_size(flags)} lists of flags for {len(found)} notes")
        kept: list[list[Span]] = []
        rejected: Counter = Counter()
        for spans, keep in zip(found, flags):
            if not isinstance(keep, Sequence) or len(keep) != len(spans) or not all(isinstance(k, bool) for k in keep):
                raise DeidInputError(f"second pass {self.name!r} must give one True or False per span "
                                     f"({len(spans)} spans, got {_size(keep)} flags)")
            kept.append([s for s, k in zip(spans, keep) if k or s.priority == HINT])
            rejected.update(s.type for s, k in zip(spans, keep) if not k and s.priority != HINT)
        return kept, rejected


def _size(value: object) -> str:
    return str(len(value)) if isinstance(value, Sequence) else f"a {type(value).__name__}"


@lru_cache(maxsize=None)
def _load(name: str) -> Keep:
    """The function named ``module:function`` or ``file.py:function``; anything else is one line. Loaded once per
    process: a worker gets the second pass again with each slice of a column, and the owner's module may load a
    model."""
    where, colon, attribute = name.rpartition(":")
    if not colon or not where or not attribute.isidentifier():
        raise DeidInputError(f"second pass {name!r}: name it module:function or file.py:function")
    try:
        if where.endswith(".py"):
            path = Path(where)
            if not path.is_file():
                raise DeidInputError(f"second pass {name!r}: no file {where!r}")
            module_name = f"deid_second_pass_{abs(hash(path.resolve()))}"
            spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except DeidInputError:
        raise
    except Exception as exc:  # the owner's code failed to load: say so in one line, not a traceback
        raise DeidInputError(f"second pass {name!r} cannot be loaded: {type(exc).__name__}: {exc}") from None
    keep = getattr(module, attribute, None)
    if not callable(keep):
        raise DeidInputError(f"second pass {name!r}: {where!r} has no function {attribute!r}")
    return keep
