"""The area table: one row per small area (ZIP code, ZCTA, dissemination area) with its representative
point, population, and optionally its land area, its adjacent areas and a boundary that clusters must not
cross (El Emam & Arbuckle, *Anonymizing Health Data*, ch. 9, "Being Good Neighbors" and "We All Have
Boundaries"; docs/geography.md, "The area table").

Columns (names fixed, any order, read as exact text): ``id``, ``lat``, ``lon`` (degrees), ``population``
(people living in the area, a non-negative integer); optional ``area_km2`` (> 0), ``neighbors`` (adjacent
ids separated by ``;``, ``|`` or blanks; adjacency is made symmetric) and ``boundary`` (any label).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import DeidInputError, ParameterError
from .distance import EARTH_RADIUS_KM, unit_vectors

REQUIRED = ("id", "lat", "lon", "population")
OPTIONAL = ("area_km2", "neighbors", "boundary")
NEIGHBOR_SEPARATORS = r"[;|\s]+"


@dataclass(frozen=True, eq=False)
class Areas:
    """A validated area table, in table order (area ``i`` is row ``i``)."""

    ids: pd.Index
    lat: np.ndarray
    lon: np.ndarray
    population: np.ndarray
    area_km2: np.ndarray
    has_area: bool
    edges: np.ndarray | None  # (m, 2) int64 pairs i < j from the neighbors column; None without it
    boundary: np.ndarray  # int code per area; all 0 without a boundary
    boundary_names: np.ndarray  # label per code ("" without a boundary)
    boundary_source: str | None
    vectors: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "vectors", unit_vectors(self.lat, self.lon))

    def __len__(self) -> int:
        return len(self.ids)

    def index_of(self, values: pd.Index) -> np.ndarray:
        """Row of each value in the table, -1 where the value is not an area id."""
        return self.ids.get_indexer(values)


def _numbers(df: pd.DataFrame, col: str, source: str) -> np.ndarray:
    text = df[col].fillna("").astype("str")
    nums = pd.to_numeric(text.str.strip(), errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(nums)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DeidInputError(f"{source}: column {col!r} has {int(bad.sum()):,} value(s) that are not numbers, "
                             f"e.g. {text.iloc[i]!r} for area {df['id'].iloc[i]!r}")
    return nums


def _edges(df: pd.DataFrame, ids: pd.Index, source: str) -> np.ndarray:
    """Symmetric adjacency pairs (i < j, unique) from the ``neighbors`` column."""
    lists = df["neighbors"].fillna("").astype("str").str.strip().str.split(NEIGHBOR_SEPARATORS)
    flat = lists.explode()
    flat = flat[flat.notna() & (flat != "")]
    src = flat.index.to_numpy(dtype=np.int64)
    dst = ids.get_indexer(pd.Index(flat.to_numpy()))
    if (dst < 0).any():
        j = int(np.flatnonzero(dst < 0)[0])
        raise DeidInputError(f"{source}: area {ids[src[j]]!r} lists neighbor {flat.iloc[j]!r}, which is not an "
                             f"id of the table ({int((dst < 0).sum()):,} unknown neighbor(s))")
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    keep = lo != hi
    n = len(ids)
    key = np.unique(lo[keep] * n + hi[keep])
    return np.column_stack([key // n, key % n]).astype(np.int64)


def _boundary(df: pd.DataFrame, ids: pd.Index, within_prefix: int | None, source: str
              ) -> tuple[np.ndarray, np.ndarray, str | None]:
    parts, names = [], []
    if "boundary" in df.columns:
        b = df["boundary"].fillna("").astype("str")
        if (b == "").any():
            raise DeidInputError(f"{source}: column 'boundary' is empty for area {ids[int(np.flatnonzero(b == '')[0])]!r}")
        parts.append(b)
        names.append("column boundary")
    if within_prefix is not None:
        if within_prefix < 1:
            raise ParameterError(f"{{within_prefix}} must be at least 1, got {within_prefix}", "within_prefix")
        short = ids.str.len() < within_prefix
        if short.any():
            raise DeidInputError(f"{source}: area id {ids[int(np.flatnonzero(short)[0])]!r} is shorter than the "
                                 f"prefix of {within_prefix} character(s)")
        parts.append(pd.Series(ids.str[:within_prefix], index=df.index))
        names.append(f"first {within_prefix} character(s) of the id")
    if not parts:
        return np.zeros(len(ids), dtype=np.int64), np.array([""], dtype=object), None
    label = parts[0] if len(parts) == 1 else parts[0] + "/" + parts[1]
    codes, uniques = pd.factorize(label, sort=True)
    return codes.astype(np.int64), np.asarray(uniques, dtype=object), " and ".join(names)


def areas_from_frame(df: pd.DataFrame, source: str = "the area table", within_prefix: int | None = None) -> Areas:
    """Validate a text table (see the module docstring); one-line :class:`DeidInputError` on bad input."""
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise DeidInputError(f"{source}: missing column(s) {', '.join(missing)} (needs {', '.join(REQUIRED)}; "
                             f"optional {', '.join(OPTIONAL)})")
    if len(df) == 0:
        raise DeidInputError(f"{source} has no areas")
    df = df.reset_index(drop=True)
    idcol = df["id"].fillna("").astype("str").str.strip()
    if (idcol == "").any():
        raise DeidInputError(f"{source}: an area has an empty id (row {int(np.flatnonzero(idcol == '')[0]) + 2})")
    dup = idcol.duplicated()
    if dup.any():
        raise DeidInputError(f"{source}: area id {idcol[dup].iloc[0]!r} appears more than once")
    ids = pd.Index(idcol.to_numpy(dtype=object))
    df = df.assign(id=idcol)
    lat, lon = _numbers(df, "lat", source), _numbers(df, "lon", source)
    if (np.abs(lat) > 90).any() or (np.abs(lon) > 180).any():
        i = int(np.flatnonzero((np.abs(lat) > 90) | (np.abs(lon) > 180))[0])
        raise DeidInputError(f"{source}: area {ids[i]!r} has lat {lat[i]}, lon {lon[i]} outside [-90, 90] x [-180, 180]")
    pop = _numbers(df, "population", source)
    bad = (pop < 0) | (pop != np.floor(pop))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DeidInputError(f"{source}: population {df['population'].iloc[i]!r} of area {ids[i]!r} is not a "
                             "non-negative whole number")
    has_area = "area_km2" in df.columns
    area = _numbers(df, "area_km2", source) if has_area else np.zeros(len(df))
    sphere = 4 * np.pi * EARTH_RADIUS_KM ** 2
    if has_area and ((area <= 0) | (area > sphere)).any():
        i = int(np.flatnonzero((area <= 0) | (area > sphere))[0])
        raise DeidInputError(f"{source}: area_km2 {df['area_km2'].iloc[i]!r} of area {ids[i]!r} is not in "
                             f"(0, {sphere:,.0f}] (the Earth's surface)")
    edges = _edges(df, ids, source) if "neighbors" in df.columns else None
    boundary, names, bsource = _boundary(df, ids, within_prefix, source)
    return Areas(ids=ids, lat=lat, lon=lon, population=pop.astype(np.int64), area_km2=area, has_area=has_area,
                 edges=edges, boundary=boundary, boundary_names=names, boundary_source=bsource)


def read_areas(path: str | Path, within_prefix: int | None = None) -> Areas:
    """Read and validate an area table (CSV or Parquet, every cell as text; :mod:`deid_core.io`)."""
    from ..io import read_text_table

    df = read_text_table(path, [""], categorical=False)
    return areas_from_frame(df, f"area table {str(path)!r}", within_prefix)
