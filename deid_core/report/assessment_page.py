"""The page of a five-step report (``deid assess --html``, ``party link-release``): a
:func:`~deid_core.report.five_steps.build_report` dict as a :class:`~deid_core.report.document.Document`,
and :func:`release_page`, that page drawn with the plots of its
:class:`~deid_core.assessing.ReleaseAssessment`. A caller adds sections of its own through ``preface``
(placed before step 1: what the data went through before they were de-identified, e.g. a linkage) without
this module knowing what they say."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..assessing import ReleaseAssessment
from ..column_fates import EXAMPLE_MIN_RECORDS
from ..errors import DeidInputError
from ..spec import SUPPRESSED
from .document import Change, Document, Figure, Mark, Paragraph, Section, Strong, Table
from .figures import plots
from .five_steps import REAPPLY, SOURCES
from .policy_table import reapply_blocks
from .render import fmt, names, pct, render
from .verdict import meets_text, verdict_section

#: Measures in words, in the order the tables show them; "a.b" reads summary[a][b].
MEASURES = [
    ("persons", "Persons (longitudinal data: class sizes below count persons)"),
    ("records", "Records"),
    ("suppressed_persons", "Persons suppressed (all their records)"),
    ("suppressed_records", "Records suppressed"),
    ("fully_missing_records", "Records with every quasi-identifier missing"),
    ("equivalence_classes", "Equivalence classes ({unit} alike on the quasi-identifiers)"),
    ("k_min", "Smallest equivalence class (k)"),
    ("prosecutor.max", "Prosecutor risk, maximum"),
    ("prosecutor.average", "Prosecutor risk, average"),
    ("prosecutor.strict_average", "Prosecutor risk, strict average"),
    ("journalist.max", "Journalist risk, maximum"),
    ("journalist.average", "Journalist risk, average"),
    ("marketer", "Marketer risk"),
    ("population_risk.normalized", "Population risk (normalized)"),
    ("instance_disclosure.max_r", "Instance disclosure risk, maximum"),
    ("instance_disclosure.R", "Instance disclosure risk, average"),
]

ATTACK_NAMES = {"T1": "T1 deliberate attempt (data recipient)", "T2": "T2 inadvertent recognition of an acquaintance",
                "T3": "T3 data breach", "T4": "T4 public release (demonstration attack)"}

#: Captions of the plots of :func:`deid_core.report.figures.plots`.
CAPTIONS = {"ec_histogram": "{Unit} by the size of their equivalence class, original (outline) and released (blue); "
                            "dashed: the smallest class the threshold allows",
            "risk_per_record": "Risk per {unit} if attacked, Pr(re-id | T), highest first, original (dotted) and "
                               "released, against the threshold over the largest Pr(T)"}


def _get(summary: Mapping[str, Any], key: str) -> Any:
    value: Any = summary
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def section_identifiers(s: Mapping[str, Any]) -> Section:
    ids = s["1_identifiers"]
    return Section("1. Direct identifiers and quasi-identifiers", [
        Paragraph(f"Direct identifiers: {names(ids['direct'])}. {ids['why']['direct']}"),
        Paragraph(f"Quasi-identifiers: {names(ids['quasi'])}. {ids['why']['quasi']}"),
        Paragraph(f"Sensitive (analytic) columns: {names(ids['sensitive'])}; other columns: {names(ids['other'])}. "
                  "They are released as they are unless the policy says otherwise."),
    ])


def section_threshold(s: Mapping[str, Any]) -> Section:
    t = s["2_threshold"]
    rows = [[ATTACK_NAMES.get(a, a), "maximum risk" if v["metric"] == "max" else "average risk",
             f"{fmt(min(v['range']))} to {fmt(max(v['range']))}"] for a, v in t["threshold_table"].items()]
    return Section("2. The threshold", [
        Paragraph(f"This is a {t['release_type']} release. {t['why']} {criterion_words(t)}"),
        Table(["attack", "risk metric", "threshold range"], rows),
    ])


def criterion_words(t: Mapping[str, Any]) -> str:
    """What the threshold asks of the classes, from the verdict's own criterion (``2_threshold``:
    :func:`deid_core.risk.release_k` and :func:`deid_core.risk.release_average_cap`)."""
    k, unit, cap = t["k_equivalent"], t.get("k_unit", "records"), t.get("average_at_most")
    if t["release_type"] == "public":
        return (f"The threshold is {fmt(t['threshold'])} on the maximum risk: every equivalence class must hold "
                f"at least k = {k} {unit}.")
    text = (f"The threshold is {fmt(t['threshold'])} on the overall risk Pr(T) × Pr(re-id | T), measured as the "
            f"{t['metric']}: every equivalence class must hold at least k = {k} {unit} (a maximum risk above the "
            f"strict-average cut {fmt(t.get('strict_cut', 0.33))} would itself be the risk)")
    return text + (f", and the average risk must stay at or under {fmt(cap)}." if cap is not None else ".")


def _attack_table(attacks: Mapping[str, Any]) -> Table:
    return Table(["attack", "Pr(T)", "Pr(re-id | T)", "Pr(re-id, T)", "threshold"],
                 [[ATTACK_NAMES.get(t, t), v["pr_t"], v["pr_reid_given_t"], v["pr_reid"], Mark(v["meets_threshold"])]
                  for t, v in attacks.items()], numeric=(1, 2, 3))


def section_attacks(s: Mapping[str, Any]) -> Section:
    before = s["5_evidence"]["attack_before"]
    return Section("3. The risk, measured under the plausible attacks", [
        Paragraph("The risk of re-identification under an attack T is Pr(re-id, T) = Pr(T) × Pr(re-id | T): the "
                  "chance the attack happens times the chance it succeeds, which is 1 / the size of a record's "
                  "equivalence class. Before de-identification:"),
        _attack_table(before["attacks"]),
        Paragraph(f"Before de-identification the data {'meet' if before['meets_threshold'] else 'do not meet'} the "
                  f"threshold {s['2_threshold']['threshold']} (overall risk {fmt(before['overall_risk'])})."),
    ])


def _fate_rows(fates: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    rows = []
    for f in fates:
        ex = f.get("example")
        level = f"{f['level_from']} → {f['level_to']} of {f['height']}" if "level_to" in f else "—"
        rows.append([Strong(f["column"]), f["role_text"], f["text"], level,
                     Change(ex["before"], ex["after"]) if ex else "—", f.get("cells_suppressed", "—")])
    return rows


def section_transformation(s: Mapping[str, Any]) -> Section:
    tr = s["4_transformation"]
    fates = tr.get("columns") or []
    if not fates:
        return Section("4. What was done", [
            Paragraph("Policy steps: " + "; ".join(st.get("text", st["op"]) for st in tr.get("steps", [])) + ".")])
    dropped = [f["column"] for f in fates if f.get("fate") == "dropped"]
    generalized = [f"{f['column']} ({f['generalized_from']} → {f['generalized_to']})" for f in fates
                   if "generalized_to" in f]
    sentence = f"Dropped: {names(dropped)}. Generalized: {names(generalized)}. "
    k, persons, n = tr.get("suppression_k"), tr.get("persons_suppressed"), tr["records_suppressed"]
    if k and persons is not None:
        sentence += (f"Persons with a record in an equivalence class of fewer than k = {k} persons have all "
                     f"their records suppressed (their quasi-identifiers replaced by {SUPPRESSED}); here "
                     f"{persons:,} person{'s' if persons != 1 else ''}, {n:,} record{'s' if n != 1 else ''}.")
    else:
        sentence += (f"Records in equivalence classes smaller than k = {k} are suppressed (their "
                     f"quasi-identifiers replaced by {SUPPRESSED}); here {n:,} record"
                     f"{'s' if n != 1 else ''}." if k else "No record was suppressed.")
    earlier = tr.get("earlier_operations") or []
    return Section("4. What was done", [
        *([Paragraph("Before this assessment (the data assessed here had already been through these steps):"),
           Table(["step", "result"], [list(e) for e in earlier])] if earlier else []),
        Paragraph(sentence),
        Table(["column", "role", "what happened", "hierarchy level", "example before → after", "cells suppressed"],
              _fate_rows(fates), numeric=(5,)),
        Paragraph("Examples are the most frequent changed value of a column; an original value held by fewer than "
                  f"{EXAMPLE_MIN_RECORDS} records is not shown, and direct identifiers and masked columns never show "
                  "one.", style="small"),
    ])


def _risk_table(before: Mapping[str, Any], after: Mapping[str, Any], unit: str = "records") -> Table:
    rows = []
    for key, name in MEASURES:
        b, a = _get(before, key), _get(after, key)
        if (key == "suppressed_records" or (key == "suppressed_persons" and a is not None)) and b is None:
            b = 0
        if b is None and a is None:
            continue
        rows.append([name.replace("{unit}", unit), b, a])
    return Table(["measure", "before", "released"], rows, numeric=(1, 2))


def _before_after(measure: Mapping[str, Any], part: str = "") -> str:
    """``before → after`` of a loss measure (of its ``part`` when the measure has several)."""
    before, after = measure.get("before"), measure.get("after")
    if part:
        before, after = (before or {}).get(part), (after or {}).get(part)
    return f"{fmt(before)} → {fmt(after)}"


def section_evidence(s: Mapping[str, Any], images: Mapping[str, str]) -> Section:
    ev, t = s["5_evidence"], s["2_threshold"]
    ok = ev["meets_threshold"]
    loss = ev["information_loss"]
    nue = loss.get("non_uniform_entropy", {})
    loss_rows = [
        ["Non-uniform entropy lost (share of the maximum)", f"{nue.get('percent', 0):.2f} %"],
        ["Share of records with a missing or suppressed quasi-identifier", _before_after(loss.get("missingness", {}), "record")],
        ["Share of quasi-identifier cells missing or suppressed", _before_after(loss.get("missingness", {}), "cell")],
        ["Discernibility (Σ class size²)", _before_after(loss.get("discernibility", {}))],
        ["Average equivalence class size", _before_after(loss.get("average_class_size", {}))],
        ["Precision (1 = nothing generalized)", fmt(loss.get("precision", {}).get("precision"))],
    ]
    lost = [Table(["measure", "value"], loss_rows)]
    per = ev.get("loss_per_column") or []
    if per:
        lost.append(Table(["quasi-identifier", "distinct values before → after", "cells suppressed",
                           "non-uniform entropy lost", "precision"],
                          [[r["column"], "dropped" if r["dropped"] else
                            f"{fmt(r['distinct_before'])} → {fmt(r['distinct_after'])}",
                            r["cells_suppressed"], f"{r['entropy_percent']:.2f} %", r["precision"]] for r in per],
                          numeric=(2, 3, 4)))
    numeric = (loss.get("numeric") or {}).get("columns") or {}
    if numeric:
        lost.append(Table(["numeric column", "mean before", "mean after", "SD before", "SD after",
                           "correlation before/after"],
                          [[c, v["mean_before"], v["mean_after"], v["sd_before"], v["sd_after"],
                            v["corr_before_after"]] for c, v in numeric.items()], numeric=(1, 2, 3, 4, 5)))
    blocks: list[Any] = [
        Paragraph(meets_text(ok, "The released data", t["threshold"], f"overall risk {fmt(ev['overall_risk'])} "
                             f"(before: {fmt(ev['overall_risk_before'])})")),
        Section("Risk before and after", [_risk_table(ev["risk_before"], ev["risk_after"], t.get("k_unit", "records")),
                                          Paragraph("Released data under each plausible attack:"),
                                          _attack_table(ev["attack_after"]["attacks"])]),
        Section("Information loss", lost),
    ]
    if images:
        unit = "person" if s["2_threshold"].get("k_unit") == "persons" else "record"
        blocks.append(Section("Plots", [Figure(data, CAPTIONS.get(name, name).replace("{Unit}", unit.title() + "s")
                                               .replace("{unit}", unit)) for name, data in images.items()]))
    a, b = ev["reassess_between"]
    blocks.append(Paragraph(f"Re-assess between {a} and {b} (every 18 to 24 months), or earlier if quasi-identifiers "
                            "are added or changed, the recipients change, or the data come from a different "
                            "population."))
    return Section("5. Re-assessment of the release", blocks)


def section_longitudinal(lg: Mapping[str, Any]) -> Section:
    epp = lg["events_per_person"]
    rp, rr = lg["risk_persons"], lg["risk_rows"]
    blocks: list[Any] = [
        Paragraph(f"The table holds {lg['events']:,} events (rows) of {lg['persons']:,} persons, identified by the "
                  f"column {lg['person']} (removed from the release). A person has {epp['min']:,} to {epp['max']:,} "
                  f"events (median {fmt(epp['median'])}). Every class size in this report counts distinct persons: "
                  "three identical claims of one patient are a class of one person, whose risk is 1, not 1/3."),
        Paragraph(f"Values fixed per person (level 1, always assumed known to an adversary): {names(lg['level1'])}. "
                  f"Values of each event (level 2): {names(lg['level2'])}."),
        Table(["released data counted by", "smallest class", "maximum risk", "average risk"],
              [["persons (used in this report)", rp.get("k_min"), rp.get("max"), rp.get("average")],
               ["rows (would understate the risk)", rr.get("k_min"), rr.get("max"), rr.get("average")]],
              numeric=(1, 2, 3)),
    ]
    att = lg.get("attack")
    if att:
        power, res = att["adversary_power"], att["attack"]
        p_max = power["p_max"]
        if power.get("fixed"):
            blocks.append(Paragraph(f"Adversary power: the adversary is assumed to know {p_max} value(s) of each "
                                    "event column for every person."))
        else:
            by = power["by_qi"]
            rows = [[p] + [by[h]["distribution"].get(str(p), 0) for h in by] for p in range(1, p_max + 1)]
            blocks += [Paragraph(f"Adversary power: how many values of each event column an adversary is assumed to "
                                 f"know about a person, at most {p_max}. It grows with the person's number of events "
                                 "and falls when their values vary little (the book's formula with the Simpson "
                                 "variability). Persons by power:"),
                       Table(["values known"] + [f"persons ({h})" for h in by], rows,
                             numeric=tuple(range(1, len(by) + 1)))]
        lo, hi = res["ci95"]
        thr = res["threshold"]
        how = ("every possible combination of known values of every person was tried" if res["exact"] else
               f"{res['iterations']:,} attacks were simulated on persons drawn at random (seed {res['seed']})")
        blocks += [
            Paragraph("Simulated attack: the adversary knows a person's level-1 values and as many of their event "
                      "values as their power allows, looks for released persons whose events contain all of them, "
                      f"and picks one of those at random. {how[0].upper() + how[1:]}."),
            Table(["result", "value"],
                  [["average chance of a correct re-identification", pct(res["average"])],
                   ["95 % confidence interval", f"{pct(lo)} to {pct(hi)}" if not res["exact"] else "exact"],
                   [f"persons above the threshold {thr}", pct(res["high_risk_persons"])],
                   ["simulated attack, average against the threshold", Mark(res["average"] <= thr)]]),
            Paragraph("Two measures, two adversaries: step 5 below counts, per person, the persons who share one of "
                      "their events (level-1 and level-2 values of one row: an adversary who knows one event), and "
                      "gives the verdict on the threshold; the simulated attack above assumes an adversary who knows "
                      "several events, all of which must be found in the same released person (the measure of the "
                      "Heritage Health Prize release). They can disagree; the release decision should say which one "
                      "it relies on."),
        ]
    else:
        blocks.append(Paragraph("No simulated attack was run (deid assess --attack runs one)."))
    if lg.get("operations"):
        blocks.append(Paragraph("The steps these data went through before this assessment (truncation, medical "
                                "codes) are listed in step 4 below."))
    return Section("Longitudinal data: one person, many rows", blocks)


def section_policy(s: Mapping[str, Any]) -> Section:
    """The policy to re-apply, as a table of steps (earlier truncation and code steps first) with its
    commands; a release that fails its threshold is never offered as re-appliable as it is."""
    tr = s["4_transformation"]
    re_ = tr.get("reapply") or {}
    commands = re_.get("commands") or [re_.get("command", REAPPLY)]
    earlier = [tuple(e) for e in re_.get("earlier_steps") or []]
    return Section("The policy to re-apply", reapply_blocks(tr["policy"], commands, ok=s["5_evidence"]["meets_threshold"],
                                                            earlier=earlier, policy_file=re_.get("policy_file", "")))


def section_verdict(report: Mapping[str, Any]) -> Section:
    """The verdict first: meets or not, against which threshold, inside the recommended range or flagged;
    with ``--known``, the m-of-n adversary's verdict too."""
    s = report["steps"]
    ev, t = s["5_evidence"], s["2_threshold"]
    unit = t.get("k_unit", "records")
    measured = (f"overall risk {fmt(ev['overall_risk'])}, measured as the {t['metric']}, over {unit} "
                f"(before de-identification: {fmt(ev['overall_risk_before'])})")
    details: list[Any] = []
    known = report.get("known")
    if known:
        kt = known["threshold"]
        details.append(Paragraph(meets_text(kt["meets_threshold"], f"Against an adversary who knows any {known['m']} of "
                                            f"the {known['n']} quasi-identifiers, the released data", t["threshold"],
                                            f"overall risk {fmt(kt['overall_risk'])} over the "
                                            f"{fmt(known['design']['blocks'])} blocks of a covering design")))
    return verdict_section(ev["meets_threshold"], meets_text(ev["meets_threshold"], "The released data",
                                                             t["threshold"], measured),
                           threshold=t["threshold"], release_type=t["release_type"], details=details)


def section_known(known: Mapping[str, Any]) -> Section:
    """``deid assess --known m``: the risk when the adversary knows m of the n quasi-identifiers, per block
    of a covering design (El Emam & Arbuckle, ch. 7, "Covering Designs"), worst blocks first."""
    d, w, kt = known["design"], known["worst"], known["threshold"]
    blocks = known.get("blocks") or []
    shown = blocks[:10]
    rows = [[", ".join(b["qis"]), b.get("k_min"), (b.get("prosecutor") or {}).get("max"),
             (b.get("prosecutor") or {}).get("average"), pct(b.get("high_risk_share"))] for b in shown]
    exact = d.get("blocks") == d.get("all_t_subsets") and known.get("block_size") == known.get("m")
    return Section(f"An adversary who knows {known['m']} of the {known['n']} quasi-identifiers", [
        Paragraph(f"An adversary rarely knows every quasi-identifier of a person. Here they know any {known['m']} of "
                  f"the {known['n']}: the released data are measured on each block of {known['block_size']} "
                  f"quasi-identifiers of a covering design C({known['n']}, {known['block_size']}, {known['m']}), "
                  f"{fmt(d.get('blocks'))} blocks ({'every subset: exact' if exact else 'each subset of ' + str(known['m']) + ' lies in a block; larger blocks over-estimate the risk'}), "
                  "and the worst of each measure over the blocks is the result."),
        Table(["measure (worst over the blocks)", "value"],
              [["Smallest equivalence class (k)", w.get("k_min")],
               ["Prosecutor risk, maximum", (w.get("prosecutor") or {}).get("max")],
               ["Prosecutor risk, average", (w.get("prosecutor") or {}).get("average")],
               ["Overall risk under the plausible attacks", kt["overall_risk"]],
               [f"threshold {fmt(kt['threshold'])}", Mark(kt["meets_threshold"])]], numeric=(1,)),
        Paragraph(f"The {len(shown)} block{'s' if len(shown) != 1 else ''} with the largest share of high-risk records "
                  f"(risk above {fmt(known['high_risk_cut'])}) first" + (f", of {len(blocks):,}:" if len(blocks) > len(shown) else ":")),
        Table(["quasi-identifiers known", "smallest class", "prosecutor max", "prosecutor average",
               "high-risk records"], rows, numeric=(1, 2, 3, 4)),
    ])


def assessment_document(report: Mapping[str, Any], images: Mapping[str, str] | None = None, *,
                        preface: Sequence[Section] = ()) -> Document:
    """The page of a :func:`~deid_core.report.five_steps.build_report` dict: ``preface`` sections (the
    caller's own, e.g. how the data were linked), then the five steps (with the longitudinal part when the
    data have one), the policy to re-apply and the sources. ``images`` are :func:`~deid_core.report.figures.plots`."""
    if not isinstance(report, Mapping) or "steps" not in report:
        raise DeidInputError("render_html needs a report dict from build_report")
    s = report["steps"]
    sections = [section_verdict(report), *preface, section_identifiers(s), section_threshold(s)]
    if report.get("longitudinal"):
        sections.append(section_longitudinal(report["longitudinal"]))
    sections += [section_attacks(s), section_transformation(s), section_evidence(s, images or {})]
    if report.get("known"):
        sections.append(section_known(report["known"]))
    sections.append(section_policy(s))
    meta = (f"Input: {report.get('input', '')} — generated {report.get('generated', '')}. The method follows "
            "El Emam & Arbuckle's five steps (sources at the end).")
    return Document(report.get("title", "De-identification report"), meta, sections,
                    list((report.get("sources") or SOURCES).values()))


def render_html(report: Mapping[str, Any], images: Mapping[str, str] | None = None, *,
                preface: Sequence[Section] = ()) -> str:
    """A self-contained, offline HTML page for a :func:`build_report` dict (plots as PNG data URIs)."""
    return render(assessment_document(report, images, preface=preface))


def release_page(ra: ReleaseAssessment, report: Mapping[str, Any], *, images: Mapping[str, str] | None = None,
                 preface: Sequence[Section] = ()) -> str:
    """The page of a release: ``report`` (:func:`~deid_core.report.five_steps.build_report` of ``ra``, with any
    keys of the caller's) and, when ``ra`` has one, the m-of-n adversary, drawn with the plots of the release
    against the original (``images``: those plots drawn already)."""
    page = {**report, **({"known": ra.known} if ra.known is not None else {})}
    return render_html(page, plots(ra.release, ra.original) if images is None else images, preface=preface)
