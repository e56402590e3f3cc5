"""The detector's compiled modules (setup.py: mypyc at build time; docs/text.md, "Compiled"). A non-editable install
holds them, and they find exactly what this checkout's Python modules (which the other tests import, their CLI runs
included) find: the spans of the development corpus with and without hints, every transform of its notes, and random
notes spliced from it with digits, punctuation, case and non-ASCII letters put in; and the whole ``deid text``
command, worker processes and surrogates included, writes the same table and report, and refuses a bad table alike.

The installed package is run in its own process (``python -I`` from an empty folder: neither this checkout nor
``PYTHONPATH`` on its path), as ``deid`` runs it."""
from __future__ import annotations

import ast
import csv
import json
import os
import random
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import deid_core
from deid_core.text import detect_many
from deid_core.text.column import deidentify_notes
from deid_core.text.transforms import MODES, Surrogates

REPO = Path(__file__).resolve().parents[3]
NOTES = REPO / "tests" / "data" / "notes" / "notes.jsonl"
KEY = b"compiled-or-not, the same key"

#: What the installed package is: where it lies and which of the compiled modules are extensions.
_WHERE = r'''
import importlib, json, sys
import deid_core
modules = {name: importlib.import_module(name).__file__ for name in sys.argv[1:]}
print(json.dumps({"package": deid_core.__file__, "modules": modules}))
'''
#: The spans and the transformed notes of the installed package, for the notes and hints of a JSON file.
_RUN = r'''
import json, sys
from deid_core.text import detect_many
from deid_core.text.column import deidentify_notes
from deid_core.text.transforms import MODES, Surrogates
texts, hints = json.load(open(sys.argv[1], encoding="utf-8"))
out = {"plain": [[list(s) for s in spans] for spans in detect_many(texts)],
       "hints": [[list(s) for s in spans] for spans in detect_many(texts, hints)],
       "modes": {mode: deidentify_notes(texts, mode, hints=hints, surrogates=Surrogates(sys.argv[3].encode())).notes
                 for mode in MODES}}
json.dump(out, open(sys.argv[2], "w", encoding="utf-8"))
'''


def _compiled_modules() -> list[str]:
    """The module names of setup.py's ``COMPILED``."""
    tree = ast.parse((REPO / "setup.py").read_text(encoding="utf-8"))
    paths = next(ast.literal_eval(node.value) for node in tree.body
                 if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "COMPILED")
    return [path.removesuffix(".py").replace("/", ".") for path in paths]


def _installed(tmp_path: Path, script: str, *args: str) -> str:
    p = subprocess.run([sys.executable, "-I", "-c", script, *args], cwd=tmp_path, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """The installed package's modules; skips where the install is editable (its modules are this checkout's
    Python, never compiled) or ``DEID_PURE_PYTHON=1`` asked for no compiled modules."""
    where = json.loads(_installed(tmp_path_factory.mktemp("where"), _WHERE, *_compiled_modules()))
    if Path(where["package"]).resolve().parent == Path(deid_core.__file__).resolve().parent:
        pytest.skip("an editable install: the detector runs as Python (setup.py)")
    if os.environ.get("DEID_PURE_PYTHON") == "1":
        pytest.skip("DEID_PURE_PYTHON=1: installed without compiled modules (setup.py)")
    return where


def test_the_checkout_modules_the_other_tests_import_are_python():
    modules = [sys.modules.get(name) or __import__(name, fromlist=["_"]) for name in _compiled_modules()]
    assert [m.__name__ for m in modules if not m.__file__.endswith(".py")] == []


@pytest.mark.slow
def test_a_non_editable_install_runs_every_listed_module_compiled(installed):
    compiler = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:  # the extensions are optional (setup.py): such an install is Python
        pytest.skip(f"no C compiler ({compiler}) where the package was installed: its modules run as Python")
    assert {name: Path(file).suffix for name, file in installed["modules"].items()} == {
        name: ".so" for name in _compiled_modules()}


def _spliced(notes: list[str], count: int, seed: int) -> list[str]:
    """Random notes made of pieces of ``notes``, some lower- or upper-cased, some with characters put in."""
    rng = random.Random(seed)
    alphabet = "0123456789/-.,: \t\n()#@xX'’AaMmÉéß\u0130"
    out = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 5)):
            text = rng.choice(notes)
            start = rng.randrange(len(text))
            piece = text[start:start + rng.randint(1, 200)]
            roll = rng.random()
            if roll < 0.15:
                piece = piece.lower()
            elif roll < 0.25:
                piece = piece.upper()
            elif roll < 0.45:
                chars = list(piece)
                for _ in range(rng.randint(1, 5)):
                    chars.insert(rng.randrange(len(chars) + 1), rng.choice(alphabet))
                piece = "".join(chars)
            parts.append(piece)
        out.append(rng.choice(["", " ", "\n"]).join(parts))
    return out


@pytest.mark.slow
def test_the_compiled_detector_finds_and_writes_exactly_what_the_python_one_does(installed, tmp_path):
    from benchmarks.notes_corpus import generate

    rows = [json.loads(line) for line in NOTES.read_text(encoding="utf-8").splitlines()]
    rows += generate(300, 11)[0]
    texts = [row["text"] for row in rows]
    hints = [row.get("hints") or {} for row in rows]
    spliced = _spliced(texts, 1500, 5)
    texts += spliced
    hints += [hints[i % len(rows)] for i in range(len(spliced))]
    given, got = tmp_path / "notes.json", tmp_path / "out.json"
    given.write_text(json.dumps([texts, hints]), encoding="utf-8")
    _installed(tmp_path, _RUN, str(given), str(got), KEY.decode())
    compiled = json.loads(got.read_text(encoding="utf-8"))
    assert compiled["plain"] == [[list(s) for s in spans] for spans in detect_many(texts)]
    assert compiled["hints"] == [[list(s) for s in spans] for spans in detect_many(texts, hints)]
    for mode in MODES:
        assert compiled["modes"][mode] == deidentify_notes(texts, mode, hints=hints, surrogates=Surrogates(KEY)).notes


def _deid(tmp_path: Path, installed: bool, *args: str) -> subprocess.CompletedProcess:
    """``deid`` of the installed package (``python -I`` from ``tmp_path``) or of this checkout."""
    command = [sys.executable, "-I", "-m", "deid_core.cli"] if installed else [sys.executable, "-m", "deid_core.cli"]
    env = None if installed else {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([*command, *args], cwd=tmp_path if installed else REPO, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow
def test_the_installed_deid_text_writes_what_the_checkouts_writes_with_two_workers(installed, tmp_path):
    """The whole command, worker processes and surrogates included, on a column of more than 1 MB (the size from
    which ``--workers`` shares it out); and a table that is not UTF-8 refused alike, one line, exit 2, nothing
    written."""
    from benchmarks.notes_corpus import generate

    table = tmp_path / "notes.csv"
    with table.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["patient_id", "name", "mrn", "dob", "note"])
        for i, note in enumerate(generate(3000, 13)[0]):
            hints = note["hints"]
            writer.writerow([f"P{i // 3:04d}", hints["name"], hints["mrn"], hints["dob"], note["text"]])
    assert table.stat().st_size > 1_000_000
    key = tmp_path / "key"
    key.write_bytes(KEY)
    args = ["text", "--input", str(table), "--column", "note", "--mode", "surrogate", "--hints",
            "name=name,mrn=mrn,dob=dob", "--patient", "patient_id", "--key-file", str(key), "--workers", "2"]
    reports = []
    for installed_one, name in ((True, "installed"), (False, "checkout")):
        p = _deid(tmp_path, installed_one, *args, "--out", str(tmp_path / f"{name}.csv"), "--report",
                  str(tmp_path / f"{name}.json"))
        assert p.returncode == 0, p.stderr
        report = json.loads((tmp_path / f"{name}.json").read_text(encoding="utf-8"))
        assert report.pop("workers") == 2
        report.pop("seconds")
        reports.append(report)
    assert (tmp_path / "installed.csv").read_bytes() == (tmp_path / "checkout.csv").read_bytes()
    assert reports[0] == reports[1]

    bad = tmp_path / "latin1.csv"
    bad.write_bytes("patient_id,note\nP1,Seen by Dr. M\xfcller\n".encode("latin-1"))
    for installed_one in (True, False):
        out = tmp_path / f"bad_{installed_one}.csv"
        p = _deid(tmp_path, installed_one, "text", "--input", str(bad), "--column", "note", "--out", str(out),
                  "--mode", "tag")
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and not out.exists(), p.stderr
