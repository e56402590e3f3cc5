"""docs/api.md's example runs as written: a release searched for, measured and judged through the library
calls the commands are made of (on Adult with its ARX hierarchies, as ``linked.csv`` under ``release.toml``)."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from deid_testdata import ADULT, adult_spec_toml

REPO = Path(__file__).resolve().parents[2]


def test_the_python_api_example_runs(tmp_path):
    page = (REPO / "docs" / "api.md").read_text()
    (example,) = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    (tmp_path / "release.toml").write_text(adult_spec_toml())
    shutil.copy(ADULT / "adult.csv", tmp_path / "linked.csv")
    done = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.fullmatch(r"overall risk 0\.\d{4} meets the threshold 0\.05", done.stdout.strip()), done.stdout
