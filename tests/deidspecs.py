"""Small de-identification specs shared by the deid command tests (the sweep, the one-ending, the
threshold and the page tests): a claims table of persons with [longitudinal]."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

#: pid (person), sex and year of birth per person, dx per claim; threshold 0.2
CLAIMS_SPEC = """[columns]
pid = "direct"
sex = "quasi"
yob = "quasi"
dx = "quasi"
[hierarchies]
dx = { builder = "icd" }
yob = { builder = "interval", widths = [10, 20] }
[release]
threshold = 0.2
[longitudinal]
person = "pid"
level1 = ["sex", "yob"]
level2 = ["dx"]
adversary_power = 2
"""


def write_claims(folder: Path, persons: int = 60, claims_each: int = 4) -> tuple[Path, Path]:
    """``claims.csv`` (pid, sex, yob and a 3-digit ICD-9 code per claim, as text) and ``spec.toml``
    (:data:`CLAIMS_SPEC`) in ``folder``: (data, spec)."""
    rows = [(f"p{p:03d}", "FM"[p % 2], str(1940 + p % 30), f"{250 + (p * 7 + e) % 150:03d}.{e % 10}")
            for p in range(persons) for e in range(claims_each)]
    data, spec = folder / "claims.csv", folder / "spec.toml"
    pd.DataFrame(rows, columns=["pid", "sex", "yob", "dx"]).to_csv(data, index=False)
    spec.write_text(CLAIMS_SPEC)
    return data, spec


#: Names of the notes tests' patients, and their spec: patient and mrn direct, age and zip quasi, a notes
#: column whose identifiers are searched with the row's own name and MRN first; ``[text] mode`` filled in.
NOTE_FIRST = ["Maria", "Jonas", "Aiko", "Pedro", "Ingrid", "Kwame", "Lena", "Omar"]
NOTE_LAST = ["Villegas", "Okafor", "Lindqvist", "Hartmann", "Nakamura", "Duarte", "Brennan", "Petrov"]
NOTES_SPEC = """[columns]
patient = "direct"
mrn = "direct"
age = "quasi"
zip = "quasi"
note = "text"

[hierarchies]
age = {{ builder = "interval", widths = [10, 20] }}
zip = {{ builder = "prefix", levels = 5 }}

[text]
mode = "{mode}"
hints = {{ name = "patient", mrn = "mrn" }}
"""
