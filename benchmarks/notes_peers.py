"""Free-text de-identification scored on the development corpus (benchmarks/notes_corpus.py): this project's
detector (``deid_core.text``, without and with the record's hints) next to Microsoft Presidio's analyzer, in
the same run on the same notes, scored alike (``deid_core.text.evaluate``: per group micro precision, recall,
all-or-nothing recall per document, F2), with the speed of each in MB of text per second on one core and the
machine's load (``os.getloadavg``) before and after. The quality runs (and their clock times) use this checkout's
modules, run by the interpreter; the CPU times are taken for both the installed detector (compiled by mypyc unless
the install is editable, setup.py) and this checkout's Python, which find the same spans
(tests/deid_core/text/test_compiled.py).

    python -m benchmarks.notes_peers [--notes 300] [--seed 7] [--presidio /tmp/presidio] [--json OUT] [--column-notes N]

Presidio runs in its own virtual environment (``python3 -m venv /tmp/presidio && /tmp/presidio/bin/pip install
presidio-analyzer presidio-anonymizer``) as a subprocess that reads the notes and writes its spans. With no
spaCy model installable from the package index it runs patterns only: its ``AnalyzerEngine`` over a blank
English spaCy pipeline (tokens, no named entities), every predefined pattern recognizer at score threshold 0
(the analyzer's default). Its types are mapped to ours (PERSON to LAST_NAME, DATE_TIME to DATE, ...); a
detection counts wherever it overlaps a gold span, whatever its type, for both systems.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.notes_corpus import generate, write
from deid_core.text import detect, detect_many
from deid_core.text.evaluate import evaluate

PLAIN_SCAN = re.compile(r"\w+")
GROUPS = ("NAME", "ADDRESS", "CONTACT", "IDENTIFIER", "DATE", "AGE", "FACILITY", "ALL")
PRESIDIO_TYPES = {"PERSON": "LAST_NAME", "DATE_TIME": "DATE", "PHONE_NUMBER": "PHONE", "EMAIL_ADDRESS": "EMAIL",
                  "URL": "URL", "US_SSN": "SSN", "LOCATION": "CITY", "US_DRIVER_LICENSE": "LICENSE",
                  "MEDICAL_LICENSE": "LICENSE", "US_BANK_NUMBER": "ACCOUNT", "CREDIT_CARD": "ACCOUNT",
                  "IBAN_CODE": "ACCOUNT", "US_PASSPORT": "ID", "US_ITIN": "ID", "IP_ADDRESS": "ID", "NRP": "ID"}
PRESIDIO_RUN = r'''
import json, logging, sys, time
logging.disable(logging.WARNING)
import spacy
from presidio_analyzer import AnalyzerEngine
from presidio_analyzer.nlp_engine import SpacyNlpEngine
blank = sys.argv[3]
spacy.blank("en").to_disk(blank)
engine = AnalyzerEngine(nlp_engine=SpacyNlpEngine(models=[{"lang_code": "en", "model_name": blank}]),
                        supported_languages=["en"])
notes = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
engine.analyze(notes[0]["text"], language="en")
t0 = time.perf_counter()
out = [{"doc": n["doc"], "start": r.start, "end": r.end, "type": r.entity_type}
       for n in notes for r in engine.analyze(n["text"], language="en")]
seconds = time.perf_counter() - t0
with open(sys.argv[2], "w", encoding="utf-8") as f:
    json.dump({"seconds": seconds, "spans": out}, f)
'''


def load() -> str:
    return " / ".join(f"{v:.2f}" for v in os.getloadavg())


def ours(notes: list[dict], hints: bool) -> tuple[list[dict], float]:
    detect("Dr. Smith seen 2/03.")  # the lists load once, before the clock
    t0 = time.perf_counter()
    found = detect_many([n["text"] for n in notes], [n["hints"] for n in notes] if hints else None)
    spans = [{"doc": n["doc"], "start": s.start, "end": s.end, "type": s.type}
             for n, note_spans in zip(notes, found) for s in note_spans]
    return spans, time.perf_counter() - t0


FIRST_PASS_RUN = r'''
import json, sys, time
from deid_core.text import detect, detect_many, transform
import deid_core.text.names
notes = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
way = sys.argv[2]
texts = [n["text"] for n in notes]
hints = [n["hints"] for n in notes]
detect("Dr. Smith seen 2/03.")  # the lists load before the clock, as deid text loads them before its first chunk
t0 = time.process_time()
for at in range(0, len(texts), 256):  # as deid text: 256 notes at a time, each seen for the first time
    chunk = texts[at:at + 256]
    found = detect_many(chunk, hints[at:at + 256] if way != "detect" else None)
    if way == "detect + hints + tag":
        for text, spans in zip(chunk, found):
            transform(text, spans, "tag")
print(time.process_time() - t0, not deid_core.text.names.__file__.endswith(".py"))
'''
#: The ways detection is timed: alone; with the record's hints; with hints and the ``tag`` transform, the work of
#: ``deid text --hints ... --mode tag`` on a column.
WAYS = ("detect", "detect + hints", "detect + hints + tag")
#: The detectors timed: the installed package (``python -I`` from the work folder, as ``deid`` imports it: its
#: modules compiled by mypyc, setup.py, unless the install is editable or could not compile them) and this
#: checkout's Python modules (the same code run by the interpreter).
BUILDS = ("installed", "python")
REPO = Path(__file__).resolve().parents[1]


def cpu_seconds(notes_file: Path, notes: list[dict], repeats: int = 3) -> tuple[dict[str, float], bool]:
    """The best of ``repeats`` CPU times (``time.process_time``: less swayed than the clock by other work on the
    machine) of each of :data:`WAYS` over the notes with each of :data:`BUILDS` (``"detect (python)"``, ...), and of
    the yardstick: one plain regular-expression pass over the words of the same notes. Speed as a multiple of the
    yardstick's compares runs on machines of other speeds and loads. Also whether the installed detector is
    compiled.

    Each detection run is a fresh process that sees every note for the first time, as ``deid text`` does: the
    detector keeps bounded caches of what it has met (word kinds, parsed dates), so a second pass over the same
    notes runs faster than any real first pass (about 1.2 times on 2,000 notes) and would overstate the speed."""
    texts = [n["text"] for n in notes]
    best: dict[str, float] = {}
    compiled = False
    for build in BUILDS:
        command = [sys.executable, "-I", "-c"] if build == "installed" else [sys.executable, "-c"]
        for way in WAYS:
            runs = [subprocess.run([*command, FIRST_PASS_RUN, str(notes_file), way], capture_output=True, text=True,
                                   check=True, cwd=notes_file.parent if build == "installed" else REPO).stdout.split()
                    for _ in range(repeats)]
            best[f"{way} ({build})"] = min(float(seconds) for seconds, _ in runs)
            compiled = compiled or build == "installed" and runs[0][1] == "True"
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        [sum(1 for _ in PLAIN_SCAN.finditer(t)) for t in texts]
        times.append(time.process_time() - t0)
    best["plain regex scan"] = min(times)
    return best, compiled


def presidio(venv: Path, notes_file: Path, work: Path) -> tuple[list[dict], float] | None:
    python = venv / "bin" / "python"
    if not python.exists():
        return None
    out = work / "presidio.json"
    p = subprocess.run([str(python), "-c", PRESIDIO_RUN, str(notes_file), str(out), str(work / "blank_en")],
                       capture_output=True, text=True, env={**os.environ, "TLDEXTRACT_CACHE": str(work / "tld")})
    if p.returncode:
        print(f"presidio failed: {p.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    result = json.loads(out.read_text())
    spans = [{**s, "type": PRESIDIO_TYPES.get(s["type"], "ID")} for s in result["spans"]]
    return spans, result["seconds"]


def column_speed(count: int, seed: int) -> dict:
    """Wall-clock MB/s of ``deid text``'s work on a column (detection and the ``tag`` transform,
    ``deidentify_notes``) in one process and in two, and whether the two outputs are the same."""
    from deid_core.text.column import deidentify_notes

    notes = [n["text"] for n in generate(count, seed)[0]]
    megabytes = sum(len(n.encode("utf-8")) for n in notes) / 1e6
    detect("Dr. Smith seen 2/03.")
    out = {"notes": count, "megabytes": round(megabytes, 3)}
    results = []
    for workers in (1, 2):
        t0 = time.perf_counter()
        results.append(deidentify_notes(notes, "tag", workers=workers, parallel_from=0))
        out[f"workers_{workers}_mb_per_s"] = round(megabytes / (time.perf_counter() - t0), 3)
    out["same_output"] = results[0].notes == results[1].notes
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=int, default=300)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--presidio", type=Path, default=Path("/tmp/presidio"))
    ap.add_argument("--json", type=Path)
    ap.add_argument("--column-notes", type=int, default=0,
                    help="also time deid text's column work on this many notes (seed + 1) in one and two processes")
    args = ap.parse_args()
    notes, gold = generate(args.notes, args.seed)
    megabytes = sum(len(n["text"].encode("utf-8")) for n in notes) / 1e6
    docs = [n["doc"] for n in notes]
    results = {"notes": args.notes, "seed": args.seed, "megabytes": round(megabytes, 4), "load_before": load(),
               "systems": {}}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        write(notes, gold, work)
        runs = {"deid_core.text": ours(notes, False), "deid_core.text + hints": ours(notes, True),
                "presidio (patterns)": presidio(args.presidio, work / "notes.jsonl", work)}
        cpu, compiled = cpu_seconds(work / "notes.jsonl", notes)
    for name, run in runs.items():
        if run is None:
            continue
        spans, seconds = run
        rows = evaluate(gold, spans, docs)
        results["systems"][name] = {"seconds": round(seconds, 3), "mb_per_s": round(megabytes / seconds, 3),
                                    "groups": {g: rows.get(g) for g in GROUPS}}
    results["cpu"] = {name: {"seconds": round(sec, 3), "mb_per_s": round(megabytes / sec, 3),
                             "times_plain_scan": round(cpu["plain regex scan"] / sec, 4)} for name, sec in cpu.items()}
    results["installed_detector"] = "compiled (mypyc)" if compiled else "Python (editable or not compiled)"
    if args.column_notes:
        results["column"] = column_speed(args.column_notes, args.seed + 1)
    results["load_after"] = load()
    print(f"{args.notes} notes, {megabytes:.3f} MB; load (1/5/15 min) {results['load_before']} before, "
          f"{results['load_after']} after")
    print(f"{'system':<24} {'group':<11} {'precision':>9} {'recall':>7} {'all-or-nothing':>14} {'F2':>6}")
    fmt = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
    for name, r in results["systems"].items():
        for g, row in r["groups"].items():
            if row:
                print(f"{name:<24} {g:<11} {fmt(row['precision']):>9} {fmt(row['recall']):>7} "
                      f"{fmt(row['all_or_nothing_recall']):>14} {fmt(row['f2']):>6}")
        print(f"{name:<24} speed: {r['mb_per_s']:.2f} MB/s on one core")
    print(f"CPU time on notes met the first time; the installed detector is {results['installed_detector']}")
    for name, r in results["cpu"].items():
        print(f"{name:<32} CPU time: {r['mb_per_s']:.2f} MB/s, {r['times_plain_scan']:.4f} x a plain regex word scan")
    if "column" in results:
        c = results["column"]
        print(f"deid text column (tag), {c['notes']} notes, {c['megabytes']:.3f} MB: {c['workers_1_mb_per_s']:.2f} MB/s in "
              f"one process, {c['workers_2_mb_per_s']:.2f} MB/s in two (same output: {c['same_output']})")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
