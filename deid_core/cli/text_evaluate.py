"""``deid text-evaluate``: score the free-text detector (or another tool's spans) against gold spans, the
book's way, and judge them against its standard (docs/text_evaluation.md; docs/text.md, "Evaluating")."""
from __future__ import annotations

import argparse
import time

from ..errors import DeidInputError, ParameterError
from ..text.standard import PR_ATTEMPT
from .options import PROBABILITY, guard_outputs, summary_line


def cmd_text_evaluate(args: argparse.Namespace) -> int:
    from ..io import write_json, write_text
    from ..text import detect, detect_many
    from ..text.evaluate import score, table
    from ..text.evaluation_page import evaluation_page
    from ..text.gold import read_gold, read_spans
    from ..text.second_pass import SecondPass
    from ..text.standard import judge, release, verdict_text

    guard_outputs([args.gold, args.notes, args.predicted], [args.report, args.html])
    if args.second_pass and args.predicted:
        raise DeidInputError("--second-pass rejects the detector's spans: it cannot be given with --predicted")
    second_pass = SecondPass(args.second_pass) if args.second_pass else None
    spec = release(args.threshold, "public" if args.public else "non-public", args.pr_attempt, args.prevalence)
    gold = read_gold(args.gold, args.notes)
    if args.use_hints and gold.layout != "jsonl":
        raise ParameterError("{use_hints} needs notes with hints (JSON lines): i2b2 XML gold has none", "use_hints")
    notes = gold.notes
    detect("Dr. Smith seen 2/03.")  # loads the lists once, before the clock starts (docs/text.md, "Measured")
    t0 = time.perf_counter()
    before_second_pass = None
    if args.predicted:
        predicted = read_spans(args.predicted, {n["doc"]: n["text"] for n in notes})
    else:
        texts = [n["text"] for n in notes]
        found = detect_many(texts, [n.get("hints") for n in notes] if args.use_hints else None)
        if second_pass is not None:  # scored with and without it: what it rejects is what it costs
            before_second_pass = score(gold.spans, _spans_of(notes, found), [n["doc"] for n in notes])[0]
            found, _ = second_pass.filter(texts, found)
        predicted = _spans_of(notes, found)
    seconds = time.perf_counter() - t0
    rows, leaked = score(gold.spans, predicted, [n["doc"] for n in notes])
    judged = judge(rows, leaked, spec)
    subject = f"The tool whose spans are in {args.predicted}" if args.predicted else "The detector"
    judged["verdict"] = verdict_text(judged, len(notes), subject)
    megabytes = sum(len(n["text"].encode("utf-8")) for n in notes) / 1e6
    report = {"gold": str(args.gold), "layout": gold.layout, "notes": args.notes and str(args.notes),
              "predicted": args.predicted or "deid_core.text", "hints": bool(args.use_hints),
              "documents": len(notes), "gold_spans": len(gold.spans), "unscored": gold.unscored,
              "megabytes": round(megabytes, 4), "seconds": round(seconds, 3), "types": rows, "standard": judged}
    if before_second_pass is not None:
        report["second_pass"] = args.second_pass
        report["types_before_second_pass"] = before_second_pass
    html = evaluation_page(report) if args.html else None
    print(table(rows))
    if not args.predicted:
        print(f"{megabytes:.3f} MB of text in {seconds:.2f} s: {megabytes / max(seconds, 1e-9):.2f} MB/s on one core")
    if before_second_pass is not None:
        b, a = before_second_pass["ALL"], rows["ALL"]
        print(f"second pass {args.second_pass}: all types precision {b['precision']:.3f} -> {a['precision']:.3f}, "
              f"recall {b['recall']:.3f} -> {a['recall']:.3f}, all-or-nothing recall "
              f"{b['all_or_nothing_recall']:.3f} -> {a['all_or_nothing_recall']:.3f} (the table and verdict: with it)")
    print(f"verdict: {judged['verdict']}")
    if args.report:
        write_json(report, args.report)
    if html is not None:
        write_text(html, args.html)
    summary_line("text-evaluate", [args.report, args.html],
                 f"{len(notes):,} documents, {len(judged['leaked_documents']):,} leaked (a gold span missed); "
                 f"{'meets' if judged['meets'] else 'does NOT meet'} the standard")
    return 0


def _spans_of(notes: list[dict], found: list) -> list[dict]:
    return [{"doc": n["doc"], "start": s.start, "end": s.end, "type": s.type} for n, spans in zip(notes, found)
            for s in spans]


#: The release's probabilities, named as ``[release]`` of a spec names them for ``deid assess``: option ->
#: (default, help).
RELEASE_OPTIONS = {
    "--threshold": (0.05, "risk threshold: indirect identifiers need an all-or-nothing recall of "
                          "1 - sqrt(threshold / Pr(attack))"),
    "--pr-attempt": (PR_ATTEMPT, "Pr(attempt) of attack T1, a deliberate attempt by the recipient (as [release] "
                                 "pr_attempt)"),
    "--prevalence": (None, "share of the population in the data, for attack T2, an acquaintance (as [release] "
                           "prevalence; T2 left out without it)")}


def register(sub: argparse._SubParsersAction) -> None:
    """``deid text-evaluate``."""
    e = sub.add_parser("text-evaluate", help="score the free-text detector against gold spans and judge it against "
                                             "the book's standard")
    e.add_argument("--gold", required=True,
                   help="JSON lines of {doc, start, end, type}; or an i2b2 XML file (2014: standoff TAGS over TEXT; "
                        "2006: inline PHI tags in RECORDs), or a folder of them, the notes then read from it")
    e.add_argument("--notes", help="JSON lines of {doc, text} (and hints, read with --use-hints); required with "
                                   "JSON-lines gold, refused with XML gold")
    e.add_argument("--predicted", help="JSON lines of {doc, start, end, type} to score instead of running the detector")
    e.add_argument("--use-hints", action="store_true", help="pass each note's hints to the detector")
    e.add_argument("--second-pass", metavar="MODULE:FUNCTION",
                   help="score the detector with your second pass (as deid text --second-pass) and without it: the "
                        "table and verdict with it, the figures without it beside them")
    for option, (default, text) in RELEASE_OPTIONS.items():
        e.add_argument(option, type=PROBABILITY, default=default, help=text)
    e.add_argument("--public", action="store_true",
                   help="the notes go to the public ([release] type = \"public\" in a spec): attack T4, Pr 1, sets "
                        "the minimum recall instead of the most likely of T1-T3")
    e.add_argument("--report", help="JSON: the figures per type and group, the minima, each type's verdict and "
                                    "the leaked documents' ids")
    e.add_argument("--html", help="self-contained HTML page for an ethics board (no note text, no PHI value)")
    e.set_defaults(run=cmd_text_evaluate)
