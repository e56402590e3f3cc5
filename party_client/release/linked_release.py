"""Link, then de-identify: from identified sources to a safe release, in three phases.

``link_release`` runs a join as querier and keeps the joined table in memory (no identifier is written
to disk on the querier's side) — :func:`link`; drops the direct identifiers named in the
de-identification spec, applies a method of ``deid_core`` (Safe Harbor, a saved policy, or a risk
threshold found by the optimal lattice search, :func:`deid_core.optimal_release`) and re-assesses the
release from scratch — :func:`party_client.release.deidentification.deidentify`; and writes the release plus
JSON and HTML reports that also record the linkage — :func:`write` (El Emam & Arbuckle, ch. 12: "data
sets must be linked before anonymization").
"""
from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd

import deid_core
from party_client.errors import ParameterError, PartyError
from party_client.matching.level_rules import LevelRules
from party_client.matching.term_rules import Rules
from party_client.matching.rules_file import load_rules
from party_client.files import check_output, read_table, write_table

from .deidentification import METHODS, DeidentifiedRelease, deidentify
from .linkage import LinkageSummary, linkage_prose, linkage_section

TITLE = "Linked release: de-identification report"


def _linking_columns(id_column: str | None, rules) -> list[str]:
    if rules is None:
        return [id_column]
    rules = rules if isinstance(rules, (Rules, LevelRules)) else load_rules(rules)
    return sorted({column for f in rules.fields.values() for column in getattr(f, "columns", [f.column])})


def link(party, holder: str, frame: pd.DataFrame, spec: deid_core.Spec, id_column: str | None, rules,
         **join_options) -> tuple[pd.DataFrame, LinkageSummary]:
    """Phase 1: join with ``holder`` as querier; the linking columns must be direct identifiers in ``spec``."""
    for column in _linking_columns(id_column, rules):
        if spec.columns.get(column) != "direct":
            raise PartyError(f"column '{column}' is used for linking: declare it \"direct\" in the spec")
    linked = party.join(holder, frame, id_column, rules=rules, **join_options)
    matching = "rules" if rules is not None else f"exact on {id_column}"
    return linked.frame, LinkageSummary.from_join(linked.report, matching=matching)


def _reapply_command(link_summary: LinkageSummary, id_column: str | None, rules, policy_file: Path) -> str:
    match = f"--id-column {id_column}" if rules is None else "--rules RULES.toml"
    if link_summary.assignment:             # the same choice among a record's matches
        match += " --one-to-one" + (" --duplicate-free" if "--duplicate-free" in link_summary.assignment else "")
    return (f"party link-release --dir PARTY_DIR --holder {link_summary.holder} --input NEXT.csv {match} "
            f"--spec SPEC.toml --method policy --policy {policy_file} --out RELEASE.csv --report-dir REPORT_DIR")


def write(release: DeidentifiedRelease, link_summary: LinkageSummary, *, name: str, out: str | Path,
          report_dir: Path, input_policy: str | None, id_column: str | None, rules) -> dict:
    """Phase 3: the release, its policy (never over the input policy), the JSON report and its page."""
    ra = release.assessment
    policy_file = report_dir / "release_policy.json"
    report = deid_core.build_report(ra, input_name=name, title=TITLE,
                                    reapply={"command": _reapply_command(link_summary, id_column, rules, policy_file),
                                             "policy_file": str(policy_file)})
    prose = linkage_prose(link_summary)
    report["linkage"] = {**link_summary.to_dict(), **prose}
    check = release.identifier_check
    report.update(deidentification=release.method_info, release=str(out),
                  released_columns=list(release.output.columns), column_fates=release.fates,
                  identifier_check=check, accepted_columns=check["accepted_columns"])
    write_table(release.output, out)
    if not (input_policy and Path(input_policy).resolve() == policy_file.resolve()):
        deid_core.Policy.from_dict(release.method_info["policy"]).save(policy_file)
    (report_dir / "release_report.json").write_text(json.dumps(report, indent=2, default=str))
    page = deid_core.release_page(ra, report, preface=[linkage_section(prose)])
    (report_dir / "release_report.html").write_text(page)
    summary = ra.release.summary
    return {"release": str(out), "report": str(report_dir / "release_report.json"),
            "html": str(report_dir / "release_report.html"), "records": int(len(release.output)),
            "matched_records": link_summary.matched_records, "k_min": summary.get("k_min"),
            "max_risk": summary["prosecutor"]["max"], "meets_threshold": ra.verdict["meets_threshold"],
            "persons": summary.get("persons"), "seconds": link_summary.linked_seconds}


def _load_spec(spec: str | Path, threshold: float | None) -> deid_core.Spec:
    try:
        spec_obj = deid_core.load_spec(spec)
    except deid_core.DeidInputError as error:
        raise PartyError(str(error)) from None
    if threshold is not None:
        if not 0 < threshold <= 1:
            raise ParameterError("threshold", "{name} must lie in (0, 1]")
        spec_obj = replace(spec_obj, release=replace(spec_obj.release, threshold=threshold))
    return spec_obj


def link_release(party, holder: str, data, *, spec: str | Path, method: str, out: str | Path,
                 report_dir: str | Path, id_column: str | None = None, rules=None,
                 policy: str | None = None, threshold: float | None = None, max_suppression: float = 0.0,
                 accepted: dict | None = None, key: bytes | None = None, **join_options) -> dict:
    """Join with ``holder``, de-identify with ``method``, write the release and its reports.

    Every column of the joined table needs a fate in the spec (``[columns]`` or its ``default``) and
    the release is scanned for identifiers before anything is written (``deid_core.detect``);
    ``accepted`` ({column: reason}) lets named columns through, recorded in the report; ``key``, the data
    owner's, replaces notes by surrogates (``[text] mode = "surrogate"``) and opens a policy's keyed steps.
    """
    started = time.perf_counter()
    report_dir = Path(report_dir)
    if not report_dir.is_dir():
        raise PartyError(f"report folder {report_dir} does not exist")
    check_output(out, *([data] if not isinstance(data, pd.DataFrame) else []))
    if method not in METHODS:
        raise ParameterError("method", "{name} must be one of " + ", ".join(METHODS))
    spec_obj = _load_spec(spec, threshold)
    frame = data if isinstance(data, pd.DataFrame) else read_table(data)
    joined, link_summary = link(party, holder, frame, spec_obj, id_column, rules, **join_options)
    release = deidentify(joined, spec_obj, method=method, policy=policy, threshold=threshold,
                         max_suppression=max_suppression, accepted=accepted, id_column=id_column,
                         querier_columns=list(frame.columns), key=key)
    link_summary = replace(link_summary, linked_seconds=round(time.perf_counter() - started, 2))
    return write(release, link_summary, name=f"join of {party.name} with {holder}", out=out,
                 report_dir=report_dir, input_policy=policy, id_column=id_column, rules=rules)
