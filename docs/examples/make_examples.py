"""Writes the synthetic example tables the shell blocks of README.md and docs/*.md run on (fixed seed;
no real person): ``claims.csv`` (claims, several per member), ``zip_claims.csv`` (visits with home and
provider ZIP codes, on ``areas.csv``) and ``visits.csv`` (identifiers to mask).

Run from the repository root: ``python docs/examples/make_examples.py``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
#: Diagnoses (ICD-9) and drugs (ATC), from frequent to rare: claims draw them with Zipf-like weights.
DX = ["401.9", "250.00", "272.4", "414.01", "428.0", "427.31", "496", "530.81", "244.9", "311", "715.90",
      "786.50", "599.0", "486", "780.79", "724.2", "493.90", "285.9", "403.90", "585.9"]
DRUGS = ["C09AA05", "A10BA02", "C10AA05", "B01AC06", "C03CA01", "C07AB02", "R03AC02", "A02BC01", "H03AA01",
         "N06AB06", "M01AE01", "N02BE01", "J01CA04", "C08CA01", "R03BA02", "B03AA07", "C09CA01", "A10AE04",
         "N05BA01", "J01MA02"]


def _zipf(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    weights = 1 / np.arange(1, n + 1)
    return rng.choice(n, size=size, p=weights / weights.sum())


def claims(rng: np.random.Generator, persons: int = 2000) -> pd.DataFrame:
    """Members with 1 to ~40 claims each (a long tail), sex and birth year fixed per member."""
    counts = np.minimum(1 + rng.geometric(0.22, persons), 40)
    member = np.repeat(np.arange(persons), counts)
    sex = np.where(rng.random(persons) < 0.5, "F", "M")[member]
    birth = (1940 + rng.integers(0, 5, persons))[member]
    return pd.DataFrame({"member_id": [f"M{m:05d}" for m in member], "sex": sex, "birth_year": birth.astype(str),
                         "dx": np.array(DX)[_zipf(rng, len(DX), len(member))],
                         "los": (1 + rng.poisson(2.0, len(member))).astype(str),
                         "drug": np.array(DRUGS)[_zipf(rng, len(DRUGS), len(member))]})


def zip_claims(rng: np.random.Generator, areas: pd.DataFrame, persons: int = 400) -> pd.DataFrame:
    """Visits: a member's home ZIP code and the provider's (drawn from the example areas)."""
    ids = areas["id"].to_numpy()
    counts = 1 + rng.poisson(2.0, persons)
    member = np.repeat(np.arange(persons), counts)
    home = rng.choice(ids, persons)[member]
    provider = rng.integers(0, 60, len(member))
    return pd.DataFrame({"member_id": [f"M{m:05d}" for m in member], "zip": home,
                         "provider": [f"D{p:03d}" for p in provider],
                         "provider_zip": rng.choice(ids, 60)[provider]})


def visits(rng: np.random.Generator, n: int = 200) -> pd.DataFrame:
    """Patients with a patient id, first name, SSN, sex and age (identifiers to mask)."""
    first = ["Mary", "John", "Linda", "James", "Patricia", "Robert", "Anh", "Wei", "Fatima", "Carlos"]
    return pd.DataFrame({"patient_id": [f"P{i:06d}" for i in range(n)],
                         "first_name": rng.choice(first, n),
                         "ssn": [f"{a:03d}-{g:02d}-{s:04d}" for a, g, s in zip(rng.integers(100, 665, n),
                                                                              rng.integers(1, 99, n),
                                                                              rng.integers(1, 9999, n))],
                         "sex": rng.choice(["F", "M"], n),
                         "age": rng.integers(18, 90, n).astype(str)})


def main() -> None:
    rng = np.random.default_rng(2026)
    areas = pd.read_csv(HERE / "areas.csv", dtype=str, keep_default_na=False)
    claims(rng).to_csv(HERE / "claims.csv", index=False)
    zip_claims(rng, areas).to_csv(HERE / "zip_claims.csv", index=False)
    visits(rng).to_csv(HERE / "visits.csv", index=False)


if __name__ == "__main__":
    main()
