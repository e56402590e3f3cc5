"""A folder of notes (``.txt`` files, subfolders included) de-identified into another folder of the same layout
(docs/text.md, "A folder of notes"): each file read exactly as written (UTF-8, its line ends kept), done by
:func:`deid_core.text.column.deidentify_notes` a few hundred files at a time, and written under a temporary
folder that becomes the output folder only when every file is done, so bad input (a file that is not UTF-8
text, in any file) leaves no output and the input folder is never written to.

The date shift of ``surrogate`` is keyed by each file (its path in the folder) or, with ``patient="folder"``, by
the folder that holds it, so that the notes of one patient kept in one folder move by one shift."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from ..errors import DeidInputError, ParameterError, literal
from .column import DETECT_ROWS, ColumnResult, deidentify_notes
from .second_pass import SecondPass
from .transforms import Surrogates

#: What keys a note's date shift: the file itself, or the folder holding it.
PATIENT_KEYS = ("file", "folder")
#: Files read, de-identified and written at a time.
CHUNK_FILES = DETECT_ROWS


def note_files(source: Path) -> list[Path]:
    """The ``.txt`` files under ``source`` (subfolders included, symbolic links not followed), as paths relative
    to it, in a fixed order."""
    found = []
    for folder, subfolders, files in os.walk(source, followlinks=False):
        subfolders.sort()
        for name in sorted(files):
            path = Path(folder, name)
            if name.endswith(".txt") and path.is_file() and not path.is_symlink():
                found.append(path.relative_to(source))
    return found


def deidentify_folder(source: str | Path, out: str | Path, mode: str, *, patient: str = "file",
                      surrogates: Surrogates | None = None, workers: int = 1,
                      chunk_files: int = CHUNK_FILES, second_pass: SecondPass | None = None,
                      progress: Callable[[int, int], None] | None = None) -> ColumnResult:
    """Every ``.txt`` note under ``source`` de-identified by ``mode`` into ``out`` (a folder that must not exist
    yet, outside ``source``), at the same relative path; ``second_pass`` may reject spans
    (:mod:`deid_core.text.second_pass`); ``progress`` is called with the files done and the files in all after
    each chunk. Returns the counts (no notes)."""
    source, out = Path(source), Path(out)
    if patient not in PATIENT_KEYS:
        raise ParameterError("{patient} must be one of " + ", ".join(PATIENT_KEYS) + f", got {literal(repr(patient))}",
                             "patient")
    if chunk_files < 1:
        raise ValueError(f"chunk_files must be 1 or more, got {chunk_files}")
    _check_folders(source, out)
    files = note_files(source)
    if not files:
        raise DeidInputError(f"no .txt notes in {str(source)!r}")
    total = ColumnResult([])
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for first in range(0, len(files), chunk_files):
            names = files[first:first + chunk_files]
            notes = [_read(source, name) for name in names]
            keys = [(name.parent if patient == "folder" else name.with_suffix("")).as_posix() for name in names]
            part = deidentify_notes(notes, mode, patients=keys, surrogates=surrogates, workers=workers,
                                    second_pass=second_pass)
            for name, text in zip(names, part.notes):
                target = work / name
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(target, "w", encoding="utf-8", newline="") as f:  # the line ends as read
                    f.write(text)
            part.notes = []
            total.add(part)
            if progress is not None:
                progress(first + len(names), len(files))
        work.rename(out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return total


def _check_folders(source: Path, out: Path) -> None:
    if not source.is_dir():
        raise DeidInputError(f"cannot read {str(source)!r}: not a folder")
    if out.exists():
        raise DeidInputError(f"cannot write {str(out)!r}: it exists (give a folder that does not exist yet)")
    if not out.parent.is_dir():
        raise DeidInputError(f"cannot write {str(out)!r}: folder {str(out.parent)!r} does not exist")
    src, dst = source.resolve(), out.resolve()
    if dst == src or src in dst.parents or dst in src.parents:
        raise DeidInputError(f"cannot write {str(out)!r}: it is inside the input folder or holds it")


def _read(source: Path, name: Path) -> str:
    """A note's text exactly as written (UTF-8, its line ends and any byte-order mark kept); a file that is not
    UTF-8 text is refused naming it."""
    data = (source / name).read_bytes()
    if b"\x00" in data:
        raise DeidInputError(f"cannot read {str(source / name)!r}: a binary file, not a text note")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DeidInputError(f"cannot read {str(source / name)!r}: not UTF-8 (byte {exc.start})") from None
