"""The workbench's steps as calls into the library: load and profile a table (read as text, identifier
detection, safe examples), assess, search (the very function ``deid search`` runs), pick a node (its release,
policy and the ethics-board report of ``deid_core.report``) and write the exports. No de-identification
logic lives here; every number comes from :mod:`deid_core`."""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Mapping

import pandas as pd

from ..assess import assess
from ..assessing import assess_release
from ..detect import check_release, scan
from ..errors import DeidInputError
from ..hierarchy import from_csv
from ..io import read_table, require_records, write_table, write_text
from ..release_search import METHOD_OPTIONS, SearchOptions, search_release
from ..releasing import apply_policy
from ..report import EXAMPLE_MIN_RECORDS, build_report, plots, release_page, search_plot
from ..spec import Spec, load_spec
from ..transform.keys import environment_key
from ..transform.policy import Policy
from .specform import SpecForm
from .workspace import SearchJob, Workspace

#: Methods the workbench runs; the candidate list of ``ola`` can be browsed node by node.
METHODS = ("ola", "lola", "bps")
#: matplotlib's pyplot is not thread-safe: one plot at a time across tabs.
PLOT_LOCK = threading.Lock()
#: Shown examples per column (each held by at least EXAMPLE_MIN_RECORDS records).
EXAMPLES = 3


def load_table(ws: Workspace, path: Path, name: str) -> None:
    """Read an uploaded CSV/Parquet file as text (no type inference), profile it and start a fresh form."""
    table = read_table(path)
    require_records(table, repr(name))
    if len(table.columns) == 0:
        raise DeidInputError(f"{name!r} has no columns")
    findings, scanned = scan(table)
    profile = []
    for column in table.columns:
        counts = table[column].value_counts(dropna=True)
        safe = counts[counts >= EXAMPLE_MIN_RECORDS].head(EXAMPLES)
        profile.append({"column": column, "distinct": int(len(counts)), "missing": int(table[column].isna().sum()),
                        "findings": [f.description for f in findings.get(column, [])],
                        "examples": [(str(v), int(n)) for v, n in safe.items()]})
    ws.reset_after_table()
    ws.input_path, ws.input_name, ws.table = path, name, table
    ws.profile, ws.scanned = profile, scanned
    ws.form = SpecForm.for_columns(list(table.columns), findings)


def require_table(ws: Workspace) -> pd.DataFrame:
    if ws.table is None or ws.form is None:
        raise DeidInputError("load a table first (step 1)")
    return ws.table


def update_form(ws: Workspace, fields: Mapping[str, str]) -> None:
    """Apply the posted form; the spec is re-validated (an error is shown, the form keeps what was typed)."""
    require_table(ws)
    ws.form.update(fields)
    ws.reset_after_spec()


def spec_status(ws: Workspace) -> tuple[str, str | None]:
    """The TOML text of the form (or "") and the one-line reason it is not a valid spec yet (or None)."""
    try:
        text = ws.form.toml()
    except DeidInputError as error:
        return "", str(error)
    try:
        spec = ws.form.spec()
        spec.check_columns(ws.table.columns)
        spec.fates(ws.table.columns)
    except DeidInputError as error:
        return text, str(error)
    return text, None


def upload_hierarchy(ws: Workspace, column: str, path: Path, name: str) -> None:
    """An ARX-layout hierarchy file for ``column`` (read by :func:`deid_core.hierarchy.from_csv`), embedded."""
    require_table(ws)
    ws.form.set_rows(column, from_csv(path, name=column).rows(), name)
    ws.reset_after_spec()


def upload_spec(ws: Workspace, path: Path) -> None:
    """A TOML spec fills the form (its hierarchies embedded; one naming a file is refused: the workbench reads
    only what is uploaded)."""
    require_table(ws)
    text = path.read_bytes().decode("utf-8")
    ws.form = SpecForm.from_toml(text, list(ws.table.columns))
    ws.reset_after_spec()


def current_spec(ws: Workspace) -> Spec:
    """The form's spec, checked against the table; written to the workspace as ``spec.toml`` and read back."""
    table = require_table(ws)
    text, error = spec_status(ws)
    if error:
        raise DeidInputError(f"the spec is not complete: {error}")
    write_text(text, ws.path("spec.toml"))
    spec = load_spec(ws.path("spec.toml"))  # what `deid search --spec` reads from the downloaded file
    spec.check_columns(table.columns)
    return spec


def _population(ws: Workspace, spec: Spec) -> pd.DataFrame | None:
    return read_table(ws.population_path, spec.missing_values, categorical=False) if ws.population_path else None


def assess_table(ws: Workspace) -> dict:
    """Risk of the table as it is (prosecutor; journalist and marketer with a population table; per person
    with ``[longitudinal]``) under the spec's attack model, and the verdict."""
    spec = current_spec(ws)
    table = read_table(ws.input_path, spec.missing_values)
    a = assess(table, spec, _population(ws, spec))
    ws.assessment = {"summary": a.summary, "attack": a.attack, "longitudinal": spec.longitudinal is not None,
                     "population": ws.population_name}
    return ws.assessment


#: The search form's fields that take numbers -> their type (the library checks their ranges).
NUMBER_FIELDS = {"max_suppression": float, "top": int, "iterations": int, "seed": int}


def search_options(ws: Workspace, options: Mapping[str, str], spec: Spec) -> SearchOptions:
    """The search form's fields as the library's options; a field the chosen method does not use is left
    out, as the form greys it out.  Values are read as numbers here and checked by the library, as the
    flags of ``deid search`` are."""
    method = options.get("method", "ola")
    if method not in METHODS:
        raise DeidInputError(f"method must be one of {', '.join(METHODS)}")
    chosen: dict = {"method": method, "apply_best": True, "reapplicable": True}
    value = (options.get("value") or "").strip()
    if value:
        name = "k" if options.get("criterion", "k") == "k" else "threshold"
        chosen[name] = _number(value, int if name == "k" else float, name)
    for name, kind in NUMBER_FIELDS.items():
        text = (options.get(name) or "").strip()
        if text and method in METHOD_OPTIONS.get(name, ((method,), None))[0]:
            chosen[name] = _number(text, kind, name)
    loss = (options.get("loss") or "").strip()
    if loss and method in METHOD_OPTIONS["loss"][0]:
        chosen["loss"] = loss
    if method == "bps" and ws.population_path is not None:
        chosen["population"] = _population(ws, spec)
    return SearchOptions(**chosen, key=environment_key()).resolved()   # surrogates: `DEID_KEY=... deid ui`


def _number(text: str, kind: type, name: str) -> int | float:
    try:
        return kind(text)
    except ValueError:
        raise DeidInputError(f"{name.replace('_', ' ')} must be {'a whole number' if kind is int else 'a number'}, "
                             f"got {text!r}") from None


def command_line(ws: Workspace, options: SearchOptions) -> str:
    """The shell command a user would type for the same search (the workspace's files by their names)."""
    words = ["deid search --input", ws.input_name, "--spec spec.toml --method", options.method]
    for name in ("k", "threshold", "max_suppression", "loss", "top", "iterations", "seed"):
        value = getattr(options, name)
        if value is not None and value != METHOD_OPTIONS.get(name, ((), None))[1]:
            words += [f"--{name.replace('_', '-')}", f"{value:g}" if isinstance(value, float) else str(value)]
    if options.population is not None:
        words += ["--population", ws.population_name or "population.csv"]
    return " ".join(words + ["--report result.json --out release.csv --policy-out policy.json"])


def start_search(ws: Workspace, options: Mapping[str, str]) -> SearchJob:
    """Run the library's search (:func:`deid_core.release_search.search_release`, the one ``deid search``
    runs) on the form's options in a thread that reports its progress
    (:data:`deid_core.algorithm.result.progress_sink`)."""
    from ..algorithm.result import progress_sink

    if ws.job is not None and not ws.job.finished:
        raise DeidInputError("a search is already running in this tab")
    spec = current_spec(ws)
    chosen = search_options(ws, options, spec)
    table = read_table(ws.input_path, spec.missing_values)
    job = SearchJob(method=chosen.method)
    job.command, job.spec, job.table = command_line(ws, chosen), spec, table
    ws.job, ws.node = job, None

    def run() -> None:
        progress_sink.set(job.progress)
        t0 = time.perf_counter()
        try:
            found = search_release(table, spec, chosen)
            job.result, job.release = found.summary, found.release
        except DeidInputError as error:
            job.error = str(error)
        except MemoryError:
            job.error = "out of memory"
        except Exception as error:  # noqa: BLE001 - a page shows one line, never a traceback
            job.error = f"the search failed ({type(error).__name__}: {' '.join(str(error).split())[:200]})"
        job.seconds = time.perf_counter() - t0
        job.finished = True

    threading.Thread(target=run, name=f"deid-ui-search-{ws.id[:8]}", daemon=True).start()
    return job


def risk_loss_plot(result: dict) -> str:
    """The search's risk vs information loss plot (``deid search --html``'s), base64 PNG."""
    with PLOT_LOCK:
        return search_plot(result)


def _node_release(job: SearchJob, index: int) -> tuple[pd.DataFrame, Policy, dict | None]:
    """The release, policy and notes counts (``text`` columns) of candidate ``index``: the best one exactly as
    ``deid search --out`` writes it; another OLA node through the same release policy, re-assessed and
    checked for identifiers."""
    from ..algorithm.full_domain import full_domain_release_policy

    spec, table, result = job.spec, job.table, job.result
    if index == 0:
        if job.release is None or not result.get("best_policy"):
            raise DeidInputError("the search found no policy to apply")
        notes = (result.get("identifier_check") or {}).get("notes")
        return job.release, Policy.from_dict(result["best_policy"]), notes
    if job.method != "ola":
        raise DeidInputError(f"only the best {job.method.upper()} policy can be released from the workbench")
    node = result["policies"][index]
    lg = spec.longitudinal
    policy = full_domain_release_policy(spec, list(node["levels"]), node["levels"], node["suppression_k"],
                                        person=lg.person if lg is not None else None)
    fates = spec.fates(table.columns)
    key = environment_key()
    policy = policy.with_fates(fates, spec.rest, False, text=spec.text.to_dict(), key=key)
    release, ctx = apply_policy(policy, table, key=key)
    release = release.drop(columns=[c for c in spec.direct if c in release.columns])
    check_release(release, fates, safe_harbor=False, notes=ctx.get("notes"))
    return release, policy, ctx.get("notes")


def pick_node(ws: Workspace, index: int) -> dict:
    """Release candidate ``index``: the release, its policy and the ethics-board page (the renderer of
    ``deid assess --html``), written to the workspace for download."""
    job = ws.job
    if job is None or not job.finished or job.result is None:
        raise DeidInputError("run a search first (step 3)")
    policies = job.result.get("policies") or []
    if not 0 <= index < len(policies):
        raise DeidInputError("no such candidate: run the search again")
    release, policy, notes = _node_release(job, index)
    spec, table = job.spec, job.table
    ra = assess_release(table, spec, release, policy=policy, population=_population(ws, spec), notes=notes)
    report = build_report(ra, input_name=ws.input_name,
                          reapply={"command": "deid apply --input NEXT.csv --policy policy.json --out RELEASE.csv",
                                   "policy_file": "policy.json"})
    with PLOT_LOCK:
        images = plots(ra.release, ra.original)
    write_table(release, ws.path("release.csv"))
    policy.save(ws.path("policy.json"))
    write_text(release_page(ra, report, images=images), ws.path("report.html"))
    ws.node = {"index": index, "candidate": policies[index], "report": report, "images": images,
               "records": int(len(release)), "columns": list(release.columns)}
    return ws.node


def export_path(ws: Workspace, name: str) -> Path:
    """A file the workspace made for download: ``spec.toml``, ``release.csv``, ``policy.json``, ``report.html``."""
    if name == "spec.toml":
        current_spec(ws)
    elif name in ("release.csv", "policy.json", "report.html"):
        if ws.node is None:
            raise DeidInputError("pick a node first (step 3)")
    else:
        raise DeidInputError(f"no export named {name!r}")
    return ws.path(name)
