"""A notes table de-identified as a stream (docs/text.md, "The command"): a CSV file read ``chunk_rows`` rows
at a time, a Parquet file in batches of as many rows; each chunk's notes done by :func:`deidentify_notes` and
written to a temporary file, which replaces the output only when the whole table is done, so memory stays
flat in the number of notes and bad input leaves no partial output.

Values are read as :func:`deid_core.io.read_table` reads a whole table (``02139`` and ``007`` keep their form,
only an empty cell or the suppression marker is missing) and written as :func:`deid_core.io.write_table`
writes one: a CSV file's line ends and quoting depend on every value of it, so its rows wait in an Arrow
stream in a temporary file until the last chunk is done, then are written in the layout the whole table
needs. Every note is done alone (its tags numbered within it; the date shift keyed by its patient, else by
its row number in the whole table), so the output and the counts are the same whatever the chunk size."""
from __future__ import annotations

import csv
import lzma
import tempfile
import zipfile
from pathlib import Path
from typing import Callable, Iterator, Mapping

import pandas as pd

from common.atomic import atomic_path
from ..errors import DeidInputError
from ..io import _csv_layout, _not_utf8, _parquet_text, _trimmed_header, csv_read_options, is_parquet, require_records
from ..vocabulary import SUPPRESSED
from .column import ColumnResult, deidentify_notes
from .second_pass import SecondPass
from .transforms import Surrogates

#: Rows of the table read, de-identified and written at a time.
CHUNK_ROWS = 5_000


def deidentify_table(source: str | Path, column: str, out: str | Path, mode: str, *,
                     hint_columns: Mapping[str, str] | None = None, patient_column: str | None = None,
                     surrogates: Surrogates | None = None, workers: int = 1,
                     chunk_rows: int = CHUNK_ROWS, second_pass: SecondPass | None = None,
                     progress: Callable[[int], None] | None = None) -> ColumnResult:
    """``source``'s ``column`` de-identified by ``mode`` into ``out`` (CSV or Parquet, by suffix), every other
    column as read; ``hint_columns`` maps hint keys to the columns of the same row searched first,
    ``patient_column`` keys the date shift (else the row number); ``second_pass`` may reject spans
    (:mod:`deid_core.text.second_pass`); ``progress`` is called with the rows done after each chunk. Returns
    the counts (no notes)."""
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be 1 or more, got {chunk_rows}")
    hint_columns = dict(hint_columns or {})
    wanted = [column, *hint_columns.values(), *([patient_column] if patient_column else [])]
    total, rows = ColumnResult([]), 0
    writer = _ParquetSink if is_parquet(out) else _CsvSink
    with atomic_path(out, lambda _: DeidInputError(f"cannot write {str(out)!r}: folder does not exist")) as tmp:
        with writer(tmp) as write:
            for df in _chunks(Path(source), chunk_rows):
                if rows == 0:
                    require_records(df, repr(str(source)))
                    missing = [c for c in wanted if c not in df.columns]
                    if missing:
                        raise DeidInputError(f"column {missing[0]!r} is not in {str(source)!r} "
                                             f"(columns: {', '.join(df.columns)})")
                hints = ([dict(zip(hint_columns, row)) for row in zip(*(df[c].tolist() for c in hint_columns.values()))]
                         if hint_columns else None)
                patients = ([v if isinstance(v, str) else "" for v in df[patient_column].tolist()] if patient_column
                            else [str(i) for i in range(rows, rows + len(df))])
                part = deidentify_notes(df[column].tolist(), mode, hints=hints, patients=patients,
                                        surrogates=surrogates, workers=workers, second_pass=second_pass)
                df[column] = part.notes
                write(df)
                part.notes = []
                total.add(part)
                rows += len(df)
                if progress is not None:
                    progress(rows)
            if rows == 0:
                require_records(pd.DataFrame(), repr(str(source)))
    return total


def table_rows(path: str | Path) -> int | None:
    """The rows of a Parquet table, from its footer; None for a CSV file, whose rows are known only once read."""
    if not is_parquet(path):
        return None
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path).metadata.num_rows
    except Exception:  # an unreadable file is reported, in one line, where it is read
        return None


def _chunks(path: Path, rows: int) -> Iterator[pd.DataFrame]:
    """The table ``rows`` rows at a time, every column as text; read errors are one-line
    :class:`DeidInputError` as :func:`deid_core.io.read_table` gives them."""
    missing = sorted({"", SUPPRESSED})
    chunks = _parquet_chunks(path, rows, missing) if is_parquet(path) else _csv_chunks(path, rows, missing)
    for df in chunks:
        df.columns = [str(c) for c in df.columns]
        yield _trimmed_header(df, path)


def _csv_chunks(path: Path, rows: int, na: list[str]) -> Iterator[pd.DataFrame]:
    """The options of ``deid_core.io._read_csv`` (``dtype=str``, no default NA tokens), ``rows`` at a time."""
    options = csv_read_options(path, na)
    try:
        with pd.read_csv(path, chunksize=rows, **options) as reader:
            yield from reader
    except UnicodeDecodeError:
        raise _not_utf8(path, options["compression"]) from None
    except (pd.errors.ParserError, ValueError, OSError, EOFError, zipfile.BadZipFile, lzma.LZMAError) as exc:
        lines = str(exc).strip().splitlines()
        raise DeidInputError(f"cannot read {str(path)!r}: {lines[-1] if lines else type(exc).__name__}") from None


def _parquet_chunks(path: Path, rows: int, na: list[str]) -> Iterator[pd.DataFrame]:
    """Batches of ``rows`` rows, every column cast to text as ``deid_core.io._read_parquet`` does."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        source = pq.ParquetFile(path, buffer_size=1 << 20, pre_buffer=False)
        names = [str(n) for n in source.schema_arrow.names]
        batches = source.iter_batches(batch_size=rows, use_threads=False)
        while (batch := next(batches, None)) is not None:
            yield pd.DataFrame({i: _parquet_text(col, na).to_pandas().astype("str")
                                for i, col in enumerate(batch.columns)}).set_axis(names, axis=1)
    except (OSError, pa.ArrowException) as exc:
        lines = str(exc).strip().splitlines()
        raise DeidInputError(f"cannot read {str(path)!r}: {lines[0] if lines else type(exc).__name__}") from None


class _CsvSink:
    """Chunks held in an Arrow stream (exact text, missing kept missing) while the layout that every value
    needs is gathered (``deid_core.io._csv_layout``: ``\\r\\n`` line ends if a value holds a carriage return,
    every cell quoted if a one-column table has a blank value), then written in it."""

    def __init__(self, target: str) -> None:
        self.target, self.columns, self.sink, self.crlf, self.quote_all = target, None, None, False, False

    def __enter__(self):
        self.spool = tempfile.TemporaryFile()
        return self.write

    def write(self, df: pd.DataFrame) -> None:
        import pyarrow as pa

        if self.sink is None:
            self.columns = list(df.columns)
            self.schema = pa.schema([(str(i), pa.large_string()) for i in range(len(self.columns))])
            self.sink = pa.ipc.new_stream(self.spool, self.schema)
        layout = _csv_layout(df)
        self.crlf |= layout["lineterminator"] == "\r\n"
        self.quote_all |= layout["quoting"] == csv.QUOTE_ALL
        self.sink.write_table(pa.table([pa.array(df[c], pa.large_string(), from_pandas=True) for c in df.columns],
                                       schema=self.schema))

    def __exit__(self, kind, *_) -> None:
        import pyarrow as pa

        try:
            if kind is None and self.sink is not None:
                self.sink.close()
                self.spool.seek(0)
                layout = {"lineterminator": "\r\n" if self.crlf else "\n",
                          "quoting": csv.QUOTE_ALL if self.quote_all else csv.QUOTE_MINIMAL}
                with open(self.target, "w", encoding="utf-8", newline="") as fh:
                    first = True
                    for batch in pa.ipc.open_stream(self.spool):
                        frame = batch.to_pandas().set_axis(self.columns, axis=1)
                        frame.to_csv(fh, sep=",", index=False, na_rep="", header=first, **layout)
                        first = False
        finally:
            self.spool.close()


class _ParquetSink:
    """Each chunk one row group, every column an Arrow ``string`` column (as ``deid_core.io.write_frame``)."""

    def __init__(self, target: str) -> None:
        self.target, self.writer = target, None

    def __enter__(self):
        return self.write

    def write(self, df: pd.DataFrame) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table([pa.array(df[c].astype("str"), type=pa.string(), from_pandas=True) for c in df.columns],
                         names=[str(c) for c in df.columns])
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.target, table.schema)
        self.writer.write_table(table)

    def __exit__(self, *_) -> None:
        if self.writer is not None:
            self.writer.close()
