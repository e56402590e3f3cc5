"""The page of ``deid text-evaluate --html`` for an ethics board: what was evaluated, the figures per PHI type
against the minima of El Emam & Arbuckle (ch. 8, "Evaluation Is Key"), the verdict, the ids of the leaked
documents, and what such figures can and cannot say (docs/text_evaluation.md). Drawn from the report dict
alone, with the report renderer's layout (deid_core.report): no note text and no PHI value reaches it."""
from __future__ import annotations

from typing import Any, Mapping

from ..report import Document, Mark, Paragraph, Section, Strong, Table, render, verdict_section
from ..report.five_steps import BOOK
from .spans import GROUPS
from .standard import DIRECT, FIGURES, INDIRECT

#: The rows of the second pass's table: each group, then all types.
GROUP_ROWS = (*dict.fromkeys(GROUPS.values()), "ALL")

SOURCES = (f"{BOOK}, ch. 8, “Free-Form Text”: “Evaluation Is Key”, “Standards for Recall, and a Risk-Based "
           "Approach”, “Standards for Precision”, Table 8-1",
           f"{BOOK}, ch. 8, “Risk Assessment”: the minimum recall under attacks T1–T3",
           f"{BOOK}, ch. 2, “Risk Thresholds”, Table 2-1")


def _evaluated(report: Mapping[str, Any]) -> Section:
    gold = report["gold_spans"]
    rows = [[Strong("gold"), f"{report['gold']} ({report['layout']})"],
            [Strong("notes"), report["notes"] or "the gold's own text"],
            [Strong("documents"), report["documents"]],
            [Strong("gold spans scored"), gold],
            [Strong("spans scored"), report["predicted"] if report["predicted"] != "deid_core.text"
             else "the deid_core.text detector" + (", with each note's hints" if report["hints"] else "")]]
    for kind, n in report["unscored"].items():
        rows.append([Strong(f"not scored: {kind}"), f"{n:,} gold spans, counted only: not among the identifiers a "
                     "text anonymizer must find (El Emam & Arbuckle, ch. 8, Table 8-1)"])
    return Section("What was evaluated", [Table([], rows, row_header=True)])


def _standard(s: Mapping[str, Any]) -> Section:
    d, i = s["direct"], s["indirect"]
    attacks = [[t, pr, s["attack_min_recall"][t], "sets the minimum" if t == s["attack"] else ""]
               for t, pr in s["attacks"].items()]
    return Section("The standard", [
        Paragraph("Each PHI type is judged on its own, all or nothing per document: a document whose spans of a "
                  "type are not all found leaks that type, whatever share of them was found. Precision is "
                  "micro-averaged over the spans the detector gave the type."),
        Table(["identifiers", "types", "all-or-nothing recall at least", "precision at least"],
              [["direct", ", ".join(DIRECT), d["recall"], d["precision"]],
               ["indirect", ", ".join(INDIRECT), i["recall"], i["precision"]]], numeric=(2, 3)),
        Paragraph(f"Direct identifiers need a recall close to perfect (0.95). An indirect identifier re-identifies "
                  f"only with a second one missed in the same document, so its recall r must keep "
                  f"Pr(T) × (1 − r)² at or under the threshold {s['threshold']:g}: r ≥ 1 − √(threshold / Pr(T)), "
                  f"under the most likely of the attacks that apply to a {s['release_type']} release:"),
        Table(["attack", "Pr(T)", "minimum recall", ""], attacks, numeric=(1, 2))])


def _per_type(report: Mapping[str, Any]) -> Section:
    s, rows = report["standard"], report["types"]
    judged = [[Strong(name), t["kind"], rows[name]["gold"], rows[name]["precision"], t["min_precision"],
               t["all_or_nothing_recall"], t["min_recall"], rows[name]["recall"], rows[name]["f2"], Mark(t["meets"]),
               ", ".join(FIGURES[f][0] for f in t["failed"]) or "—"]
              for name, t in s["types"].items()]
    others = [[Strong(name), r["gold"], r["documents"], r["predicted"], r["precision"], r["recall"],
               r["all_or_nothing_recall"], r["f2"]] for name, r in rows.items() if name not in s["types"]]
    return Section("Per type", [
        Table(["type", "identifier", "gold spans", "precision", "at least", "all-or-nothing recall", "at least",
               "recall", "F2", "standard", "short of it"], judged, numeric=(2, 3, 4, 5, 6, 7, 8)),
        Paragraph("Recall counts a gold span found when any predicted span overlaps it, whatever its type: what is "
                  "masked is masked. F2 weighs recall four times precision."),
        Section("Groups, types without gold spans, and all types", [
            Paragraph("Not judged: the standard is per type. A type the detector gave with no gold span of it "
                      "has only a precision."),
            Table(["row", "gold spans", "documents", "predicted", "precision", "recall", "all-or-nothing recall",
                   "F2"], others, numeric=(1, 2, 3, 4, 5, 6, 7))])])


def _leaked(s: Mapping[str, Any], documents: int) -> Section:
    leaked = [[Strong(name), len(t["leaked"]), ", ".join(t["leaked"])] for name, t in s["types"].items() if t["leaked"]]
    count = f"{len(s['leaked_documents']):,} of {documents:,} documents leak at least one PHI type"
    blocks: list[Any] = [Paragraph(f"{count}: a gold span of it was not found. Their ids, per type (ids only: no text "
                                   "of a note and no PHI value is on this page)." if leaked else
                                   f"{count}: every gold span of every type was found.")]
    if leaked:
        blocks.append(Table(["type", "documents", "ids"], leaked, numeric=(1,)))
    return Section("Leaked documents", blocks)


def _second_pass(report: Mapping[str, Any]) -> list[Section]:
    """With a second pass (docs/text.md, "A second pass"): each group's figures without it and with it (the table
    and verdict above are with it)."""
    before = report.get("types_before_second_pass")
    if not before:
        return []
    after = report["types"]
    figure = lambda row, key: "—" if row.get(key) is None else f"{row[key]:.3f}"  # noqa: E731
    rows = [[Strong(group), *(f"{figure(before[group], key)} → {figure(after.get(group, {}), key)}"
                              for key in ("precision", "recall", "all_or_nothing_recall"))]
            for group in GROUP_ROWS if group in before]
    return [Section("The second pass", [
        Paragraph(f"The detector's spans went through the second pass {report['second_pass']}, which may only "
                  "reject spans; the figures and the verdict above are with it. Without it → with it:"),
        Table(["group", "precision", "recall", "all-or-nothing recall"], rows)])]


def _caveat() -> Section:
    return Section("What these figures say", [
        Paragraph("These figures hold for these documents and this gold only. Figures measured on a generated "
                  "corpus (such as the development notes shipped with the tool) say nothing about real notes: "
                  "real notes carry typos, shorthand and names no list holds.", style="flag"),
        Paragraph("To judge a release of real notes, annotate a sample of those notes (or of notes like them: the "
                  "same kinds of document, from the same facilities), evaluate on it, and release only when the "
                  "standard is met (El Emam & Arbuckle, ch. 8, “Results”).")])


def evaluation_document(report: Mapping[str, Any]) -> Document:
    """The page of a ``deid text-evaluate`` report dict."""
    s, documents = report["standard"], report["documents"]
    verdict = verdict_section(s["meets"], s["verdict"], threshold=s["threshold"], release_type=s["release_type"],
                              details=[Paragraph(f"{len(s['leaked_documents']):,} of {documents:,} documents leak "
                                                 "at least one PHI type" + (" (their ids below)."
                                                                            if s["leaked_documents"] else "."))])
    return Document("Text anonymization: evaluation against a gold standard",
                    f"Gold: {report['gold']} — {documents:,} documents, {report['gold_spans']:,} gold spans.",
                    [verdict, _evaluated(report), _standard(s), _per_type(report), *_second_pass(report),
                     _leaked(s, documents), _caveat()],
                    SOURCES)


def evaluation_page(report: Mapping[str, Any]) -> str:
    """A self-contained page for a ``deid text-evaluate`` report."""
    return render(evaluation_document(report))
