"""Link, then de-identify: from identified sources to a safe release, and
de-duplication across many registries.

``link_release`` runs a join as querier, keeps the joined table in memory
(no identifier is written to disk on the querier's side), drops the direct
identifiers named in the de-identification spec, applies a method of
``deid_core`` (Safe Harbor, a saved policy, or a risk threshold found by the
optimal lattice search, :func:`deid_core.optimal_release`), re-assesses the release from scratch
and writes the release plus JSON and HTML reports that also record the
linkage (book ch. 12: "data sets must be linked before anonymization").

``dedup_many`` runs one dedup session per other registry, in parallel, and
reports per own record which registries also hold it — nothing about
records it does not hold (docs/protocol.md, "De-duplication between many registries").
"""
from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

import deid_core
from deid_core.detect import check_release
from deid_core.report import plots
from deid_core.longitudinal.persons import level1_table
from deid_core.spec import LongitudinalSpec
from party_client.errors import PartyError
from party_client.matching.level_rules import LevelRules
from party_client.matching.rules import Rules
from party_client.matching.rules_file import load_rules
from party_client.tables import check_output, read_table, write_table

METHODS = ("safe-harbor", "policy", "threshold")


def _linking_columns(id_column: str | None, rules) -> list[str]:
    if rules is None:
        return [id_column]
    rules = rules if isinstance(rules, (Rules, LevelRules)) else load_rules(rules)
    return sorted({column for f in rules.fields.values() for column in getattr(f, "columns", [f.column])})


def _release_spec(spec: deid_core.Spec, columns: list[str]) -> deid_core.Spec:
    """The spec restricted to what is released, without hierarchies: a re-assessment from scratch."""
    return replace(spec, columns={c: r for c, r in spec.columns.items() if c in columns and r != "direct"},
                   types={}, hierarchies={}, levels={}, record_suppression=False)


def _person_column(spec: deid_core.Spec, joined: pd.DataFrame, id_column: str | None) -> str | None:
    """The column whose rows belong to one person: the spec's ``[longitudinal] person``, else the querier's
    key when the join has multiplicity (a key matched by several holder rows repeats in the joined table)."""
    if spec.longitudinal is not None:
        return spec.longitudinal.person
    if id_column and id_column in joined.columns and joined[id_column].dropna().duplicated().any():
        return id_column
    return None


def _per_person(spec: deid_core.Spec, output: pd.DataFrame, joined: pd.DataFrame, person: str,
                querier_columns: list[str]) -> tuple[deid_core.Spec, pd.DataFrame]:
    """A spec and released table assessed per person: the person column put back (as a direct identifier,
    dropped again by the assessment) and ``[longitudinal]`` set (El Emam & Arbuckle, ch. 4). Without the
    spec's own section, the querier's quasi-identifiers are level 1 (one querier record per person, so
    fixed per person) when they are the same on all of a person's rows, the holder's are level 2."""
    if len(output) != len(joined):
        raise deid_core.DeidInputError("the release does not keep the joined rows: cannot count persons")
    frame = output.copy()
    frame.insert(0, person, joined[person].to_numpy())
    quasi = tuple(c for c, r in spec.columns.items() if r == "quasi" and c in output.columns)
    lg = spec.longitudinal
    if lg is None:
        level1 = tuple(c for c in quasi if c in querier_columns)
        try:
            level1_table(frame, person=person, level1=list(level1))
        except deid_core.DeidInputError:  # the querier's own table has several rows per person
            level1 = ()
        lg = LongitudinalSpec(person=person, level1=level1, level2=tuple(c for c in quasi if c not in level1))
    lg = replace(lg, level1=tuple(c for c in lg.level1 if c in output.columns),
                 level2=tuple(c for c in lg.level2 if c in output.columns))
    return replace(spec, columns={person: "direct", **spec.columns}, longitudinal=lg), frame


def _deidentify(joined: pd.DataFrame, spec: deid_core.Spec, method: str, policy_path: str | None,
                threshold: float | None, max_suppression: float,
                accepted: dict | None = None) -> tuple[pd.DataFrame, dict]:
    if method == "safe-harbor":
        output, policy, info = deid_core.safe_harbor(joined, spec, accepted=accepted)
        return output, {"method": method, "policy": policy.to_dict(), "recognized": info}
    if method == "policy":
        if not policy_path:
            raise PartyError("--method policy needs --policy POLICY.json (a saved deid policy)")
        policy = deid_core.Policy.load(policy_path)
        output, context = policy.apply(joined)
        return output, {"method": method, "policy": policy.to_dict(), "policy_file": str(policy_path),
                        "warnings": context.get("warnings", [])}
    if method == "threshold":
        return _optimal_release(joined, spec, threshold, max_suppression)
    raise PartyError(f"--method must be one of {', '.join(METHODS)}")


def _optimal_release(joined: pd.DataFrame, spec: deid_core.Spec, threshold: float | None,
                     max_suppression: float) -> tuple[pd.DataFrame, dict]:
    """The full-domain node of least loss whose release meets the threshold under the attack model
    (:func:`deid_core.optimal_release`, OLA; El Emam & Arbuckle, ch. 2, "Probability Metrics")."""
    threshold = threshold if threshold is not None else spec.release.threshold
    if not 0 < threshold <= 1:
        raise PartyError("--threshold must lie in (0, 1]")
    found = deid_core.optimal_release(joined, spec, threshold=threshold, max_suppression=max_suppression)
    if found.policy is None:
        raise PartyError(f"no generalization meets the threshold {threshold} with at most "
                         f"{max_suppression:.0%} of the records suppressed")
    best = found.best
    return found.apply(joined), {"method": "threshold", "threshold": threshold, "policy": found.policy.to_dict(),
                                 "levels": best["levels"], "suppressed_records": best["suppressed_records"],
                                 "nodes_evaluated": found.search.nodes_evaluated,
                                 "search_seconds": round(found.search.seconds, 3)}


def _applied_policy(spec: deid_core.Spec, method_info: dict) -> deid_core.Policy:
    """The method's policy plus the drop of every direct identifier it did not drop itself."""
    policy = deid_core.Policy.from_dict(method_info["policy"])
    dropped = {c for st in policy.steps if st["op"] == "drop" for c in st.get("columns", [])}
    rest = [c for c in spec.direct if c not in dropped]
    return replace(policy, steps=policy.steps + ([{"op": "drop", "columns": rest}] if rest else []))


SCHEME_TITLES = {"paillier": "Paillier", "ec": "exponential ElGamal on Ed25519"}


def _linkage_table(linkage: dict) -> dict:
    """The linkage section of the report: the rows of its table, a sentence, and what each party learned."""
    seconds = linkage.get("seconds") or {}
    querier, holder = linkage.get("querier"), linkage.get("holder")
    released = ", ".join(linkage.get("release_columns") or []) or "none"
    table = {
        "querier (ran the join, wrote this report)": querier, "holder": holder,
        "key holder": "K: registers parties, relays sealed messages, decides which blinded comparisons are zero",
        "scheme": f"{SCHEME_TITLES.get(linkage.get('scheme') or 'paillier', linkage.get('scheme'))}, "
                  f"{linkage.get('key_bits')}-bit keys, {linkage.get('blinding')} blinding",
        "mode": linkage.get("mode"), "matching": linkage.get("matching"), "blocking": linkage.get("blocking"),
        "querier's records": linkage.get("records"), "matched records": linkage.get("matched_records"),
        "blank identifiers (never match)": linkage.get("blank_identifiers"),
        "columns received from the holder": released,
        "time": "; ".join(f"{k.replace('_', ' ')} {v} s" for k, v in seconds.items()) + "; "
                f"link and release {linkage.get('linked_seconds')} s",
        "session": linkage.get("session_id"),
    }
    learned = {
        f"querier ({querier})": {
            "learned": f"which of its {linkage.get('records')} records matched ({linkage.get('matched_records')}); "
                       f"the holder's columns {released} for the matched rows only, kept in memory",
            "never": "the holder's row count, its non-matching rows, anything about records it does not hold"},
        f"holder ({holder})": {
            "learned": "the padded size of the querier's table",
            "never": "which of its rows matched, the querier's identifiers"},
        "key holder": {
            "learned": "which parties take part; mode, key size, padded table size, number of comparisons, how many "
                       "rows matched; sizes of relayed blobs",
            "never": "an identifier, an encoding, a bin position, a released value"},
    }
    summary = (f"{querier} linked its records with {holder}'s by secure matching (El Emam & Arbuckle, ch. 12, "
               "“Secure Linking”): identifiers were compared only under encryption, and no identifier was written "
               "to disk on the querier's side.")
    return {"table": table, "learned": learned, "summary": summary}


def _release_report(joined: pd.DataFrame, output: pd.DataFrame, assessment, spec: deid_core.Spec, method_info: dict,
                    linkage: dict, name: str, policy_file: Path) -> tuple[dict, object]:
    """The report dict: the joined table (direct identifiers set aside) measured before, the release after."""
    before_spec = replace(spec, columns={c: r for c, r in spec.columns.items() if c in joined.columns},
                          types={}, hierarchies={}, levels={}, record_suppression=False)
    before = deid_core.assess(joined, before_spec)
    match = f"--id-column {linkage['matching'][len('exact on '):]}" if linkage["matching"].startswith("exact on ") \
        else "--rules RULES.toml"
    command = (f"party link-release --dir PARTY_DIR --holder {linkage.get('holder')} --input NEXT.csv {match} "
               f"--spec SPEC.toml --method policy --policy {policy_file} --out RELEASE.csv --report-dir REPORT_DIR")
    report = deid_core.build_report(assessment, input_name=name, source=joined, before=before,
                                    policy=_applied_policy(spec, method_info),
                                    reapply={"command": command, "policy_file": str(policy_file)})
    report["title"] = "Linked release: de-identification report"
    report["linkage"] = dict(linkage, **_linkage_table(linkage))
    return report, before


def link_release(party, holder: str, data, *, spec: str | Path, method: str, out: str | Path,
                 report_dir: str | Path, id_column: str | None = None, rules=None,
                 policy: str | None = None, threshold: float | None = None, max_suppression: float = 0.0,
                 accepted: dict | None = None, **join_options) -> dict:
    """Join with ``holder``, de-identify with ``method``, write the release and its reports.

    Every column of the joined table needs a fate in the spec (``[columns]`` or its ``default``) and
    the release is scanned for identifiers before anything is written (``deid_core.detect``);
    ``accepted`` ({column: reason}) lets named columns through, recorded in the report.
    """
    started = time.perf_counter()
    report_dir = Path(report_dir)
    if not report_dir.is_dir():
        raise PartyError(f"report folder {report_dir} does not exist")
    check_output(out, *([data] if not isinstance(data, pd.DataFrame) else []))
    if method not in METHODS:
        raise PartyError(f"--method must be one of {', '.join(METHODS)}")
    try:
        spec_obj = deid_core.load_spec(spec)
    except deid_core.DeidInputError as error:
        raise PartyError(str(error)) from None
    if threshold is not None:
        if not 0 < threshold <= 1:
            raise PartyError("--threshold must lie in (0, 1]")
        spec_obj = replace(spec_obj, release=replace(spec_obj.release, threshold=threshold))
    frame = data if isinstance(data, pd.DataFrame) else read_table(data)
    for column in _linking_columns(id_column, rules):
        if spec_obj.columns.get(column) != "direct":
            raise PartyError(f"column '{column}' is used for linking: declare it \"direct\" in the spec")
    linked = party.join(holder, frame, id_column, rules=rules, **join_options)
    joined = linked.frame
    try:
        spec_obj.check_columns(joined.columns)
        fates = spec_obj.fates(joined.columns)
        spec_obj = spec_obj.resolve(joined.columns)
        output, method_info = _deidentify(joined, spec_obj, method, policy, threshold, max_suppression, accepted)
        output = output.drop(columns=[c for c in spec_obj.direct if c in output.columns])
        applied = deid_core.Policy.from_dict(method_info["policy"])
        fates = {**fates, **{c: f for c, f in applied.step_columns().items() if f == "masked"}}
        check = check_release(output, fates, accepted=accepted, masked=[c for c, f in fates.items() if f == "masked"],
                              safe_harbor=method == "safe-harbor" or (method == "policy" and applied.is_safe_harbor()))
        method_info["policy"] = applied.with_fates({c: f for c, f in fates.items() if f != "masked"}, spec_obj.rest,
                                                   method == "safe-harbor").to_dict()
        release_spec, assessed = _release_spec(spec_obj, list(output.columns)), output
        person = _person_column(spec_obj, joined, id_column)
        if person is not None:  # several rows per person: class sizes count persons, not rows
            release_spec, assessed = _per_person(release_spec, output, joined, person, list(frame.columns))
            spec_obj = replace(spec_obj, longitudinal=release_spec.longitudinal)
        assessment = deid_core.assess(assessed, release_spec)
    except deid_core.DeidInputError as error:
        raise PartyError(f"de-identification: {error}") from None
    linkage = {key: linked.report.get(key) for key in
               ("mode", "querier", "holder", "session_id", "scheme", "key_bits", "blinding", "records", "matched_records",
                "output_rows", "release_columns", "blank_identifiers", "tables", "seconds")}
    linkage.update(matching="rules" if rules is not None else f"exact on {id_column}",
                   blocking="none: every holder row is compared with padded tables, nothing travels in the clear",
                   linked_seconds=round(time.perf_counter() - started, 2))
    policy_file = report_dir / "release_policy.json"
    report, before = _release_report(joined, output, assessment, spec_obj, method_info, linkage,
                                     f"join of {party.name} with {holder}", policy_file)
    report.update(deidentification=method_info, release=str(out),
                  released_columns=list(output.columns), column_fates=fates, identifier_check=check,
                  accepted_columns=check["accepted_columns"])
    summary = assessment.summary
    write_table(output, out)
    if not (policy and Path(policy).resolve() == policy_file.resolve()):   # never over the input policy
        deid_core.Policy.from_dict(method_info["policy"]).save(policy_file)
    (report_dir / "release_report.json").write_text(json.dumps(report, indent=2, default=str))
    page = deid_core.render_html(report, plots(assessment, before))
    (report_dir / "release_report.html").write_text(page)
    return {"release": str(out), "report": str(report_dir / "release_report.json"),
            "html": str(report_dir / "release_report.html"), "records": int(len(output)),
            "matched_records": linkage["matched_records"], "k_min": summary.get("k_min"),
            "max_risk": summary["prosecutor"]["max"], "meets_threshold": assessment.attack["meets_threshold"],
            "persons": summary.get("persons"),
            "seconds": linkage["linked_seconds"]}


def dedup_many(party, registries: list[str], data, *, id_column: str | None = None, rules=None,
               column: str = "also_held_by", **options) -> tuple[pd.DataFrame, dict]:
    """Per own record, the other registries that also hold it (pairwise dedup sessions in parallel)."""
    registries = [r for r in dict.fromkeys(registries) if r and r != party.name]
    if not registries:
        raise PartyError("--registries names no other registry")
    frame = data if isinstance(data, pd.DataFrame) else read_table(data)
    if column in frame.columns:
        raise PartyError(f"the input already has a column '{column}'")

    def one(registry: str):
        return registry, party.dedup(registry, frame, id_column, rules=rules, **options)
    with ThreadPoolExecutor(max_workers=len(registries)) as pool:
        results = dict(pool.map(one, registries))
    listed = pd.Series("", index=range(len(frame)), dtype=object)
    for registry in registries:
        listed = listed + np.where(results[registry].frame["matched"].to_numpy(), registry + ";", "")
    output = frame.reset_index(drop=True).assign(**{column: listed.str.rstrip(";")})
    report = {r: {"matched_records": results[r].report["matched_records"], "session_id": results[r].report["session_id"]}
              for r in registries}
    return output, report


__all__ = ["link_release", "dedup_many", "METHODS"]
