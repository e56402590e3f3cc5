"""Scoring detections against standoff gold spans (``{doc, start, end, type}``): per PHI type and group,
micro precision and recall, F2 (recall weighted 4x: a miss discloses, a false alarm only hides a word), and
all-or-nothing recall per document (El Emam & Arbuckle, ch. 8 "Free-Form Text": a document is protected
only if every identifier in it is found). Any overlap counts as found, whatever type the detector gave it:
what is masked is masked; the precision of a type is that of the spans the detector gave that type."""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Mapping

from .spans import GROUPS


def _by_doc(spans: Iterable[Mapping]) -> dict[str, list[tuple[int, int, str]]]:
    out: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    for s in spans:
        out[str(s["doc"])].append((int(s["start"]), int(s["end"]), str(s["type"])))
    return out


def _hit(span: tuple[int, int, str], others: list[tuple[int, int, str]]) -> bool:
    return any(span[0] < e and s < span[1] for s, e, _ in others)


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def f_beta(precision: float | None, recall: float | None, beta: float = 2.0) -> float | None:
    if precision is None or recall is None or precision + recall == 0:
        return None if precision is None or recall is None else 0.0
    return round((1 + beta ** 2) * precision * recall / (beta ** 2 * precision + recall), 4)


def evaluate(gold: Iterable[Mapping], predicted: Iterable[Mapping], docs: Iterable[str] | None = None) -> dict:
    """Per type, per group and ``ALL``: gold and predicted counts, precision, recall, F2, all-or-nothing
    document recall (documents whose every gold span of the type is found / documents with one), rounded to
    4 decimals, and the counts they are ratios of (gold spans found, predictions true, documents found)."""
    return score(gold, predicted, docs)[0]


def score(gold: Iterable[Mapping], predicted: Iterable[Mapping],
          docs: Iterable[str] | None = None) -> tuple[dict, dict[str, list[str]]]:
    """:func:`evaluate`'s rows, and per type, group and ``ALL`` the ids of the documents where a gold span of it
    was missed (the leaked documents: El Emam & Arbuckle, ch. 8, "Evaluation Is Key"), sorted."""
    g, p = _by_doc(gold), _by_doc(predicted)
    keys: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    leaked: dict[str, set[str]] = defaultdict(set)  # a type and its group may share a name (DATE)
    for doc in set(g) | set(p) | set(docs or ()):
        gs, ps = g.get(doc, []), p.get(doc, [])
        missed_in_doc: dict[str, bool] = {}
        for span in gs:
            found = _hit(span, ps)
            for key in (span[2], "group:" + GROUPS.get(span[2], span[2]), "ALL"):
                keys[key]["gold"] += 1
                keys[key]["found"] += found
                missed_in_doc[key] = missed_in_doc.get(key, False) or not found
        for key, missed in missed_in_doc.items():
            keys[key]["docs"] += 1
            keys[key]["docs_found"] += not missed
            if missed:
                leaked[key.removeprefix("group:")].add(doc)
        for span in ps:
            true = _hit(span, gs)
            for key in (span[2], "group:" + GROUPS.get(span[2], span[2]), "ALL"):
                keys[key]["predicted"] += 1
                keys[key]["true"] += true
    rows = {}
    for key in sorted(keys, key=lambda k: (k == "ALL", k.startswith("group:"), k)):
        c = keys[key]
        precision, recall = _ratio(c["true"], c["predicted"]), _ratio(c["found"], c["gold"])
        rows[key.removeprefix("group:")] = {
            "gold": c["gold"], "predicted": c["predicted"], "precision": precision, "recall": recall,
            "all_or_nothing_recall": _ratio(c["docs_found"], c["docs"]), "documents": c["docs"],
            "f2": f_beta(precision, recall), "found": c["found"], "true": c["true"], "documents_found": c["docs_found"]}
    return rows, {key: sorted(leaked[key]) for key in rows if leaked.get(key)}


def table(rows: Mapping[str, Mapping]) -> str:
    """The rows as an aligned text table (``-`` where a figure is undefined)."""
    head = f"{'type':<12} {'gold':>6} {'found':>6} {'precision':>9} {'recall':>7} {'all-or-nothing':>14} {'F2':>6}"
    lines = [head]
    for key, r in rows.items():
        fmt = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
        lines.append(f"{key:<12} {r['gold']:>6} {r['predicted']:>6} {fmt(r['precision']):>9} {fmt(r['recall']):>7} "
                     f"{fmt(r['all_or_nothing_recall']):>14} {fmt(r['f2']):>6}")
    return "\n".join(lines)
