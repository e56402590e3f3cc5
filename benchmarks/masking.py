"""Benchmark (not a test): masking and utility throughput (docs/masking.md, "Measured").

Run once:  PYTHONPATH=. python benchmarks/masking.py [--values 100000]
Prints a JSON summary: seconds per 100,000 distinct values for each masking step (FF3-1 SSN and Luhn MRN,
HMAC pseudonyms, randomized names), sealing and opening a reversal table of that size, and
``utility`` on a 100,000-row table.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from deid_core.metric.utility import utility  # noqa: E402
from deid_core.transform import Policy  # noqa: E402
from deid_core.transform.fpe import luhn_digit  # noqa: E402
from deid_core.transform.reversal import open_sealed, seal  # noqa: E402

KEY = b"benchmark owner key, 32 bytes.."


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--values", type=int, default=100_000)
    n = ap.parse_args().values
    rng = np.random.default_rng(0)
    nums = rng.choice(10 ** 8, n, replace=False) + 10 ** 8
    ssn = pd.Series([f"{s[:3]}-{s[3:5]}-{s[5:]}" for s in (str(x) for x in nums)], dtype="category")
    bodies = [str(x) for x in nums]
    mrn = pd.Series([b + luhn_digit(b) for b in bodies], dtype="category")
    names = pd.Series([f"Name{i}" for i in range(n)], dtype="category")
    sex = pd.Series(rng.choice(["F", "M"], n), dtype="category")
    df = pd.DataFrame({"ssn": ssn, "mrn": mrn, "pid": names.astype(str).astype("category"), "first": names, "sex": sex})
    scale = 100_000 / n
    res: dict = {"values": n}
    for label, step in (("fpe_ssn", {"op": "fpe", "column": "ssn", "format": "ssn"}),
                        ("fpe_luhn", {"op": "fpe", "column": "mrn", "format": "luhn"}),
                        ("hmac_pseudonyms", {"op": "pseudonymize", "column": "pid"}),
                        ("names_by_sex", {"op": "names", "column": "first", "sex": "sex"})):
        (_, ctx), s = timed(lambda: Policy([step]).apply(df[[step["column"], "sex"]], key=KEY, reversal=True))
        res[f"{label}_s_per_100k"] = round(s * scale, 3)
        if label == "names_by_sex":
            blob, s_seal = timed(lambda: seal(ctx["reversal"], KEY))
            _, s_open = timed(lambda: open_sealed(blob, KEY))
            res.update(seal_s_per_100k=round(s_seal * scale, 3), open_s_per_100k=round(s_open * scale, 3),
                       sealed_bytes_per_100k=int(len(blob) * scale))
    age = rng.integers(18, 90, n)
    orig = pd.DataFrame({"age": age.astype(str), "bmi": (18 + 0.08 * age + rng.normal(0, 3, n)).round(1).astype(str),
                         "sex": sex.astype(str), "dx": rng.choice(["a", "b", "c", "d"], n)}).astype("category")
    rel = orig.assign(age=pd.Series([f"{a // 10 * 10}-{a // 10 * 10 + 9}" for a in age], dtype="category"))
    _, s = timed(lambda: utility(orig, rel, ["age", "bmi"], ["sex", "dx"], None, ["bmi~age"]))
    res["utility_s_per_100k_rows"] = round(s * scale, 3)
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
