"""Reading and writing tables: CSV (``,`` ``;`` or tab; plain, or gzip, bzip2, xz or a zip of one
file, told by their first bytes) and Parquet; atomic writes.

Column names lose spaces around them (``rec_id,  given_name``; said once on stderr), and a file whose
header follows every separator with spaces (``rec_id, given_name``: FEBRL's ``", "``) is read without
the spaces after each separator, in values too (said once); a file that is
not UTF-8 is refused with the byte and line where it stops being so and how to convert it; a
spreadsheet is refused with "save it as CSV". Every cell is read as the exact text of the file, with
no type inference:
``02139``, ``007`` and ``1.50`` keep their form, and ``NA``, ``null``,
``None``, ``nan`` are ordinary text. Only the declared ``missing_values``
(default: the empty string) and the suppression marker
:data:`deid_core.vocabulary.SUPPRESSED` are missing; missing cells become ``NaN``
and are written back as the empty string. By default each column is a
pandas ``category`` built from those strings (one small code array per
column, which keeps 10 million rows small).

Parquet columns are cast to text with Arrow's cast (Apache Arrow,
"Compute functions", section "Conversions"): a string column keeps its text
exactly (``007`` stays ``007``); a number has no leading zeros to keep, so
an int64 ``7`` reads as ``"7"`` and a float ``7.0`` as ``"7"``; Parquet nulls
and float NaN are missing. Tables are written back as text: CSV with
minimal quoting (a value holding the separator, a quote or a line break is
quoted), Parquet with every text column as an Arrow ``string`` column.
"""
from __future__ import annotations

import bz2
import codecs
import csv
import gzip
import json
import logging
import lzma
import zipfile
import zlib
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import pandas as pd

from common.atomic import atomic_path
from .errors import DeidInputError
from .vocabulary import SEPARATORS, SUPPRESSED, detect_separator  # noqa: F401  (detect_separator: re-exported)

PARQUET_SUFFIXES = (".parquet", ".pq")
CHUNK_ROWS = 1_000_000  # CSV rows parsed as strings at a time before they become categories


def is_parquet(path: str | Path) -> bool:
    return Path(path).suffix.lower() in PARQUET_SUFFIXES


# What a table file is, from its first bytes: compressed CSV is read through its decompressor; a
# spreadsheet is refused with what to do.  (Magic numbers: RFC 1952 for gzip, PKWARE's APPNOTE for zip,
# the bzip2 and xz headers, and the OLE2 compound file of a legacy .xls.)
MAGIC = ((b"\x1f\x8b", "gzip"), (b"PK\x03\x04", "zip"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"),
         (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "xls"))
SPREADSHEET = "a spreadsheet: save it as CSV (UTF-8) and give that file"
#: What a damaged compressed file raises while it is read (gzip's inflate raises zlib.error mid-stream).
DAMAGED = (EOFError, zipfile.BadZipFile, lzma.LZMAError, zlib.error)
UNPACK = {"gzip": "zcat", "bz2": "bzcat", "xz": "xzcat", "zip": "unzip -p"}
log = logging.getLogger("deid_core.io")


def _compression(path: Path) -> str | None:
    """``None`` for plain text, else the decompressor pandas reads it with; spreadsheets are refused."""
    try:
        with open(path, "rb") as fh:
            start = fh.read(8)
    except OSError as exc:
        raise DeidInputError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
    kind = next((name for magic, name in MAGIC if start.startswith(magic)), None)
    if kind == "xls":
        raise DeidInputError(f"cannot read {str(path)!r}: {SPREADSHEET}")
    if kind == "zip":
        try:
            with zipfile.ZipFile(path) as archive:
                members = [m for m in archive.namelist() if not m.endswith("/")]
        except zipfile.BadZipFile:
            raise DeidInputError(f"cannot read {str(path)!r}: a damaged zip archive") from None
        if any(m.startswith("xl/") for m in members):
            raise DeidInputError(f"cannot read {str(path)!r}: {SPREADSHEET}")
        if len(members) != 1:
            raise DeidInputError(f"cannot read {str(path)!r}: a zip archive of {len(members)} files; give one "
                                 f"holding a single CSV file")
    return kind


def _open_text(path: Path, compression: str | None):
    """The file as a binary stream, decompressed."""
    if compression is None:
        return open(path, "rb")
    if compression == "zip":
        archive = zipfile.ZipFile(path)
        return archive.open(archive.namelist()[0])
    return {"gzip": gzip.open, "bz2": bz2.open, "xz": lzma.open}[compression](path, "rb")


def _not_utf8(path: Path, compression: str | None) -> DeidInputError:
    """Where a file stops being UTF-8, and what to do (found by decoding it again, in pieces)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset, line = 0, 1
    try:
        with _open_text(path, compression) as fh:
            while piece := fh.read(1 << 20):
                try:
                    decoder.decode(piece)
                except UnicodeDecodeError as exc:
                    at = offset + exc.start
                    line += piece[:exc.start].count(b"\n")
                    byte = piece[exc.start:exc.start + 1].hex()
                    convert = (f"iconv -f cp1252 -t utf-8 {path.name} > {path.stem}-utf8{path.suffix}"
                               if compression is None else
                               f"{UNPACK[compression]} {path.name} | iconv -f cp1252 -t utf-8 > "
                               f"{path.name.split('.')[0]}-utf8.csv")
                    return DeidInputError(
                        f"cannot read {str(path)!r}: not UTF-8 text (byte {at:,} of its text, line {line}: "
                        f"0x{byte}); if it is Latin-1 or Windows-1252, convert it first, e.g. {convert}")
                offset += len(piece)
                line += piece.count(b"\n")
    except (OSError, *DAMAGED) as exc:
        return DeidInputError(f"cannot read {str(path)!r}: {exc}")
    return DeidInputError(f"cannot read {str(path)!r}: not UTF-8 text")


def _first_line(path: Path, compression: str | None) -> str:
    try:
        with _open_text(path, compression) as fh:
            raw = fh.readline()
    except OSError as exc:
        raise DeidInputError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
    except DAMAGED as exc:
        raise DeidInputError(f"cannot read {str(path)!r}: a damaged {compression} file ({exc})") from None
    try:
        return raw.decode("utf-8-sig").rstrip("\r\n")
    except UnicodeDecodeError:
        raise _not_utf8(path, compression) from None


_NOTICED: set[tuple[str, str]] = set()      # (file, notice) already said by this process


def _notice(path: Path, text: str) -> None:
    """Say ``text`` about ``path`` on stderr, once per process (a command may read its input twice)."""
    key = (str(path.resolve()), text)
    if key not in _NOTICED:
        _NOTICED.add(key)
        log.warning("%s: %s", path.name, text)


def _trimmed_header(df: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Column names without surrounding spaces (``rec_id,  given_name``), said once on stderr."""
    names = [str(c) for c in df.columns]
    trimmed = [n.strip() for n in names]
    changed = [n for n, t in zip(names, trimmed) if n != t]
    if changed:
        if len(set(trimmed)) != len(trimmed):
            raise DeidInputError(f"cannot read {str(path)!r}: column names differ only by spaces around them")
        _notice(path, f"spaces around {len(changed)} column name(s) removed ("
                      + ", ".join(repr(n) for n in changed[:3]) + (", ...)" if len(changed) > 3 else ")"))
        df.columns = trimmed
    return df


def read_table(path: str | Path, missing_values: Iterable[str] = ("",), *, categorical: bool = True) -> pd.DataFrame:
    """Read a CSV or Parquet file as string columns (categorical by default); see the module docstring."""
    return read_text_table(path, sorted(set(missing_values) | {SUPPRESSED}), categorical=categorical)


def read_text_table(path: str | Path, missing: Sequence[str], *, categorical: bool) -> pd.DataFrame:
    """Every column as text, exactly as stored; only cells equal to one of ``missing`` become ``NaN``.

    Raises :class:`DeidInputError` (one line, ``cannot read <path>: <reason>``) for any unreadable file.
    """
    path = Path(path)
    if is_parquet(path):
        df = _read_parquet(path, list(missing), categorical)
    else:
        df = _read_csv(path, list(missing), categorical)
    df.columns = [str(c) for c in df.columns]
    return _trimmed_header(df, path)


def require_records(df: pd.DataFrame, name: str = "the input table") -> None:
    """Refuse a table without records (a header line only, 0 Parquet rows): its risk is undefined,
    and a release of nothing must never be reported as meeting a threshold."""
    if len(df) == 0:
        raise DeidInputError(f"{name} has no records (only a header line): nothing to assess or release")


def csv_read_options(path: Path, na: list[str]) -> dict[str, Any]:
    """``pandas.read_csv`` options that read ``path`` exactly as text: its separator (from the header),
    ``dtype=str`` with no default NA tokens, ``na`` the only missing markers, and its compression."""
    compression = _compression(path)
    header = _first_line(path, compression)
    if not header:
        raise DeidInputError(f"cannot read {str(path)!r}: empty file")
    sep = detect_separator(header)
    # A header whose every name after the first follows its separator with spaces (``rec_id, given_name``,
    # as FEBRL writes): the file separates fields with ", ", so those spaces belong to no value.
    spaced = len(header.split(sep)) > 1 and all(name.startswith(" ") for name in header.split(sep)[1:])
    if spaced:
        _notice(path, f"fields are separated by {sep + ' '!r}: the spaces after each separator are not part of "
                      "the values")
    return dict(sep=sep, dtype=str, keep_default_na=False, na_values=na, skipinitialspace=spaced,
                encoding="utf-8-sig", quoting=csv.QUOTE_MINIMAL, compression=compression)


def _read_csv(path: Path, na: list[str], categorical: bool) -> pd.DataFrame:
    """``dtype=str`` with no default NA tokens: pandas infers nothing.

    Categorical: each chunk of rows is dictionary-encoded by Arrow as it is parsed (int32 indices
    and the chunk's distinct strings), and Arrow unifies the dictionaries when the columns become
    pandas categoricals; only one chunk of strings is ever held. Categories are in order of first
    appearance, whatever the chunking.
    """
    import pyarrow as pa

    options = csv_read_options(path, na)
    compression = options["compression"]
    try:
        if not categorical:
            return pd.read_csv(path, **options)
        parts: dict[Any, list[pa.DictionaryArray]] = {}  # Arrow chunks per column
        columns: pd.Index | None = None
        with pd.read_csv(path, chunksize=CHUNK_ROWS, **options) as reader:
            for chunk in reader:
                columns = chunk.columns
                for col in columns:
                    parts.setdefault(col, []).extend(pa.chunked_array(pa.array(chunk[col], pa.large_string()))
                                                     .dictionary_encode().chunks)
    except UnicodeDecodeError:
        raise _not_utf8(path, compression) from None
    except (pd.errors.ParserError, ValueError, OSError, *DAMAGED) as exc:
        lines = str(exc).strip().splitlines()
        raise DeidInputError(f"cannot read {str(path)!r}: {lines[-1] if lines else type(exc).__name__}") from None
    if columns is None:
        return pd.DataFrame()
    return pd.DataFrame({col: _categorical(parts.pop(col)) for col in columns})


def _categorical(chunks: list) -> pd.Categorical:
    """One pandas categorical from Arrow dictionary chunks (dictionaries unified, nulls -> code -1)."""
    import numpy as np
    import pyarrow as pa

    unified = pa.chunked_array(chunks, type=pa.dictionary(pa.int32(), pa.large_string())).unify_dictionaries()
    if unified.num_chunks == 0:  # a header without rows
        return pd.Categorical([], categories=pd.Index([], dtype="str"))
    codes = np.concatenate([c.indices.fill_null(-1).to_numpy() for c in unified.chunks])
    return pd.Categorical.from_codes(codes, categories=pd.Index(unified.chunk(0).dictionary.to_pandas()))


def _read_parquet(path: Path, na: list[str], categorical: bool) -> pd.DataFrame:
    """Parquet via pyarrow, one batch of rows at a time: every column as text (:func:`_parquet_text`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        source = pq.ParquetFile(path)
        names = [str(n) for n in source.schema_arrow.names]
        parts: list[list[pa.Array]] = [[] for _ in names]
        for batch in source.iter_batches(batch_size=CHUNK_ROWS):
            for i, col in enumerate(batch.columns):
                text = _parquet_text(col, na)
                parts[i].append(text.dictionary_encode() if categorical else text)
    except (OSError, pa.ArrowException) as exc:
        lines = str(exc).strip().splitlines()
        raise DeidInputError(f"cannot read {str(path)!r}: {lines[0] if lines else type(exc).__name__}") from None
    columns = {}
    for i in range(len(names)):
        chunks, parts[i] = parts[i], []
        columns[i] = (_categorical(chunks) if categorical
                      else pa.chunked_array(chunks, type=pa.large_string()).to_pandas().astype("str"))
    df = pd.DataFrame(columns)
    df.columns = names
    return df


def _parquet_text(col, na: list[str]):
    """One Parquet column chunk as Arrow text: float NaN -> null, Arrow's cast to string, ``na`` -> null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_floating(col.type):
        col = pc.if_else(pc.is_nan(col), pa.scalar(None, col.type), col)
    col = col.cast(pa.large_string())
    if na:
        col = pc.if_else(pc.is_in(col, value_set=pa.array(na, pa.large_string())), pa.scalar(None, pa.large_string()), col)
    return col


def _atomic(path: str | Path, write: Callable[[str], None]) -> None:
    """``write`` a temporary file in the target folder, then rename it over ``path`` (:func:`common.atomic.atomic_path`)."""
    with atomic_path(path, lambda _: DeidInputError(f"cannot write {str(path)!r}: folder does not exist")) as tmp:
        write(tmp)


def _is_text(s: pd.Series) -> bool:
    return isinstance(s.dtype, pd.CategoricalDtype) or s.dtype == object or pd.api.types.is_string_dtype(s.dtype)


def _text_values(df: pd.DataFrame) -> Iterable[pd.Series]:
    """The distinct-ish text of each text column (categoricals: only the categories, no per-row work)."""
    for name in df.columns:
        s = df[name]
        if isinstance(s.dtype, pd.CategoricalDtype):
            s = pd.Series(s.cat.categories)
        if _is_text(s):
            yield s.dropna().astype("str")


def _csv_layout(df: pd.DataFrame) -> dict[str, Any]:
    """Line ending and quoting that let every text value read back unchanged.

    Minimal quoting and ``\n`` normally. A value holding a carriage return needs ``\r\n`` line
    ends (RFC 4180), which makes the CSV writer quote it; in a one-column table a blank or
    whitespace-only value would be read as a blank line and skipped, so every cell is quoted.
    """
    values = list(_text_values(df))
    crlf = any(v.str.contains("\r", regex=False).any() for v in values)
    blank_line = len(df.columns) == 1 and any((v.str.strip() == "").any() for v in values)
    return {"lineterminator": "\r\n" if crlf else "\n", "quoting": csv.QUOTE_ALL if blank_line else csv.QUOTE_MINIMAL}


def write_frame(df: pd.DataFrame, target: str | Path, *, parquet: bool, sep: str = ",") -> None:
    """Write ``df`` to ``target`` (not atomic: see :func:`write_table`), text columns as exact text.

    CSV: missing cells as empty strings, quoting and line ends from :func:`_csv_layout`.
    Parquet: every text column (categorical, object, string) as an Arrow ``string`` column.
    """
    if parquet:
        import pyarrow as pa
        import pyarrow.parquet as pq

        arrays, names = [], []
        for name in df.columns:
            s = df[name]
            if _is_text(s):
                arrays.append(pa.array(s.astype("str"), type=pa.string(), from_pandas=True))
            else:
                arrays.append(pa.array(s, from_pandas=True))
            names.append(str(name))
        pq.write_table(pa.table(arrays, names=names), target)
    else:
        df.to_csv(target, sep=sep, index=False, na_rep="", **_csv_layout(df))


def write_table(df: pd.DataFrame, path: str | Path, sep: str = ",") -> None:
    """Write CSV (or Parquet by suffix) atomically; missing cells as empty strings."""
    _atomic(path, lambda tmp: write_frame(df, tmp, parquet=is_parquet(path), sep=sep))


def write_text(text: str, path: str | Path) -> None:
    """Write a text file atomically (UTF-8)."""
    write_bytes(text.encode("utf-8"), path)


def write_bytes(data: bytes, path: str | Path) -> None:
    """Write a binary file atomically."""
    def w(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            fh.write(data)
    _atomic(path, w)


def write_json(obj: Any, path: str | Path) -> None:
    """Write JSON atomically (sorted keys off, 2-space indent)."""
    write_text(json.dumps(obj, indent=2, default=_json_default) + "\n", path)


def _json_default(o: Any) -> Any:
    import numpy as np
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serializable: {type(o).__name__}")
