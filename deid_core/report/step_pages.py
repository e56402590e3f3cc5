"""The pages of the steps that change a table on their way to a release — ``deid truncate``, ``deid codes``,
``deid subsample`` and ``deid geo`` — built from their ``--report`` dicts: the verdict first, what
happened to each column and to the rows, the loss, before/after plots and the command that does the same
again. None of them is a release decision on its own; each page says which assessment makes it."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .document import Block, Document, Figure, Paragraph, Preformatted, Section, Table
from .figures import bars_before_after, distribution_before_after, probes_plot
from .five_steps import BOOK, LONGITUDINAL_SOURCES
from .operations import operation_command, operation_text
from .render import fmt, pct
from .verdict import meets_text, verdict_section

ASSESS_NEXT = ("This step alone does not decide a release: assess its output with deid assess --prior-report "
               "REPORT.json, whose page shows this step among what was done.")


def _columns_table(rows: Sequence[Sequence[Any]]) -> Table:
    return Table(["column", "what happened"], rows)


def _again(commands: Sequence[str], note: str = "") -> Section:
    blocks: list[Block] = [Paragraph("The command that does the same on the next batch of the same kind"
                                     + (f" ({note})" if note else "") + ":"),
                           Preformatted("\n".join(commands), style="cmd")]
    return Section("To do the same again", blocks)


def truncate_document(report: Mapping[str, Any], columns: Sequence[str], *, release_type: str = "",
                      threshold: float | None = None) -> Document:
    """``deid truncate --html``: claims removed from the long tail of claims per person (El Emam & Arbuckle,
    ch. 5, "Long Tails"); ``threshold`` is the spec's when k came from it."""
    k, unmet = report.get("k"), list(report.get("unmet_bins") or [])
    what, result = operation_text(report)
    if report.get("method") == "percentile":
        ok: bool | None = None
        text = (f"Claims per person top-coded at the {fmt(report.get('percentile'))}th percentile, not judged "
                f"against a threshold on its own: {result}.")
    else:
        ok = not unmet
        text = (f"The claims per person meet k = {k}: every bin of {report.get('width')} claims per person holds at "
                f"least {k} persons; {result}." if ok else
                f"The claims per person do NOT meet k = {k}: bin {', '.join(unmet)} still holds fewer than {k} "
                f"persons (the lowest bin cannot move down); {result}.")
    removed = report.get("removed_claims", 0)
    rows = [[c, f"{removed:,} of {report.get('claims', 0):,} rows removed with the claims; the values of the rows "
                "kept are unchanged"] for c in columns]
    bins = sorted(set(report.get("bins_before") or {}) | set(report.get("bins_after") or {}),
                  key=lambda b: int(b.strip("[]").split("-")[0]))
    plot = bars_before_after(bins, [report["bins_before"].get(b, 0) for b in bins],
                             [report["bins_after"].get(b, 0) for b in bins], xlabel="claims per person (bin)",
                             ylabel="persons", k=k if report.get("method") != "percentile" else None)
    sections = [
        verdict_section(ok, text, threshold=threshold, release_type=release_type, details=[Paragraph(ASSESS_NEXT)]),
        Section("What was done", [Paragraph(what + "."), _columns_table(rows)]),
        Section("Loss", [Table(["measure", "value"], [
            ["claims (rows) removed", f"{removed:,} of {report.get('claims', 0):,} ({pct(report.get('removed_claims_proportion'))})"],
            ["persons who lost claims", f"{report.get('removed_persons', 0):,} of {report.get('persons', 0):,}"],
            ["persons removed", "none: every person keeps at least one claim"]])]),
        Section("Persons by claims per person, before and after", [
            Figure(plot, "Persons per bin of claims per person, before (grey) and after (blue) the truncation")]),
        _again([operation_command(report, "NEXT.csv", "TRUNCATED.csv")]),
    ]
    return Document("Truncation of the long tail of claims", f"deid truncate — input {report.get('input', '')}",
                    sections, [f"{BOOK}, ch. 5, “Long Tails”", LONGITUDINAL_SOURCES["hhp"]])


def codes_document(report: Mapping[str, Any], columns: Sequence[str], persons_before: pd.Series,
                   persons_after: pd.Series, *, level1: Sequence[str] = (), release_type: str = "",
                   threshold: float | None = None) -> Document:
    """``deid codes --html``: codes suppressed or shuffled within their class (El Emam & Arbuckle, ch. 10,
    "Medical Codes"); ``persons_before``/``_after`` count the persons holding each code; ``level1`` (the
    spec's) tells the classes from the nesting columns."""
    code, events = report.get("code"), report.get("events", 0)
    what, result = operation_text(report)
    suppress = report.get("operation") == "suppress"
    changed = report.get("suppressed_rows", 0) if suppress else report.get("rows_changed", 0)
    share = changed / events if events else 0.0
    details: list[Block] = [Paragraph(ASSESS_NEXT)]
    if suppress and events and changed >= events:
        ok, text = False, (f"No code of {code} meets k = {report.get('k')}: every code was suppressed ({result}), "
                           "nothing of the column is left to release or analyse.")
    elif suppress:
        ok = None if share > 0.5 else True
        text = (f"The codes of {code} left in the table meet k = {report.get('k')}: every code group left is held "
                f"by at least {report.get('k')} persons in its class; {result}.")
        if ok is None:
            text = (f"Most codes of {code} were suppressed to meet k = {report.get('k')}, not judged as a release on "
                    f"its own: {result}.")
    if suppress:
        if share > 0.5:
            details.insert(0, Paragraph(f"Flag: {pct(share)} of the codes in {code} were suppressed: the column keeps "
                                        "little to analyse. A lower k or a coarser code group (--group-level) "
                                        "suppresses fewer.", style="flag"))
    else:
        ok, text = None, f"Codes shuffled, not judged against a threshold on their own: {result}."
    connected = list(report.get("connected") or [])
    rows = []
    for c in columns:
        if c == code:
            rows.append([c, f"{changed:,} of {events:,} codes {'suppressed' if suppress else 'changed by the shuffle'} "
                            f"({pct(share)})"])
        elif c in connected:
            rows.append([c, f"{'suppressed' if suppress else 'moved'} together with {code} on the same rows"])
        else:
            rows.append([c, "unchanged"])
    order = persons_before.sort_values(ascending=False).index[:30]
    plot = bars_before_after([str(v) for v in order], persons_before.reindex(order).fillna(0).tolist(),
                             persons_after.reindex(order).fillna(0).tolist(), xlabel=f"{code} (the codes most persons "
                             "hold, at most 30)", ylabel="persons holding the code",
                             k=report.get("k") if suppress else None)
    sections = [
        verdict_section(ok, text, threshold=threshold, release_type=release_type, details=details),
        Section("What was done", [Paragraph(what + f", classes of {', '.join(report.get('classes') or []) or 'none'}."),
                                  _columns_table(rows)]),
        Section("Loss", [Table(["measure", "value"], [
            [f"codes {'suppressed' if suppress else 'changed'}", f"{changed:,} of {events:,} ({pct(share)})"],
            ["persons concerned", fmt(report.get("suppressed_persons")) if suppress else "—"],
            ["distinct codes before → after", f"{len(persons_before):,} → {len(persons_after):,}"]])]),
        Section("Persons per code, before and after", [
            Figure(plot, f"Persons holding each code of {code}, before (grey) and after (blue)")]),
        _again([operation_command(report, "NEXT.csv", "CODED.csv", level1)]),
    ]
    return Document(f"Medical codes {'suppressed' if suppress else 'shuffled'}", f"deid codes — input "
                    f"{report.get('input', '')}", sections, [f"{BOOK}, ch. 10, “Medical Codes”"])


MEASURES = {"journalist.max": "journalist risk, maximum", "journalist.average": "journalist risk, average",
            "journalist.average_over_population": "journalist risk, average"}


def subsample_document(report: Mapping[str, Any], columns: Sequence[str], *, release_type: str = "",
                       release_threshold: float | None = None) -> Document:
    """``deid subsample --html``: a random sample and its journalist risk with the full data as the
    population (El Emam & Arbuckle, ch. 2, "Measuring Risk Under Plausible Attacks")."""
    unit, thr = report.get("units", "records"), report["threshold"]
    measure = MEASURES.get(str(report.get("measure")), str(report.get("measure")))
    fraction = report.get("fraction")
    search = report.get("search") or {}
    if fraction is None:
        ok, text = False, (f"No fraction down to {fmt(search.get('step'))} meets the threshold {fmt(thr)} "
                           f"({measure}): nothing was sampled.")
    else:
        ok = bool(report.get("meets_threshold"))
        text = meets_text(ok, "The sample's records", thr, f"{measure} {fmt(report.get('risk'))} with the full "
                          f"data as the population ({fmt(report.get('sample_units'))} of "
                          f"{fmt(report.get('population_units'))} {unit}, fraction {fmt(fraction)})")
    details: list[Block] = [Paragraph(f"The threshold {fmt(thr)} is on Pr(re-id | attack): the spec's [release] "
                                      f"threshold {fmt(release_threshold)} divided by the largest chance of an attack.")
                            ] if release_threshold is not None and release_threshold != thr else []
    blocks: list[Block] = [Paragraph(f"A random sample of {fmt(report.get('sample_units'))} of "
                                     f"{fmt(report.get('population_units'))} {unit} (fraction {fmt(fraction)}, "
                                     f"{report.get('rounding')}; seed {report.get('seed')}) is drawn; every column is "
                                     "kept as it is and the rows keep their input order."
                                     if fraction is not None else "No sample was drawn."),
                           _columns_table([[c, "unchanged (only rows are left out)"] for c in columns])]
    sample, full = report.get("sample") or {}, report.get("full") or {}
    risk_rows = [["records", full.get("records"), sample.get("records")],
                 ["equivalence classes", full.get("equivalence_classes"), sample.get("equivalence_classes")],
                 ["smallest equivalence class (k)", full.get("k_min"), sample.get("k_min")],
                 ["prosecutor risk, maximum", (full.get("prosecutor") or {}).get("max"),
                  (sample.get("prosecutor") or {}).get("max")],
                 ["prosecutor risk, average", (full.get("prosecutor") or {}).get("average"),
                  (sample.get("prosecutor") or {}).get("average")],
                 [measure + " (the population: the full data)", None, report.get("risk")]]
    sections = [verdict_section(ok, text, threshold=release_threshold, release_type=release_type, details=details),
                Section("What was done", blocks),
                Section("Risk and loss", [Table(["measure", "full data", "sample"], risk_rows, numeric=(1, 2)),
                                          Paragraph(f"Loss: {pct(1 - (report.get('sample_units') or 0) / report['population_units'])} "
                                                    f"of the {unit} are left out of the sample." if fraction is not None
                                                    else "Loss: everything (no sample).")])]
    if search.get("probes"):
        sections.append(Section("Finding the fraction", [
            Paragraph(f"The largest fraction on a grid of {fmt(search.get('step'))} whose {fmt(search.get('quantile'))} "
                      f"quantile of the risk over {fmt(search.get('draws'))} draws meets the threshold."),
            Table(["fraction", unit, "median risk", f"{fmt(search.get('quantile'))} quantile", "draws meeting", "meets"],
                  [[p["fraction"], p["units"], p["median"], p["quantile_risk"], pct(p["share_meeting"]), p["meets"]]
                   for p in sorted(search["probes"], key=lambda p: p["fraction"])], numeric=(0, 1, 2, 3, 4)),
            Figure(probes_plot(search["probes"], thr, quantile=float(search.get("quantile", 0.95)), unit=unit),
                   "Journalist risk of the samples at each probed fraction against the threshold")]))
    if fraction is not None:
        sections.append(_again([f"deid subsample --input NEXT.csv --spec SPEC.toml --fraction {fmt(fraction)} --seed "
                                f"{report.get('seed')} --out SAMPLE.csv --report SAMPLE.json"],
                               "a new draw: measure its risk again"))
    return Document("Random subsample", f"deid subsample — input {report.get('input', '')}", sections,
                    [f"{BOOK}, ch. 2, “Measuring Risk Under Plausible Attacks”"])


def geo_document(report: Mapping[str, Any], area_people: np.ndarray, cluster_people: np.ndarray,
                 command: str) -> Document:
    """``deid geo --html``: small areas clustered until each cluster holds k people, the area column released
    as a random area of its cluster or the cluster id (El Emam & Arbuckle, ch. 9, "Clustering Neighbors")."""
    cl, rel = report["clustering"], report["release"]
    ok = bool(report["meets_threshold"])
    text = meets_text(ok, f"The released {report['column']} column's clusters", report["threshold"],
                      f"maximum risk {fmt(cl['max_risk'])}, every cluster holds at least {fmt(cl['population']['min'])} "
                      f"people (k = {fmt(report['k'])})")
    details: list[Block] = [Paragraph("This page judges the area column only: the other columns are unchanged; assess "
                                      "or apply a policy to them before any release.")]
    rows = [[c, what] for c, what in report["columns"].items()]
    shift = rel.get("shift_km") or {}
    sections = [
        verdict_section(ok, text, threshold=report["threshold"], release_type="maximum", details=details),
        Section("What was done", [
            Paragraph(f"{fmt(report['areas_in_table'])} areas ({fmt(report['population'])} people) were clustered "
                      f"with their neighbours into {fmt(cl['clusters'])} clusters of at least k = {fmt(report['k'])} "
                      f"people ({fmt(cl['areas_per_cluster']['single_area_clusters'])} areas large enough on their "
                      "own)."), _columns_table(rows)]),
        Section("Loss", [Table(["measure", "value"], [
            ["records whose area changed", f"{fmt(rel.get('records_changed'))} of {fmt(rel.get('records'))}"],
            ["areas per cluster (median, largest)", f"{fmt(cl['areas_per_cluster']['median'])}, "
                                                    f"{fmt(cl['areas_per_cluster']['max'])}"],
            ["distance a record's area moved, km (median, 95th percentile, largest)",
             f"{fmt(shift.get('median'))}, {fmt(shift.get('p95'))}, {fmt(shift.get('max'))}"],
            ["chance of guessing a record's true area (average, largest)",
             f"{pct((rel.get('area_guess_probability') or {}).get('mean'))}, "
             f"{pct((rel.get('area_guess_probability') or {}).get('max'))}"]])]),
        Section("People per area and per cluster", [Figure(distribution_before_after(
            area_people, cluster_people, xlabel="people living in the area (grey) or the cluster (blue)",
            ylabel="areas or clusters", k=report["k"], labels=("areas (before)", "clusters (after)")),
            "People per area before and per cluster after the clustering; dashed: the k every cluster needs")]),
        _again([command]),
    ]
    return Document("Small areas clustered", f"deid geo — input {report.get('input', '')}", sections,
                    [f"{BOOK}, ch. 9, “Clustering Neighbors”"])


__all__ = ["codes_document", "geo_document", "subsample_document", "truncate_document"]
