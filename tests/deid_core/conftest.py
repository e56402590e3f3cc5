"""Shared fixtures: the Adult data with its ARX hierarchies."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from deid_testdata import ADULT, adult_spec_toml


@pytest.fixture(scope="session")
def adult_df() -> pd.DataFrame:
    from deid_core.io import read_table
    return read_table(ADULT / "adult.csv")


@pytest.fixture
def adult_spec_path(tmp_path: Path) -> Path:
    p = tmp_path / "adult.toml"
    p.write_text(adult_spec_toml())
    return p


