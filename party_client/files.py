"""Reading and writing the parties' tables (CSV or Parquet) and the text files
written next to them (rules files).

Tables are read and written by :mod:`deid_core.io`: every cell is the exact
text of the file with no type inference (identifiers keep leading zeros;
"NA", "null", "nan" stay text), the CSV delimiter is detected from the
header line (comma, semicolon or tab). Here the empty string is the only
missing value and stays ``""`` (a Parquet null reads as ``""`` too).
Outputs are written to a temporary file in the target folder and renamed, so
a failed run never leaves a partial file; inputs are only ever read.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from common.atomic import atomic_path
from deid_core.errors import DeidInputError
from deid_core.io import PARQUET_SUFFIXES, read_text_table, write_frame
from party_client.errors import PartyError

TABLE_SUFFIXES = PARQUET_SUFFIXES + (".csv", ".txt", ".tsv")


def read_table(path: str | Path) -> pd.DataFrame:
    """Every column as text (``str``), missing cells as ``""``."""
    path = Path(path)
    if not path.is_file():
        raise PartyError(f"input file {path} does not exist")
    try:
        frame = read_text_table(path, missing=(), categorical=False)
    except DeidInputError as error:
        raise PartyError(str(error)) from None
    if frame.columns.duplicated().any():
        raise PartyError(f"{path} has duplicate column names")
    return frame.fillna("")


def require_records(frame: pd.DataFrame, source: object = "the input", id_column: str | None = None) -> None:
    """Refuse a table without records (a header line only, 0 Parquet rows) or whose id column is blank
    in every row, before any session is opened: there would be nothing to link."""
    name = source if isinstance(source, str) and source.startswith("the ") else str(source)
    if len(frame) == 0:
        raise PartyError(f"{name} has no records (only a header line): nothing to link")
    if id_column is not None and id_column in frame.columns and \
            not frame[id_column].fillna("").astype(str).str.strip().ne("").any():
        raise PartyError(f"{name}: the id column '{id_column}' is blank in every row: nothing to link")


def require_columns(frame: pd.DataFrame, columns: list[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise PartyError(f"{what} column(s) {', '.join(missing)} not in the input "
                         f"(columns: {', '.join(map(str, frame.columns))})")


def check_output(path: str | Path, *inputs: str | Path, suffixes: tuple[str, ...] = TABLE_SUFFIXES,
                 kind: str = "a .csv or .parquet") -> None:
    """Refuse an output that cannot be written or would overwrite an input, before any work."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise PartyError(f"output folder {folder} does not exist")
    if path.suffix.lower() not in suffixes:
        raise PartyError(f"output {path.name}: use {kind} file name")
    for source in inputs:
        if path.exists() and Path(source).exists() and path.resolve() == Path(source).resolve():
            raise PartyError("the output file would overwrite the input file")


def _atomic(path: str | Path):
    """A temporary file in the target's folder, renamed to ``path`` when the block succeeds
    (:func:`common.atomic.atomic_path`)."""
    return atomic_path(path, lambda folder: PartyError(f"output folder {folder} does not exist"))


def write_table(frame: pd.DataFrame, path: str | Path) -> None:
    """Write atomically: a temporary file in the same folder, then rename."""
    with _atomic(path) as temporary:
        write_frame(frame, temporary, parquet=Path(path).suffix.lower() in PARQUET_SUFFIXES)


def write_text(text: str, path: str | Path) -> None:
    """Write a text file (UTF-8) atomically, like :func:`write_table`."""
    with _atomic(path) as temporary:
        Path(temporary).write_text(text, encoding="utf-8")
