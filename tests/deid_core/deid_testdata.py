"""Test data shared by the deid tests (imported by absolute name)."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[2]
TEST_DATA = REPO / "tests" / "data"


def sha(p: Path) -> str:
    """SHA-256 of a file's bytes (byte-identical outputs)."""
    return hashlib.sha256(Path(p).read_bytes()).hexdigest()


def run(*args: str) -> subprocess.CompletedProcess:
    """The real ``deid`` command in a subprocess, from the checkout."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "deid_core.cli", *args], capture_output=True, text=True,
                          env=env, cwd=REPO)

def _shared() -> Path:
    """``shared/`` sits beside the checkout (CI clones next to it); /work/shared on developer machines."""
    for candidate in (Path(__file__).resolve().parents[3] / "shared", Path("/work/shared")):
        if (candidate / "data" / "adult").is_dir():
            return candidate
    return Path("/work/shared")


ADULT = _shared() / "data" / "adult"
ADULT_QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]


def adult_spec_toml(threshold: float = 0.05, release: str = "non-public", extra: str = "") -> str:
    cols = "\n".join(f'"{q}" = "quasi"' for q in ADULT_QIS) + '\n"salary-class" = "sensitive"\n'
    hier = "\n".join(f'"{q}" = {{ csv = "{ADULT}/adult_hierarchy_{q}.csv" }}' for q in ADULT_QIS)
    return f"[columns]\n{cols}\n[hierarchies]\n{hier}\n\n[release]\ntype = \"{release}\"\nthreshold = {threshold}\n{extra}"


# Liu et al. 2016 Table I (population) and Table II (same-disease microdata), Zip5 + DOB
LIU2016_POPULATION = pd.DataFrame({
    "zip": ["00101"] * 3 + ["00202"] * 6,
    "dob": ["1927-07-15", "1927-05-28", "1927-10-26", "1935-01-02", "1935-02-03",
            "1935-10-24", "1935-05-13", "1935-09-26", "1935-09-26"],
    "count": [1] * 9,
})
LIU2016_DATA = pd.DataFrame({
    "zip": ["00101"] * 3 + ["00202"] * 3,
    "dob": ["1927-07-15", "1927-05-28", "1927-10-26", "1935-01-02", "1935-05-13", "1935-09-26"],
})
LIU2016_SPEC = {
    "columns": {"zip": "quasi", "dob": "quasi"},
    "hierarchies": {"zip": {"builder": "prefix"}, "dob": {"builder": "dates"}},
}
#: Zip3 (two characters cropped) and year of birth (week, month, quarter, year)
LIU2016_SAFE_HARBOR_LEVELS = {"zip": 2, "dob": 4}


# Small synthetic claims for LOLA and the longitudinal pages: pid, level 1 sex + yob, level 2 dx + los
CLAIMS_SPEC_TOML = """[columns]
pid = "direct"
sex = "quasi"
yob = "quasi"
dx = "quasi"
los = "quasi"
[hierarchies]
yob = { builder = "interval", widths = [10, 20] }
dx = { builder = "prefix" }
los = { builder = "interval", widths = [5, 10] }
"""
CLAIMS_LONGITUDINAL_TOML = """[longitudinal]
person = "pid"
level1 = ["sex", "yob"]
level2 = ["dx", "los"]
adversary_power = 2
"""


def claims(persons: int = 120, seed: int = 3) -> pd.DataFrame:
    """Small synthetic claims: 1-6 claims per person, level 1 sex + birth year, level 2 dx + length of stay."""
    rng = np.random.default_rng(seed)
    n = rng.integers(1, 7, persons)
    pid = np.repeat(np.arange(persons), n)
    return pd.DataFrame({
        "pid": np.char.add("p", pid.astype(str)).astype(object),
        "sex": np.where(np.arange(persons) % 2 == 0, "F", "M")[pid].astype(object),
        "yob": (1940 + rng.integers(0, 60, persons)).astype(str)[pid].astype(object),
        "dx": np.array(["A1", "A2", "A3", "B1", "B2", "C1", "C2", "C3"], dtype=object)[rng.integers(0, 8, len(pid))],
        "los": rng.integers(0, 20, len(pid)).astype(str).astype(object),
    })
