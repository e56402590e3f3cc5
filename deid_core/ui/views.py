"""HTML fragments of the workbench's four steps, rendered on the server (every value escaped, numbers
rounded, no raw keys); the page's script puts each fragment into its section."""
from __future__ import annotations

import html
import time
from typing import Any, Iterable, Sequence
from urllib.parse import quote

import pandas as pd

from ..errors import DeidInputError
from ..hierarchy import build_hierarchy
from ..report import EXAMPLE_MIN_RECORDS, fmt
from ..spec import RELEASE_TYPES, ROLES, HierarchySpec
from .specform import FORM_BUILDERS, NO_FILES, TYPES, ColumnForm
from .workspace import SearchJob, Workspace

esc = html.escape
ROLE_HELP = {"direct": "direct identifier: dropped", "quasi": "quasi-identifier: generalized",
             "sensitive": "sensitive: released as is", "other": "other: released, checked for identifiers",
             "text": "free-text notes: every identifier found in them tagged"}
BUILDER_TEXT = {"": "none: (value, *)", "interval": "intervals (numbers)", "dates": "dates: week, month, year…",
                "prefix": "prefix (ZIP-like codes)", "icd": "ICD-9/10 codes", "atc": "ATC drug codes",
                "flat": "flat: (value, *)", "csv": "CSV upload (ARX layout)"}
MEASURE_TEXT = {"max": "maximum", "average": "average", "strict_average": "strict average"}


def number(v: Any) -> str:
    """A number as every page shows it (:func:`deid_core.report.fmt`): thousands separated, never in
    scientific notation from 1,000 up, other numbers to 4 significant digits."""
    return fmt(v)


def table(header: Sequence[str], rows: Iterable[Sequence[Any]], cls: str = "") -> str:
    """Cells are escaped unless they are :class:`Raw`."""
    def cell(v: Any) -> str:
        if isinstance(v, Raw):
            return f"<td>{v.text}</td>"
        num = isinstance(v, (int, float)) and not isinstance(v, bool)
        return f"<td class='num'>{esc(number(v))}</td>" if num else f"<td>{esc(number(v))}</td>"
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(cell(v) for v in r) + "</tr>" for r in rows)
    return f"<div class='wide'><table class='{cls}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


class Raw:
    """Already escaped HTML for a table cell."""

    def __init__(self, text: str) -> None:
        self.text = text


def verdict(ok: bool, text: str) -> str:
    return f"<div class='verdict {'pass' if ok else 'fail'}' data-verdict='{'pass' if ok else 'fail'}'>{esc(text)}</div>"


def download(ws: Workspace, name: str, label: str) -> str:
    return (f"<a class='button' download='{esc(name)}' id='download-{esc(name.replace('.', '-'))}' "
            f"href='/download/{quote(name)}?ws={quote(ws.id)}'>{esc(label)}</a>")


def _select(name: str, options: Sequence[tuple[str, str]], value: str, label: str) -> str:
    opts = "".join(f"<option value='{esc(v)}'{' selected' if v == value else ''}>{esc(t)}</option>" for v, t in options)
    return f"<select name='{esc(name)}' aria-label='{esc(label)}'>{opts}</select>"


# ------------------------------------------------------------------ step 1

def load_view(ws: Workspace) -> str:
    if ws.table is None:
        return "<p class='hint'>No table yet: choose a CSV or Parquet file above.</p>"
    flagged = sum(1 for p in ws.profile if p["findings"])
    rows = []
    for p in ws.profile:
        flags = Raw("<br>".join(f"<span class='flag'>{esc(f)}</span>" for f in p["findings"]) or "—")
        examples = Raw(", ".join(f"<code>{esc(v)}</code> ({n:,})" for v, n in p["examples"])
                       or f"<span class='hint'>no value held by {EXAMPLE_MIN_RECORDS} or more records</span>")
        rows.append([p["column"], p["distinct"], p["missing"], flags, examples])
    sampled = " (a sample of " + number(ws.scanned.get("rows_scanned")) + " rows scanned)" if ws.scanned.get("sampled") else ""
    return (f"<p id='loaded'><strong>{esc(ws.input_name)}</strong>: {len(ws.table):,} records, "
            f"{len(ws.table.columns)} columns, read as text. The identifier detector flagged {flagged} "
            f"column{'s' if flagged != 1 else ''}{esc(sampled)}. Examples are values held by at least "
            f"{EXAMPLE_MIN_RECORDS} records.</p>"
            + table(["column", "distinct values", "missing", "detector", "examples (records)"], rows, "profile"))


# ------------------------------------------------------------------ step 2

def _preview(column: str, col: ColumnForm, values: pd.Series) -> str:
    """A quasi-identifier's hierarchy as values per level and the most frequent common value's path."""
    if col.role != "quasi":
        return ""
    try:
        raw = col.hierarchy(column)
        hspec = HierarchySpec.from_dict(column, raw, refuse_files=NO_FILES) if raw else HierarchySpec("flat", {})
        counts = values.value_counts(dropna=True)
        h = build_hierarchy(hspec, [str(v) for v in counts.index], name=column)
        sizes = " → ".join(f"{h.cardinality(level):,}" for level in range(h.height + 1))
        text = f"{h.height} level{'s' if h.height != 1 else ''}; values per level {sizes}"
        common = counts[counts >= EXAMPLE_MIN_RECORDS]
        if len(common):
            value = pd.Series([str(common.index[0])])
            path = " → ".join(str(h.generalize(value, level, column).iloc[0]) for level in range(h.height + 1))
            text += f"; e.g. {path}"
        return f"<span class='preview'>{esc(text)}</span>"
    except (DeidInputError, ValueError, KeyError) as error:
        return f"<span class='error-inline'>{esc(' '.join(str(error).split()))}</span>"


def declare_view(ws: Workspace, toml_text: str, error: str | None) -> str:
    if ws.form is None:
        return "<p class='hint'>Load a table first.</p>"
    form = ws.form
    rows = []
    for column, col in form.columns.items():
        role = _select(f"role:{column}", [(r, ROLE_HELP[r]) for r in ROLES], col.role, f"role of {column}")
        kind = _select(f"type:{column}", [("", "—")] + [(t, t) for t in TYPES], col.type, f"type of {column}")
        hier, params, level = "", "", ""
        if col.role == "quasi":
            hier = _select(f"builder:{column}", [(b, BUILDER_TEXT[b]) for b in ("",) + FORM_BUILDERS], col.builder,
                           f"hierarchy of {column}")
            if col.builder == "interval":
                params = (f"<label>widths <input name='widths:{esc(column)}' value='{esc(col.widths)}' "
                          f"placeholder='5, 10, 20' size='9'></label> <label>top code <input name='top_code:"
                          f"{esc(column)}' value='{esc(col.top_code)}' size='4'></label> <label>bottom code <input "
                          f"name='bottom_code:{esc(column)}' value='{esc(col.bottom_code)}' size='4'></label>")
            elif col.builder == "prefix":
                params = (f"<label>levels <input name='prefix_levels:{esc(column)}' value='{esc(col.prefix_levels)}' "
                          "size='3'></label>")
            elif col.builder == "csv":
                have = f"<span class='hint'>{esc(col.source or 'embedded')}, {len(col.rows or []):,} rows</span> " \
                    if col.rows else ""
                params = (have + f"<input type='file' accept='.csv,.txt' data-upload='/api/hierarchy' "
                          f"data-column='{esc(column)}' aria-label='hierarchy file for {esc(column)}'>")
            if form.person:
                level = _select(f"level:{column}", [("", "—"), ("1", "1: per person"), ("2", "2: per event")],
                                col.level, f"longitudinal level of {column}")
            params += _preview(column, col, ws.table[column])
        rows.append([column, Raw(role), Raw(kind), Raw(hier), Raw(params)] + ([Raw(level)] if form.person else []))
    person = _select("person", [("", "— (one row per person)")] + [(c, c) for c in form.columns], form.person,
                     "person column")
    release = (
        f"<fieldset><legend>Release</legend><label>type {_select('release_type', [(t, t) for t in RELEASE_TYPES], form.release_type, 'release type')}</label> "
        f"<label>threshold <input name='threshold' value='{esc(form.threshold)}' size='6'></label> "
        "<span class='hint'>public: maximum risk (T4); non-public: average risk × Pr(attack) (T1–T3)</span></fieldset>"
        f"<fieldset><legend>[longitudinal]</legend><label>person {person}</label> "
        f"<label>adversary power <input name='adversary_power' value='{esc(form.adversary_power)}' size='3'></label> "
        "<span class='hint'>several rows per person: the person column is never released; set each quasi-identifier's "
        "level (1 fixed per person, 2 per event)</span></fieldset>")
    status = (f"<p class='error' role='alert' id='spec-error'>{esc(error)}</p>" if error
              else "<p class='ok' id='spec-ok'>The spec is complete.</p>")
    spec_box = (f"<div class='spec'><h3>Spec (TOML)</h3>{status}<pre id='spec-toml'>{esc(toml_text)}</pre>"
                + (download(ws, "spec.toml", "Download spec.toml") if not error else "")
                + "<label class='load-spec'>Load a spec: <input type='file' accept='.toml' data-upload='/api/spec-file' "
                  "aria-label='spec file'></label></div>")
    return ("<form id='spec-form' data-post='/api/spec' data-auto>"
            + table(["column", "role", "type", "hierarchy", "parameters / preview"]
                    + (["longitudinal level"] if form.person else []), rows, "declare")
            + release + "</form>" + spec_box)


# ------------------------------------------------------------------ step 3

def assess_view(assessment: dict | None) -> str:
    if assessment is None:
        return ""
    s, a = assessment["summary"], assessment["attack"]
    unit = "persons" if assessment["longitudinal"] else "records"
    rows = [["records", s.get("records")]]
    if assessment["longitudinal"]:
        rows.append(["persons", s.get("persons")])
    rows += [["equivalence classes", s.get("equivalence_classes")], [f"smallest class ({unit})", s.get("k_min")]]
    for measure in ("max", "average", "strict_average"):
        rows.append([f"prosecutor risk, {MEASURE_TEXT[measure]}", s["prosecutor"][measure]])
    if "journalist" in s:
        rows += [["journalist risk, maximum", s["journalist"]["max"]],
                 ["journalist risk, average", s["journalist"]["average"]], ["marketer risk", s.get("marketer")]]
    attacks = [[name, t.get("pr_t"), t.get("pr_reid_given_t"), t.get("pr_reid"), t.get("conditional_threshold"),
                Raw("<span class='pass'>meets</span>" if t.get("meets_threshold") else "<span class='fail'>does not meet</span>")]
               for name, t in a["attacks"].items()]
    ok = bool(a["meets_threshold"])
    pop = (f"Journalist and marketer risk against the population table {esc(assessment['population'])}."
           if assessment["population"] else "Journalist and marketer risk need a population table (optional above).")
    return ("<h3>Risk of the table as it is</h3>"
            + verdict(ok, f"The table as loaded {'meets' if ok else 'does not meet'} the threshold "
                          f"{number(a['threshold'])} ({a['release_type']}): overall risk {number(a['overall_risk'])}, "
                          f"the smallest class it allows k = {number(a['k_equivalent'])} {unit}"
                          + (f", with an average risk at most {number(a['average_at_most'])}."
                             if a.get("average_at_most") is not None else "."))
            + table(["measure", "value"], rows, "risk")
            + table(["attack", "Pr(attack)", "Pr(re-id | attack)", "Pr(re-id)", "threshold for Pr(re-id | attack)",
                     "verdict"], attacks, "attacks")
            + f"<p class='hint'>{pop}</p>")


def progress_view(job: SearchJob | None) -> str:
    if job is None:
        return ""
    if job.error:
        return f"<p class='error' role='alert' id='search-error'>{esc(job.error)}</p>"
    if job.finished:
        return f"<p class='ok' id='search-done'>Search finished in {job.seconds:.2f} s.</p>"
    elapsed = time.monotonic() - job.started
    share = job.done / job.total if job.total else 0.0
    what = (f"{job.done:,} of {job.total:,} {'nodes' if job.method != 'bps' else 'policies'}" if job.total
            else "preparing")
    return (f"<div class='progress' id='search-progress' data-running='1'><progress max='1' value='{share:.3f}'></progress> "
            f"{esc(job.method.upper())} search: {esc(what)}, {elapsed:.1f} s</div>")


def _levels(levels: dict) -> str:
    return ", ".join(f"{q} {lvl}" for q, lvl in levels.items())


def candidates_view(ws: Workspace, plot: str) -> str:
    job = ws.job
    if job is None or not job.finished or job.result is None:
        return ""
    r = job.result
    pols = r.get("policies") or []
    facts = [["method", job.method.upper()], ["policies found", len(pols)], ["nodes evaluated", r.get("nodes_evaluated")],
             ["search seconds", r.get("seconds")]]
    for key, label in (("lattice_size", "lattice size"), ("minimal_nodes", "k-minimal nodes"),
                       ("acceptable_nodes", "acceptable nodes")):
        if key in r:
            facts.append([label, r[key]])
    rows = []
    picked = ws.node["index"] if ws.node else None
    for i, p in enumerate(pols):
        what = _levels(p["levels"]) if "levels" in p else f"{sum(c == '0' for c in p.get('bits', ''))} merges"
        can_pick = i == 0 or job.method == "ola"
        button = (f"<button type='button' data-action='/api/node' data-node='{i}' id='pick-{i}'>"
                  f"{'picked' if picked == i else 'pick'}</button>" if can_pick else "")
        rows.append([Raw(f"{i + 1}{' (best)' if i == 0 else ''}"), what, p.get("risk"), p.get("information_loss"),
                     p.get("suppressed_records", 0), Raw(button)])
    head = ("<h3>Candidates</h3><p class='hint'>Same search as <code>" + esc(job.command) + "</code>. Best first; "
            "risk is the criterion's measure on the node, information loss the search's loss.</p>")
    img = f"<img class='plot' alt='risk against information loss of the candidates' src='data:image/png;base64,{plot}'>"
    rv = r.get("release_verdict")
    if rv is not None and pols:  # the verdict deid apply gives the best candidate's release, as the search's last line
        head += verdict(rv["meets"], f"The best candidate's release {'meets' if rv['meets'] else 'does not meet'} "
                                     f"the threshold {number(rv['threshold'])}: overall risk "
                                     f"{number(rv['overall_risk'])}, measured as the {rv['measure']}; "
                                     f"{number(rv['suppressed_records'])} of {number(rv['records'])} records suppressed.")
    return (head + table(["", "value"], facts, "facts")
            + table(["#", "node (levels)" if job.method != "bps" else "policy", "risk", "information loss",
                     "suppressed records", ""], rows, "candidates") + img)


# ------------------------------------------------------------------ step 4

def node_view(ws: Workspace) -> str:
    node = ws.node
    if node is None:
        return "<p class='hint'>Pick a candidate in step 3.</p>"
    report = node["report"]
    steps = report["steps"]
    ev, tr = steps["5_evidence"], steps["4_transformation"]
    ok = bool(ev["meets_threshold"])
    columns = []
    for f in tr["columns"]:
        level = f"{f['level_to']} of {f['height']}" if "level_to" in f else "—"
        example = f.get("example")
        ex = f"{example['before']} → {example['after']}" if example else "—"
        columns.append([f["column"], f["role"], f.get("text", ""), level, f.get("distinct_before", "—"),
                        f.get("distinct_after", "—"), f.get("cells_suppressed", 0), ex])
    loss_rows = [[r["column"], r.get("entropy_percent"), r.get("precision")] for r in ev.get("loss_per_column", [])]
    rb, ra = ev["risk_before"], ev["risk_after"]
    risk_rows = [["smallest class", rb.get("k_min"), ra.get("k_min")],
                 ["prosecutor risk, maximum", rb["prosecutor"]["max"], ra["prosecutor"]["max"]],
                 ["prosecutor risk, average", rb["prosecutor"]["average"], ra["prosecutor"]["average"]],
                 ["overall risk under the attack model", ev["overall_risk_before"], ev["overall_risk"]],
                 ["suppressed records", 0, ra.get("suppressed_records", 0)]]
    images = "".join(f"<figure><img class='plot' alt='{esc(title)}' src='data:image/png;base64,{node['images'][key]}'>"
                     f"<figcaption>{esc(title)}</figcaption></figure>"
                     for key, title in (("ec_histogram", "records by class size, before and after"),
                                        ("risk_per_record", "risk per record, before and after")) if key in node["images"])
    c = node["candidate"]
    return (f"<h3 id='node-title'>Candidate {node['index'] + 1}" + (f": {esc(_levels(c['levels']))}" if "levels" in c else "")
            + "</h3>"
            + verdict(ok, f"The release {'meets' if ok else 'does not meet'} the threshold "
                          f"{number(steps['2_threshold']['threshold'])}: overall risk {number(ev['overall_risk'])} "
                          f"(before: {number(ev['overall_risk_before'])}); {node['records']:,} records, "
                          f"{number(ra.get('suppressed_records', 0))} suppressed.")
            + table(["", "before", "after"], risk_rows, "risk")
            + "<h3>Per column</h3>"
            + table(["column", "role", "what happened", "level", "distinct before", "distinct after",
                     "cells suppressed", "example"], columns, "effects")
            + (table(["quasi-identifier", "entropy loss %", "precision"], loss_rows, "loss") if loss_rows else "")
            + f"<div class='figures'>{images}</div>"
            + "<h3>Export</h3><p class='downloads'>" + download(ws, "release.csv", "Release (CSV)") + " "
            + download(ws, "policy.json", "Policy (JSON)") + " " + download(ws, "report.html", "Ethics-board page (HTML)")
            + " " + download(ws, "spec.toml", "Spec (TOML)") + "</p>"
            + "<p class='hint'>The release and the policy are what <code>deid search … --out RELEASE.csv "
              "--policy-out POLICY.json</code> writes for the best candidate; the page is the report of "
              "<code>deid assess --html</code>. Re-apply the policy to the next batch with <code>deid apply</code>.</p>")
