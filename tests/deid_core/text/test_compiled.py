"""The detector's compiled modules (setup.py: mypyc at build time; docs/text.md, "Speed"). A non-editable install
holds them, and they find exactly what this checkout's Python modules (which every other test imports) find: the
spans of the development corpus with and without hints, every transform of its notes, and random notes spliced from
it with digits, punctuation, case and non-ASCII letters put in.

The installed package is run in its own process (``python -I`` from an empty folder: neither this checkout nor
``PYTHONPATH`` on its path), as ``deid`` runs it."""
from __future__ import annotations

import ast
import json
import os
import random
import subprocess
import sys
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
