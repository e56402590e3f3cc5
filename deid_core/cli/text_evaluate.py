"""``deid text-evaluate``: score the free-text detector (or another tool's spans) against gold spans, the
book's way (docs/text.md, "Evaluating")."""
from __future__ import annotations

import argparse
import time

from .options import guard_outputs


def cmd_text_evaluate(args: argparse.Namespace) -> int:
    from ..io import write_json
    from ..text import detect, detect_many
    from ..text.evaluate import evaluate, read_jsonl, table

    guard_outputs([args.gold, args.notes, args.predicted], [args.report])
    gold = read_jsonl(args.gold, ("doc", "start", "end", "type"))
    notes = read_jsonl(args.notes, ("doc", "text"))
    detect("Dr. Smith seen 2/03.")  # loads the lists once, before the clock starts (docs/text.md, "Measured")
    t0 = time.perf_counter()
    if args.predicted:
        predicted = read_jsonl(args.predicted, ("doc", "start", "end", "type"))
    else:
        found = detect_many([n["text"] for n in notes], [n.get("hints") for n in notes] if args.use_hints else None)
        predicted = [{"doc": n["doc"], "start": s.start, "end": s.end, "type": s.type}
                     for n, spans in zip(notes, found) for s in spans]
    seconds = time.perf_counter() - t0
    rows = evaluate(gold, predicted, [str(n["doc"]) for n in notes])
    megabytes = sum(len(n["text"].encode("utf-8")) for n in notes) / 1e6
    print(table(rows))
    if not args.predicted:
        print(f"{megabytes:.3f} MB of text in {seconds:.2f} s: {megabytes / max(seconds, 1e-9):.2f} MB/s on one core")
    if args.report:
        write_json({"gold": str(args.gold), "notes": str(args.notes), "predicted": args.predicted or "deid_core.text",
                    "hints": bool(args.use_hints), "megabytes": round(megabytes, 4), "seconds": round(seconds, 3),
                    "types": rows}, args.report)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """``deid text-evaluate``."""
    e = sub.add_parser("text-evaluate", help="score the free-text detector against standoff gold spans")
    e.add_argument("--gold", required=True, help="JSON lines of {doc, start, end, type}")
    e.add_argument("--notes", required=True, help="JSON lines of {doc, text} (and hints, read with --use-hints)")
    e.add_argument("--predicted", help="JSON lines of {doc, start, end, type} to score instead of running the detector")
    e.add_argument("--use-hints", action="store_true", help="pass each note's hints to the detector")
    e.add_argument("--report", help="JSON: the figures per type and group")
    e.set_defaults(run=cmd_text_evaluate)
