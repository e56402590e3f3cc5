"""``deid assess``, ``deid safe-harbor`` and ``deid apply`` (docs/deid.md).

Outputs are computed in memory first and written atomically, never over the input.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .longitudinal import add_attack_options, check_attack_options, longitudinal_of, prior_reports
from ..errors import DeidInputError
from .masking import KEY_HELP, REVERSIBLE_BY_TABLE, add_reversal_option, owner_key, sealed_reversal
from .known_options import add_known_options, known_of
from .renamed import Renamed, add_old_spellings, take_old_spellings
from .options import (INPUT_HELP, accepted_columns, add_accept, add_force, add_input_spec, destruction_check, guard_outputs,
                      integer, parse_levels, summary_line)


def person_id_warnings(df, spec) -> list[str]:
    """Without ``[longitudinal]``: a warning for each direct column that plausibly identifies a person across
    rows (:func:`deid_core.assess.person_id_columns`; never a name or an address)."""
    from ..assess import person_id_columns

    if spec.longitudinal is not None:
        return []
    return [f"column {c!r} (direct) repeats values on {n:,} rows that agree with one another as one person's "
            "rows do: risk counted per row is understated; declare [longitudinal] person = \"" + c + "\" to "
            "count persons" for c, n in person_id_columns(df, [c for c in spec.direct if c in df.columns]).items()]


def cmd_assess(args: argparse.Namespace) -> int:
    from ..assessing import assess_release
    from ..io import read_table, require_records, write_json, write_table, write_text
    from ..longitudinal.assessment import AttackOptions
    from ..report import build_report, release_page
    from ..spec import load_spec

    take_old_spellings(args, "assess", required=("report",))
    guard_outputs([args.input, args.spec, args.population, args.key_file, *(args.prior_report or [])],
                  [args.report, args.html, args.out, args.policy_out, args.per_record])
    t0 = time.perf_counter()
    spec = load_spec(args.spec)
    df = read_table(args.input, spec.missing_values)
    require_records(df, repr(args.input))
    releases = bool(args.out or args.policy_out)  # a release (or its recipe) needs every column's fate
    key = owner_key(args.key_file)                 # surrogates in notes: the owner's key (refused without)
    accepted = accepted_columns(args, args.report) if releases else {}
    fates = spec.fates(df.columns) if releases or spec.rest is not None else None
    spec = spec.resolve(df.columns) if fates is not None else spec
    pop = read_table(args.population, spec.missing_values, categorical=False) if args.population else None
    numeric = [c for c in args.numeric.split(",") if c] if args.numeric is not None else None
    if args.attack:
        check_attack_options(args)
        longitudinal_of(spec, "assess --attack")
    if args.complete_knowledge:
        longitudinal_of(spec, "assess --complete-knowledge")
    known = known_of(args, spec)
    notes = {}
    if releases:  # a release's notes are de-identified first, while every hint column is there
        from ..releasing import deidentify_text_columns
        df, notes = deidentify_text_columns(df, fates, spec.text.to_dict(), key)
    attack = AttackOptions(p_max=args.power, model=args.power_model, scale=args.scale, iterations=args.iterations,
                           seed=args.seed, exact=args.exact) if args.attack else None
    ra = assess_release(df, spec, population=pop, levels=parse_levels(args.levels),
                        record_suppression=True if args.suppress else None, numeric=numeric, notes=notes,
                        known=known, progress=True, attack=attack, complete_knowledge=args.complete_knowledge,
                        fates=fates if args.out else None, accepted=accepted)
    a = ra.release
    result = a.to_dict()
    if args.policy_out:
        result["policy"] = a.policy.to_dict(relative_to=Path(args.policy_out).resolve().parent)
    reapply = {"command": f"deid apply --input NEXT.csv --policy {args.policy_out or 'POLICY.json'} --out RELEASE.csv",
               "policy_file": str(args.policy_out or "")}
    warnings = person_id_warnings(df, spec)
    if warnings:
        result["warnings"] = warnings
    if ra.attack is not None:
        result["longitudinal"] = ra.attack
    if ra.complete_knowledge is not None:
        result["complete_knowledge"] = ra.complete_knowledge
    if ra.known is not None:
        result["known"] = ra.known
    result["report"] = build_report(ra, input_name=str(args.input), reapply=reapply,
                                    operations=prior_reports(args.prior_report))
    if ra.identifier_check is not None:
        result["identifier_check"] = ra.identifier_check
        result["accepted_columns"] = ra.identifier_check["accepted_columns"]
    warning = destruction_check("assess", "records", int(a.summary.get("suppressed_records", 0)), len(df),
                                args.force) if releases else None
    result["seconds"] = round(time.perf_counter() - t0, 4)
    html = release_page(ra, result["report"]) if args.html else None  # with the m-of-n adversary and the original
    write_json(result, args.report)
    if html is not None:
        write_text(html, args.html)
    if args.out:
        write_table(a.output, args.out)
    if args.policy_out:
        a.policy.with_fates(fates, spec.rest, False, text=spec.text.to_dict(), key=key).save(args.policy_out)
    if args.per_record:
        write_table(a.per_record, args.per_record)
    for w in [*warnings, *([warning] if warning else [])]:
        print(f"deid: warning: {w}", file=sys.stderr)
    t = a.spec.release.threshold
    summary_line("assess", [args.report, args.html, args.out, args.policy_out, args.per_record],
                 f"{len(df):,} records, {int(a.summary.get('suppressed_records', 0)):,} suppressed; overall risk "
                 f"{a.attack['overall_risk']:.4f} {'meets' if a.attack['meets_threshold'] else 'does NOT meet'} "
                 f"the threshold {t:g}")
    return 0


def cmd_safe_harbor(args: argparse.Namespace) -> int:
    from ..io import read_table, require_records, write_json, write_table
    from ..transform.safe_harbor import safe_harbor
    from ..spec import load_spec

    guard_outputs([args.input, args.spec, args.zip_population, args.key_file], [args.out, args.policy_out, args.report])
    key = owner_key(args.key_file)
    accepted = accepted_columns(args, args.report)
    spec = load_spec(args.spec)
    df = read_table(args.input, spec.missing_values)
    require_records(df, repr(args.input))
    zp = read_table(args.zip_population, categorical=False) if args.zip_population else None
    from ..releasing import deidentify_text_columns
    spec.check_columns(df.columns)
    df, notes = deidentify_text_columns(df, spec.fates(df.columns), spec.text.to_dict(), key)
    out, policy, info = safe_harbor(df, spec, zp, args.reference_year, accepted=accepted, notes=notes, key=key)
    write_table(out, args.out)
    if args.policy_out:
        policy.save(args.policy_out)
    if args.report:
        write_json(info, args.report)
    summary_line("safe-harbor", [args.out, args.policy_out, args.report],
                 f"{len(out):,} records, {len(out.columns)} column(s) released of {len(df.columns)}")
    return 0


def cmd_apply(args: argparse.Namespace) -> int:
    from ..detect import check_release
    from ..io import read_table, require_records, write_bytes, write_json, write_table, write_text
    from ..transform import Policy

    guard_outputs([args.input, args.policy, args.key_file, args.spec],
                  [args.out, args.report, args.reversal_out, args.policy_out, args.html])
    if bool(args.html) != bool(args.spec):
        raise DeidInputError("--html needs --spec: the page judges the release against the spec's threshold"
                             if args.html else "--spec applies to --html only (the page's threshold)")
    accepted = accepted_columns(args, args.report)
    policy = Policy.load(args.policy)
    if args.reversal_out and not any(st["op"] in REVERSIBLE_BY_TABLE for st in policy.steps):
        raise DeidInputError(f"--reversal-out: the policy has no {', '.join(REVERSIBLE_BY_TABLE)} step, so there is "
                             "nothing to put in a reversal table (an fpe column is reversed with the key and "
                             "the policy deid apply --policy-out writes)")
    key = owner_key(args.key_file, required=bool(args.reversal_out))
    df = read_table(args.input)
    require_records(df, repr(args.input))
    fates = policy.fates(list(df.columns))
    from ..releasing import apply_policy
    out, ctx = apply_policy(policy, df, key=key, reversal=bool(args.reversal_out))
    check = check_release(out, fates, safe_harbor=policy.is_safe_harbor(), accepted=accepted,
                          masked=[c for c, f in fates.items() if f == "masked"], notes=ctx.get("notes"))
    warning = destruction_check("apply", "records", int(ctx.get("suppressed_records", 0)), len(df), args.force)
    unchecked = [st["column"] for st in policy.steps if st["op"] == "fpe" and "key_check" not in st]
    if unchecked and not args.policy_out:
        ctx.setdefault("warnings", []).append(
            f"the fpe step(s) of {', '.join(map(repr, unchecked))} record no key check: deid reverse needs the "
            "policy that --policy-out writes (it refuses a wrong key)")
    sealed = sealed_reversal(args, ctx, key)
    html, verdict = apply_page(args, df, out, policy, ctx.get("notes")) if args.html else (None, None)
    write_table(out, args.out)
    if sealed is not None:
        write_bytes(sealed, args.reversal_out)
    if args.policy_out:
        policy.with_key_checks(ctx.get("key_checks", {})).save(args.policy_out)
    if args.report:
        counts = {k: ctx[k] for k in ("suppressed_records", "suppressed_persons", "dominant") if k in ctx}
        write_json({"policy": str(args.policy), "column_fates": fates, "identifier_check": check,
                    "accepted_columns": check["accepted_columns"], **counts, "warnings": ctx.get("warnings", [])},
                   args.report)
    if html is not None:
        write_text(html, args.html)
    for w in [*ctx.get("warnings", []), *([warning] if warning else [])]:
        print(f"deid: warning: {w}", file=sys.stderr)
    summary_line("apply", [args.out, args.reversal_out, args.policy_out, args.report, args.html],
                 f"{len(out):,} records, {len(out.columns)} column(s) released of {len(df.columns)}, "
                 f"{int(ctx.get('suppressed_records', 0)):,} records suppressed"
                 + (f"; overall risk {verdict['overall_risk']:.4g} "
                    f"{'meets' if verdict['meets_threshold'] else 'does NOT meet'} the threshold {verdict['threshold']:g}"
                    if verdict is not None else ""))
    return 0


def apply_page(args: argparse.Namespace, df, out, policy, notes=None) -> tuple[str, dict]:
    """The five-step page of a ``deid apply`` release: input and release measured from scratch under --spec,
    and the release's verdict (its ``attack``: :func:`deid_core.risk.release_verdict`)."""
    from ..assessing import assess_release
    from ..report import build_report, release_page
    from ..spec import load_spec

    spec = load_spec(args.spec)
    spec.check_columns(df.columns)
    ra = assess_release(df, spec, out, policy=policy, notes=notes)
    report = build_report(ra, input_name=str(args.input), title="Release by a saved policy: de-identification report",
                          reapply={"command": f"deid apply --input NEXT.csv --policy {args.policy} --out RELEASE.csv",
                                   "policy_file": str(args.policy)})
    return release_page(ra, report), ra.verdict


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``assess``, ``safe-harbor`` and ``apply`` to the ``deid`` subcommands."""
    a = sub.add_parser("assess", help="measure risk (optionally after generalization/suppression) and report")
    add_input_spec(a)
    a.add_argument("--population", help="CSV: QI columns at their most detailed level + count")
    a.add_argument("--report", help="JSON: the risk, the policy, the verdict and the report's sections (required)")
    a.add_argument("--html", help="self-contained HTML report")
    a.add_argument("--levels", help="full-domain levels, e.g. age=2,zip=1 (overrides [transform] levels)")
    a.add_argument("--suppress", action="store_true", help="suppress records in classes smaller than k(threshold); "
                   "with [longitudinal], every record of the persons in a class of fewer than k persons")
    a.add_argument("--out", help="the transformed table (CSV or .parquet)")
    add_old_spellings(a, [Renamed("--output", "--out", "out")], json_out_is_report=True)
    a.add_argument("--key-file", help=KEY_HELP + " (notes replaced by surrogates: [text] mode)")
    a.add_argument("--policy-out", help="write the re-appliable policy JSON here")
    a.add_argument("--per-record", help="CSV of per-record risks (class size, prosecutor, journalist, instance "
                                        "disclosure); one row per person with [longitudinal]")
    a.add_argument("--attack", action="store_true", help="[longitudinal]: also run the simulated attack on the "
                                                         "release (adversary power per person)")
    add_attack_options(a, "--attack: p_max (default: [longitudinal] adversary_power)")
    a.add_argument("--complete-knowledge", choices=("approximate", "exact"),
                   help="[longitudinal]: also measure k when the adversary knows all of a person's events "
                        "(exact: which values share an event)")
    a.add_argument("--prior-report", action="append", metavar="JSON",
                   help="[longitudinal]: the --report of an earlier deid truncate or deid codes run on this data, "
                        "described in the report (repeatable)")
    add_known_options(a, "the report's \"known\" risk")
    add_force(a)
    a.add_argument("--numeric", help="comma-separated numeric columns for before/after mean, SD, correlation")
    add_accept(a)
    a.set_defaults(run=cmd_assess)
    s = sub.add_parser("safe-harbor", help="apply HIPAA Safe Harbor")
    add_input_spec(s)
    s.add_argument("--zip-population", help="CSV: zip (or zip3) + population (or count)")
    s.add_argument("--out", required=True, help="the released table (CSV or .parquet)")
    s.add_argument("--policy-out", help="write the re-appliable policy JSON here")
    s.add_argument("--report", help="JSON: which columns were recognized as which Safe Harbor kind")
    s.add_argument("--reference-year", type=integer(1, 9999), help="year for the age >= 90 birth-year rule (default: this year)")
    s.add_argument("--key-file", help=KEY_HELP + " (notes replaced by surrogates: [text] mode)")
    add_accept(s)
    s.set_defaults(run=cmd_safe_harbor)
    ap = sub.add_parser("apply", help="re-apply a saved policy to a new batch")
    ap.add_argument("--input", required=True, help=INPUT_HELP)
    ap.add_argument("--policy", required=True, help="policy JSON saved by assess/safe-harbor --policy-out")
    ap.add_argument("--out", required=True, help="the released table (CSV or .parquet)")
    ap.add_argument("--key-file", help=KEY_HELP)
    add_reversal_option(ap)
    ap.add_argument("--policy-out", help="write the policy as applied: each fpe step records the check value of "
                                         "the key (deid reverse --policy needs it to refuse a wrong key)")
    ap.add_argument("--report", help="JSON: each column's fate, the identifier check and accepted columns")
    add_force(ap)
    ap.add_argument("--spec", help="spec (TOML) the release is judged against on the --html page (its threshold, "
                                   "quasi-identifiers and [longitudinal])")
    ap.add_argument("--html", help="self-contained HTML page (needs --spec): the verdict, what happened to each "
                                   "column, risk before and after, the policy")
    add_accept(ap)
    ap.set_defaults(run=cmd_apply)
