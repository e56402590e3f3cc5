"""Reading and writing tables: CSV (``,`` ``;`` or tab) and Parquet; atomic writes.

Every column is read as strings (pandas ``category`` dtype: one code array per
column, which keeps 10 million rows small) with ``keep_default_na=False`` so
identifiers keep their leading zeros. Missing-value convention: a cell is
missing when it equals one of ``missing_values`` (default: the empty string)
or the suppression marker :data:`deid_core.spec.SUPPRESSED`; missing cells
become ``NaN`` and are written back as the empty string.
"""
from __future__ import annotations

import csv
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd

from .errors import DeidInputError
from .spec import SUPPRESSED

SEPARATORS = (",", ";", "\t")


def detect_separator(header: str) -> str:
    """The separator among ``, ; \\t`` that occurs most often in the header line."""
    counts = {sep: header.count(sep) for sep in SEPARATORS}
    best = max(SEPARATORS, key=lambda s: counts[s])
    return best if counts[best] else ","


def _first_line(path: Path) -> str:
    try:
        with open(path, "r", encoding="utf-8-sig", newline="") as fh:
            return fh.readline().rstrip("\r\n")
    except OSError as exc:
        raise DeidInputError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise DeidInputError(f"cannot read {str(path)!r}: not UTF-8 text") from None


def read_table(path: str | Path, missing_values: Iterable[str] = ("",), *, categorical: bool = True) -> pd.DataFrame:
    """Read a CSV or Parquet file as string columns (categorical by default)."""
    path = Path(path)
    na = sorted(set(missing_values) | {SUPPRESSED})
    if path.suffix.lower() in (".parquet", ".pq"):
        return _read_parquet(path, na, categorical)
    header = _first_line(path)
    if not header:
        raise DeidInputError(f"cannot read {str(path)!r}: empty file")
    sep = detect_separator(header)
    try:
        df = pd.read_csv(
            path, sep=sep, dtype="category" if categorical else str, keep_default_na=False,
            na_values=na, encoding="utf-8-sig", quoting=csv.QUOTE_MINIMAL,
        )
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise DeidInputError(f"cannot parse {str(path)!r}: {str(exc).strip().splitlines()[-1]}") from None
    if categorical:  # categories are strings even if pandas inferred them differently
        for col in df.columns:
            cats = df[col].cat.categories
            if cats.dtype != object:
                df[col] = df[col].cat.rename_categories([str(c) for c in cats])
    df.columns = [str(c) for c in df.columns]
    return df


def require_records(df: pd.DataFrame, name: str = "the input table") -> None:
    """Refuse a table without records (a header line only, 0 Parquet rows): its risk is undefined,
    and a release of nothing must never be reported as meeting a threshold."""
    if len(df) == 0:
        raise DeidInputError(f"{name} has no records (only a header line): nothing to assess or release")


def _read_parquet(path: Path, na: list[str], categorical: bool) -> pd.DataFrame:
    """Parquet via pyarrow: every column cast to string and dictionary-encoded (-> categorical)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise DeidInputError(f"cannot read {str(path)!r}: {exc}") from None
    out = {}
    for name, col in zip(table.column_names, table.columns):
        col = col.cast(pa.string()) if col.type != pa.string() else col
        col = pc.if_else(pc.is_in(col, value_set=pa.array(na, pa.string())), pa.scalar(None, pa.string()), col)
        s = col.dictionary_encode().to_pandas() if categorical else col.to_pandas()
        out[str(name)] = s.cat.remove_unused_categories() if categorical else s
    return pd.DataFrame(out)


def _atomic(path: str | Path, write: Callable[[str], None]) -> None:
    """Write via a temp file in the target folder, then ``os.replace`` it."""
    path = Path(path)
    folder = path.resolve().parent
    if not folder.is_dir():
        raise DeidInputError(f"cannot write {str(path)!r}: folder does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_table(df: pd.DataFrame, path: str | Path, sep: str = ",") -> None:
    """Write CSV (or Parquet by suffix) atomically; missing cells as empty strings."""
    if Path(path).suffix.lower() in (".parquet", ".pq"):
        _atomic(path, lambda tmp: df.to_parquet(tmp, index=False))
    else:
        _atomic(path, lambda tmp: df.to_csv(tmp, sep=sep, index=False, na_rep=""))


def write_text(text: str, path: str | Path) -> None:
    """Write a text file atomically."""
    def w(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
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
