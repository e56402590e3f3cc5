"""Docs that run: every ```bash, ```sh and ```console block of README.md and docs/*.md is executed, in order,
per file, in a scratch folder holding the example data of docs/examples/ (and ``tests/``, for the shipped
FEBRL files, as from the repository's root); a non-zero exit fails.

Markers (an HTML comment on the line just before a fence):
* ``<!-- not runnable: REASON -->`` skips a shell block (the reason is required: a synopsis with
  placeholders, a server that runs until stopped, an install from PyPI);
* ``<!-- file: NAME -->`` before any other block writes its text to NAME in the scratch folder first
  (the spec or policy the commands after it read), so the text shown is the text run.
In a ``console`` block only the lines starting with ``$ `` are commands. ``deid``, ``party`` and
``keyholder`` run this checkout's code (the project need not be installed).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "docs" / "examples"
SHELLS = ("bash", "sh", "console")
MARKER = re.compile(r"<!--\s*(not runnable|file):\s*(.*?)\s*-->")
CLIS = {"deid": "deid_core.cli", "party": "party_client.cli", "keyholder": "keyholder.cli"}


@dataclass
class Block:
    line: int           # 1-based line of the opening fence
    lang: str
    text: str
    marker: tuple[str, str] | None


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file with the marker comment just before it (if any)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        start, j = i, i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        before = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
        mk = MARKER.fullmatch(before.strip())
        out.append(Block(start + 1, m.group(1), "\n".join(lines[start + 1:j]) + "\n",
                         (mk.group(1), mk.group(2)) if mk else None))
        i = j + 1
    return out


def commands(block: Block) -> str:
    if block.lang != "console":
        return block.text
    return "".join(line[2:] + "\n" for line in block.text.splitlines() if line.startswith("$ "))


ALL_DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: The files with at least one shell block to run.
DOCS = [p for p in ALL_DOCS if any(b.lang in SHELLS and not b.marker for b in blocks(p))]


def test_every_skipped_block_says_why_and_every_file_marker_names_a_file():
    for path in ALL_DOCS:
        for b in blocks(path):
            if b.marker and b.marker[0] == "not runnable":
                assert b.lang in SHELLS and len(b.marker[1]) >= 10, f"{path.name}:{b.line}: say why it cannot run"
            if b.marker and b.marker[0] == "file":
                assert re.fullmatch(r"[\w.-]+", b.marker[1]) and b.lang not in SHELLS, f"{path.name}:{b.line}"


@pytest.mark.parametrize("path", DOCS, ids=[p.name for p in DOCS])
def test_the_shell_blocks_run(path: Path, tmp_path: Path):
    scratch, bin_dir = tmp_path / "work", tmp_path / "bin"
    shutil.copytree(EXAMPLES, scratch, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    (scratch / "tests").symlink_to(REPO / "tests")      # the shipped data, as from the repository's root
    bin_dir.mkdir()
    for name, module in CLIS.items():
        shim = bin_dir / name
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m {module} "$@"\n')
        shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("DEID_KEY",)}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(REPO))
    for b in blocks(path):
        if b.marker and b.marker[0] == "file":
            (scratch / b.marker[1]).write_text(b.text, encoding="utf-8")
            continue
        if b.lang not in SHELLS or (b.marker and b.marker[0] == "not runnable"):
            continue
        t0 = time.perf_counter()
        p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", commands(b)], cwd=scratch, env=env,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, (f"{path.name}:{b.line}: exit {p.returncode} after {time.perf_counter() - t0:.1f} s\n"
                                   f"{b.text}\nstderr: {p.stderr[-2000:]}")
        assert "Traceback" not in p.stderr, f"{path.name}:{b.line}: {p.stderr[-2000:]}"
