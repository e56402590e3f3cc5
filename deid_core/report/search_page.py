"""The page of ``deid search --html``, for every method: the verdict (does the best policy meet the
threshold), the search in words, the policies found as a table and plotted as risk against information
loss, and the best policy as a readable table with the command that re-applies it."""
from __future__ import annotations

from typing import Any, Mapping

from .document import Block, Document, Figure, Paragraph, Section, Table
from .figures import search_plot
from .policy_table import reapply_blocks
from .render import fmt, pct, render
from .verdict import meets_text, verdict_section

METHODS = {
    "ola": "Optimal Lattice Anonymization, OLA (El Emam et al., JAMIA 2009): the least-loss full-domain "
           "generalization meeting the criterion",
    "lola": "Longitudinal OLA (El Emam et al., J Med Internet Res 2012, the Heritage Health Prize release): OLA over "
            "the per-person and per-event quasi-identifiers, judged by a simulated attack",
    "bps": "Boundary policy search (Benitez, Loukides & Malin 2010): full-subtree recodings at the risk threshold",
    "directed": "Directed search (Benitez, Loukides & Malin 2010): full-subtree recodings at the risk threshold",
    "partition": "Risk-bounded partitioning (Liu et al. 2016): local recoding into subsets of a minimum size",
    "boxes": "k-anonymous interval boxes (Xiang et al. 2014) over the numeric quasi-identifiers",
}

#: Settings and figures of a search result, in words (keys not listed here are not shown).
SETTINGS = [
    ("loss", "information loss measured as"), ("threshold_source", "threshold taken from"),
    ("risk_measure", "risk measured as"), ("iterations", "policies looked for"), ("k", "k (smallest box)"),
    ("min_size", "smallest subset"), ("lattice_size", "policies in the lattice"),
    ("nodes_evaluated", "policies evaluated"), ("minimal_nodes", "least-generalized policies meeting the criterion"),
    ("acceptable_nodes", "policies meeting the criterion"), ("boundary_policies_found", "boundary policies found"),
    ("non_dominated", "policies not beaten on both risk and loss"), ("rejected_by_census", "policies rejected by a "
     "re-count over every person"), ("persons", "persons"), ("claims", "claims (rows)"),
    ("seconds_total", "seconds in all"),
]
LOSSES = {"nue": "non-uniform entropy (El Emam et al. 2009)", "geometric": "ARX's default loss (geometric mean over the quasi-identifiers)"}
CRITERION = [
    ("k", "k: every class holds at least"), ("threshold", "threshold"), ("max_suppressed_records",
     "records that may be suppressed"), ("sampling_fraction", "sampling fraction α"), ("max_suppression",
     "share of persons that may be suppressed (MaxSup)"), ("max_suppressed_persons", "persons that may be suppressed"),
    ("adversary_power", "adversary power (values known per event column)"), ("iterations", "simulated attacks per "
     "policy"), ("evaluation", "evaluation"), ("risk", "risk"), ("knowledge", "the adversary's knowledge"),
]


def _setting(key: str, value: Any) -> Any:
    """A setting's value in words (loss measures by name, r_i as rᵢ)."""
    if key == "loss":
        return LOSSES.get(value, value)
    if key == "threshold_source":
        return {"safe harbor": "the Safe Harbor policy's risk on these data",
                "threshold": "the threshold given"}.get(value, value)
    if isinstance(value, str):
        return value.replace("instance disclosure max r_i", "the largest instance-disclosure risk rᵢ of a subset")
    return value


def _threshold(result: Mapping[str, Any]) -> float | None:
    crit = result.get("criterion") or {}
    if result.get("threshold") is not None:
        return float(result["threshold"])
    if crit.get("threshold") is not None:
        return float(crit["threshold"])
    k = crit.get("k") or result.get("k") or result.get("min_size")
    return 1.0 / float(k) if k else None


def _generalization(p: Mapping[str, Any]) -> str:
    if p.get("levels"):
        return ", ".join(f"{c} {lv}" for c, lv in p["levels"].items())
    if p.get("mapping") is not None:
        recoded = [f"{c}: {len(m):,} values recoded" for c, m in p["mapping"].items() if m]
        return "; ".join(recoded) or "nothing recoded"
    if p.get("boxes") is not None:
        return f"{p['boxes']:,} boxes, the smallest of {p.get('min_box_size')} records"
    if p.get("subsets") is not None:
        return f"{len(p['subsets']):,} subsets"
    return "—"


def policies_table(result: Mapping[str, Any], shown: int = 20) -> Table:
    """The policies found, best first: generalization, risk, loss and what was suppressed."""
    pols = list(result.get("policies") or [])[:shown]
    persons = any("suppressed_persons" in p for p in pols)
    header = ["rank", "generalization", "risk", "information loss", "records suppressed"]
    header += ["persons suppressed"] if persons else []
    rows = []
    for i, p in enumerate(pols, start=1):
        row = [i, _generalization(p), p.get("reassessed_risk", p.get("risk")), p.get("information_loss"),
               p.get("suppressed_records")]
        rows.append(row + ([p.get("suppressed_persons")] if persons else []))
    return Table(header, rows, numeric=tuple(i for i in range(len(header)) if i != 1))


def search_document(result: Mapping[str, Any], release_type: str = "") -> Document:
    """The page of a ``deid search`` result dict; ``release_type`` (the spec's) checks the threshold against
    the recommended range."""
    method = str(result.get("method", ""))
    pols = list(result.get("policies") or [])
    thr = _threshold(result)
    reassessed = result.get("best_reassessed") or {}
    ok = bool(pols) and reassessed.get("meets", True) is not False
    best = pols[0] if pols else {}
    if method == "partition":  # the criterion is a subset size; rᵢ is reported, not held to a threshold
        smallest = (best.get("summary") or {}).get("min_subset")
        k = result.get("min_size")
        ok = bool(pols) and smallest is not None and smallest >= k
        text = (f"The best partition {'meets' if ok else 'does NOT meet'} the minimum subset size k = {k}: its "
                f"smallest subset holds {fmt(smallest)} records; the largest instance-disclosure risk rᵢ is "
                f"{fmt(best.get('risk'))} (reported, not held to a threshold by this method).")
        thr = None
    elif ok and result.get("threshold_source") == "safe harbor":
        ok = None  # a bound relative to Safe Harbor, not a release threshold: the assessment judges the release
        text = (f"The best policy found is no riskier than Safe Harbor on these data (normalized population risk "
                f"{fmt(best.get('reassessed_risk', best.get('risk')))}, at or below Safe Harbor's {fmt(thr)}); not "
                "judged against the spec's threshold here: the page of deid assess or of deid apply judges its release.")
    elif ok:
        text = meets_text(True, "The best policy found makes the released data", thr, f"risk "
                          f"{fmt(best.get('reassessed_risk', best.get('risk')))}") if thr is not None else \
            "The search found a policy that meets its criterion."
    elif pols:
        text = ("The best policy found does NOT meet the threshold once re-assessed on its release "
                f"(high-risk share {fmt(reassessed.get('high_risk_proportion'))}).")
    else:
        text = f"No policy meets the threshold {fmt(thr)}: relax the criterion or change the hierarchies."
    range_ok = result.get("threshold_source") != "safe harbor" and release_type
    details: list[Block] = []
    rv = result.get("release_verdict")
    if rv is not None and pols:  # the verdict deid apply --spec gives this policy's release: the page says it
        if (result.get("criterion") or {}).get("kind") != "attack":  # --k, bps/directed: their criterion too
            details.append(Paragraph(f"The search's own criterion: {text[:1].lower()}{text[1:]}", style="small"))
        ok = bool(rv["meets"])
        text = meets_text(ok, "The best policy found makes the released data", rv["threshold"],
                          f"overall risk {fmt(rv['overall_risk'])}, measured as the {rv['measure']}, with "
                          f"{fmt(rv['suppressed_records'])} of {fmt(rv['records'])} records suppressed and the "
                          f"smallest class {fmt(rv['k_min'])} (what deid apply --spec states for its release)")
        thr, range_ok = rv["threshold"], release_type
    if result.get("threshold_source") == "safe harbor":
        details.append(Paragraph(f"The threshold {fmt(thr)} is the normalized population risk of the Safe Harbor "
                                 "policy on these data (no --threshold was given): a policy at or below it is no "
                                 "riskier than Safe Harbor. It is not a threshold of El Emam & Arbuckle's Table 2-1."))
    verdict = verdict_section(ok, text, threshold=thr if range_ok else None, release_type=release_type,
                              details=details)
    crit = result.get("criterion") or {}
    settings = [["method", METHODS.get(method, method)]]
    settings += [[name, _setting(key, result[key])] for key, name in SETTINGS if result.get(key) is not None]
    blocks: list[Block] = [Table([], settings, row_header=True)]
    if crit:
        blocks += [Paragraph("The criterion a policy must meet:"),
                   Table([], [[name, str(crit[key]).replace("count_limit", fmt(crit.get("count_limit")))
                               if key == "risk" else crit[key]] for key, name in CRITERION if crit.get(key) is not None],
                         row_header=True)]
    sections = [verdict, Section("The search", blocks)]
    if pols:
        found = [Paragraph(f"{len(pols):,} polic{'y' if len(pols) == 1 else 'ies'} reported, best (least loss) first"
                           + (f"; the first {min(20, len(pols))} shown:" if len(pols) > 20 else ":")),
                 policies_table(result),
                 *([Paragraph("—: not counted for this policy (the search counts the suppressed records of the best "
                              "policy only).", style="small")]
                   if any(p.get("suppressed_records") is None for p in pols[:20]) else []),
                 Figure(search_plot(dict(result), threshold=thr), "Risk against information loss of the policies "
                        "found; the best circled" + (", the threshold dashed" if thr is not None else ""))]
        if best.get("high_risk_proportion") is not None:
            found.append(Paragraph(f"Best policy: {pct(best['high_risk_proportion'])} of the persons at high risk in "
                                   "the simulated attack, suppressed on top of the generalization."))
        sections.append(Section("Policies found", found))
    if result.get("best_policy"):
        policy_blocks = reapply_blocks(result["best_policy"], [
            "deid apply --input NEXT.csv --policy POLICY.json --out RELEASE.csv"], ok=None if method == "lola" and ok else ok)
        if method == "lola":
            policy_blocks.insert(1, Paragraph("The policy generalizes; the high-risk persons of this data set are "
                                              "suppressed on top of it, so on other data it re-applies the "
                                              "generalization only: assess that release again.", style="flag"))
        policy_blocks.append(Paragraph("deid search --policy-out POLICY.json writes this policy.", style="small"))
        sections.append(Section("The best policy, to re-apply", policy_blocks))
    return Document("De-identification policy search", f"deid search --method {method}", sections)


def render_search_html(result: Mapping[str, Any], release_type: str = "") -> str:
    """A self-contained page: the verdict, the search, its policies and plot, the best policy."""
    return render(search_document(result, release_type))
