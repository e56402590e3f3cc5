"""The document model of a report page: a titled document of sections holding paragraphs, tables,
figures, preformatted text and a verdict, with the sources it cites. Builders fill it with plain values
(numbers stay numbers); :mod:`deid_core.report.render` turns it into one self-contained HTML page, so
every page shares one look and one way of writing numbers."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence, Union


# ------------------------------------------------------------------ inline values a table cell may hold

@dataclass(frozen=True)
class Strong:
    """Text shown in bold (a column name heading its row)."""

    text: str


@dataclass(frozen=True)
class Change:
    """A value before → after (an example of what a release did)."""

    before: str
    after: str


@dataclass(frozen=True)
class Mark:
    """Whether something meets the threshold: "meets" or "does not meet", coloured."""

    ok: bool


# ------------------------------------------------------------------ blocks

@dataclass(frozen=True)
class Paragraph:
    """A paragraph of plain text (escaped when rendered); ``style`` is ``""``, ``"small"`` or ``"meta"``."""

    text: str
    style: str = ""


@dataclass(frozen=True)
class Table:
    """A table of plain values; the columns listed in ``numeric`` are right-aligned. A cell may be any
    value (formatted by the renderer: at most 4 significant digits, thousands separated, ``None`` as —)
    or :class:`Strong`, :class:`Change`, :class:`Mark`. An empty ``header`` draws no header row;
    ``row_header`` makes each row's first cell its heading (a table of settings and their values)."""

    header: Sequence[str]
    rows: Sequence[Sequence[Any]]
    numeric: Sequence[int] = ()
    row_header: bool = False


@dataclass(frozen=True)
class Figure:
    """A plot: a base64 PNG and its caption (also the image's alt text)."""

    png_base64: str
    caption: str


@dataclass(frozen=True)
class Preformatted:
    """Text shown as it is in a monospace block: a command (``style="cmd"``, wrapped) or JSON."""

    text: str
    style: str = ""


@dataclass(frozen=True)
class Verdict:
    """The page's answer, boxed green (``ok``), red (not ``ok``) or grey (``None``: a step that is not
    judged against a threshold on its own)."""

    ok: bool | None
    text: str


Block = Union[Paragraph, Table, Figure, Preformatted, Verdict, "Section"]


@dataclass
class Section:
    """A titled part of a page; a section inside a section is a subsection (one heading level down)."""

    title: str
    blocks: list[Block] = field(default_factory=list)


@dataclass
class Document:
    """A whole page: its title, a line under the title, the sections in order and the sources cited
    (rendered last, numbered)."""

    title: str
    meta: str = ""
    sections: list[Section] = field(default_factory=list)
    sources: Sequence[str] = ()


__all__ = ["Block", "Change", "Document", "Figure", "Mark", "Paragraph", "Preformatted", "Section", "Strong",
           "Table", "Verdict"]
