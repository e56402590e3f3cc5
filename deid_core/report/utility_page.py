"""The page of ``deid utility --html``: the same analyses on the original and the released data
(:mod:`deid_core.metric.utility`; El Emam & Arbuckle, ch. 13, "Workload-Aware De-Identification")."""
from __future__ import annotations

from typing import Any, Mapping

from .document import Document, Paragraph, Section, Table
from .five_steps import BOOK
from .render import fmt, pct, render
from .verdict import verdict_section


def section_utility(u: Mapping[str, Any]) -> Section:
    """Original vs released under the analyses of :mod:`deid_core.metric.utility`."""
    rec = u.get("records", {})
    blocks: list[Any] = [
        Paragraph(f"Records: {fmt(rec.get('original'))} original, {fmt(rec.get('released'))} released. Each "
                  "statistic is computed on each table on its own; the mean squared error (MSE) sums up how far "
                  "the released estimates are from the original ones.")]
    mom = u.get("moments") or {}
    if mom:
        blocks.append(Section("Means and standard deviations", [
            Table(["column", "mean original", "mean released", "SD original", "SD released"],
                  [[c, v["mean_before"], v["mean_after"], v["sd_before"], v["sd_after"]]
                   for c, v in mom["columns"].items()], numeric=(1, 2, 3, 4)),
            Paragraph(f"MSE of the means: {fmt(mom.get('mse_means'))}; of the SDs: {fmt(mom.get('mse_sds'))}.")]))
    cov = u.get("covariance") or {}
    if cov:
        cols = list(cov["before"])
        rows = [[f"{a} × {b}", cov["before"][a][b], cov["after"][a][b]] for i, a in enumerate(cols) for b in cols[i:]]
        blocks.append(Section("Covariance matrix", [
            Table(["pair", "covariance original", "covariance released"], rows, numeric=(1, 2)),
            Paragraph(f"MSE of the covariance entries: {fmt(cov.get('mse'))}.")]))
    for r in u.get("regressions") or []:
        b, a = r["before"], r["after"]
        inside = r["after_within_before_ci95"]
        rows = [[k, b["coefficients"][k], b["std_errors"][k], a["coefficients"][k], a["std_errors"][k],
                 "—" if inside[k] is None else ("yes" if inside[k] else "no")] for k in b["coefficients"]]
        blocks.append(Section(f"Regression {r['formula']}", [
            Table(["term", "coefficient original", "SE", "coefficient released", "SE",
                   "released inside the original 95 % CI"], rows, numeric=(1, 2, 3, 4)),
            Paragraph(f"Records used: {fmt(b['n'])} original, {fmt(a['n'])} released; R² {fmt(b['r2'])} → "
                      f"{fmt(a['r2'])}; MSE of the coefficients {fmt(r.get('mse'))}.")]))
    tabs = u.get("crosstabs") or []
    if tabs:
        paired = any(t.get("tvd_released_categories") is not None for t in tabs)
        no_v = any(t["cramers_v_before"] is None or t["cramers_v_after"] is None for t in tabs)
        blocks.append(Section("Cross-tabulations", [
            Table(["columns", "distance on the released categories", "distance on the original categories",
                   "Cramér's V original", "Cramér's V released", "cells original → released"],
                  [[" × ".join(t["columns"]), t.get("tvd_released_categories"), t["tvd"], t["cramers_v_before"],
                    t["cramers_v_after"], f"{fmt(t['cells_before'])} → {fmt(t['cells_after'])}"] for t in tabs],
                  numeric=(1, 2, 3, 4)),
            Paragraph("Total variation distance between the two cross-tabulations: 0 = the same table, 1 = no cell in "
                      "common. On the original categories a generalized value is a different cell, so a generalized "
                      "column gives 1 whatever else happened; "
                      + ("on the released categories each original value is first recoded to the category its rows "
                         "became, so the distance counts what suppression and other changes did to the table."
                         if paired else "the distance on the released categories needs the two tables' rows to pair "
                         "up (the same number of records, in the same order), which they do not here (—).")),
            Paragraph("Cramér's V measures the strength of the association (0 none, 1 complete), which a recoding of "
                      "the categories keeps."
                      + (" — : not defined, because a column of that table has fewer than two categories left (e.g. "
                         "every value generalized to *, or suppressed) or no record has both values."
                         if no_v else ""))]))
    cc = u.get("complete_cases") or {}
    if cc:
        blocks.append(Section("Complete case analysis", [
            Table(["", "original", "released"],
                  [["records with a missing or suppressed cell (lost by complete case analysis)",
                    pct(cc["lost_before"]), pct(cc["lost_after"])],
                   ["average share of missing cells per column (p)", pct(cc["p_before"]), pct(cc["p_after"])],
                   [f"expected loss 1 − (1 − p)^m, m = {cc['m']}", pct(cc["expected_lost_before"]),
                    pct(cc["expected_lost_after"])]], numeric=(1, 2)),
            Paragraph("The expected loss assumes the cells are missing at random; suppression is not random (rare "
                      "values go first), so the observed loss is the one to read.")]))
    return Section("Data utility: the same analyses on the original and the released data", blocks)


def section_verdict(u: Mapping[str, Any]) -> Section:
    """Utility is measured, not judged against a threshold: the page opens with what it found."""
    found = []
    inside = [v for r in u.get("regressions") or [] for v in r["after_within_before_ci95"].values() if v is not None]
    if inside:
        found.append(f"{sum(inside)} of {len(inside)} regression coefficients of the released data lie inside the "
                     "original's 95 % confidence interval")
    dist = [t.get("tvd_released_categories") for t in u.get("crosstabs") or []]
    dist = [d for d in dist if d is not None]
    if dist:
        found.append(f"the cross-tabulations differ by at most {fmt(max(dist))} (total variation, released categories)")
    cc = u.get("complete_cases") or {}
    if cc:
        found.append(f"complete case analysis loses {pct(cc['lost_after'])} of the released records (original: "
                     f"{pct(cc['lost_before'])})")
    mom = (u.get("moments") or {}).get("mse_means")
    if mom is not None:
        found.append(f"the means differ by a mean squared error of {fmt(mom)}")
    text = ("Data utility is measured, not judged against a threshold (the risk verdict is on the page of deid "
            "assess or deid apply): " + ("; ".join(found) if found else "no analysis applied to these columns") + ".")
    return verdict_section(None, text)


def utility_document(result: Mapping[str, Any]) -> Document:
    """The page of a ``deid utility`` result dict."""
    return Document("Data utility report",
                    f"Original: {result.get('original', '')} — released: {result.get('released', '')}.",
                    [section_verdict(result), section_utility(result)],
                    [f"{BOOK}, ch. 13, “Workload-Aware De-Identification”",
                     f"{BOOK}, ch. 2, “The Impact of Missingness”"])


def render_utility_html(result: Mapping[str, Any]) -> str:
    """A self-contained page for a ``deid utility`` result."""
    return render(utility_document(result))
