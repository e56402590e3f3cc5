"""``deid attack``, ``deid truncate``, ``deid codes`` and the longitudinal parts of ``deid assess``
(docs/longitudinal.md, "From the command line").

Each command needs the spec's ``[longitudinal]`` section; outputs are computed in memory first and
written atomically, never over an input.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pandas as pd

from ..errors import DeidInputError
from ..spec import LongitudinalSpec, Spec
from .renamed import Renamed, add_old_spellings, take_old_spellings
from .options import (AT_LEAST_0, AT_LEAST_1, PROBABILITY, SEED, SPEC_HELP, add_force, add_input_spec, destruction_check,
                      guard_outputs, number, summary_line)

CODE_BUILDERS = ("icd", "atc", "prefix")


def longitudinal_of(spec: Spec, command: str) -> LongitudinalSpec:
    """The spec's ``[longitudinal]`` section, or one line saying the command needs it."""
    if spec.longitudinal is None:
        raise DeidInputError(f"deid {command} needs a [longitudinal] section in the spec "
                             "(person, level1, level2; see docs/longitudinal.md)")
    return spec.longitudinal


def read_longitudinal(path: str, spec: Spec, lg: LongitudinalSpec, what: str = "input",
                      check_level1: bool = True) -> pd.DataFrame:
    """Read a table and check its person and level-1/level-2 columns (one-line errors)."""
    from ..io import read_table, require_records
    from ..longitudinal.persons import level1_table

    df = read_table(path, spec.missing_values)
    require_records(df, repr(path))
    if lg.person not in df.columns:
        raise DeidInputError(f"person column {lg.person!r} is not in the {what} {path!r}")
    for role, cols in (("level-1", lg.level1), ("level-2", lg.level2)):
        for c in cols:
            if c not in df.columns:
                raise DeidInputError(f"{role} QI {c!r} is not in the {what} {path!r}")
    if check_level1:
        level1_table(df, person=lg.person, level1=list(lg.level1))  # one line naming a person whose level 1 varies
    return df


def released_rows(df: pd.DataFrame, lg: LongitudinalSpec) -> np.ndarray:
    """Rows that release something: not every level-1 and level-2 QI missing (suppressed rows are)."""
    qis = [*lg.level1, *lg.level2]
    return ~df[qis].isna().all(axis=1).to_numpy() if qis else np.ones(len(df), dtype=bool)


def check_attack_options(args: argparse.Namespace) -> None:
    if args.power is not None and args.power < 1:
        raise DeidInputError(f"--power must be at least 1, got {args.power}")
    if args.iterations < 1:
        raise DeidInputError(f"--iterations must be at least 1, got {args.iterations}")


def add_attack_options(p: argparse.ArgumentParser, power_help: str) -> None:
    """Options shared by ``deid attack`` and ``deid assess --attack``."""
    p.add_argument("--power", type=AT_LEAST_1, help=power_help)
    p.add_argument("--power-model", default="simpson", choices=("simpson", "none", "fixed"),
                   help="per-person power: simpson = the book's formula with the Simpson variability of the "
                        "person's values; none = by number of events only; fixed = everyone knows --power values")
    p.add_argument("--scale", default="max", choices=("max", "mean+2sd"),
                   help="the n/v that gets the full power: the largest (the formula as printed) or mean + 2 SD")
    p.add_argument("--iterations", type=AT_LEAST_1, default=10_000, help="simulated attacks (targets drawn at random)")
    p.add_argument("--seed", type=SEED, default=0, help="random seed of the simulated attack")
    p.add_argument("--exact", action="store_true",
                   help="enumerate every combination of every person instead of sampling (small data only)")


def prior_reports(paths: list[str] | None) -> list[dict]:
    """The JSON reports of earlier ``deid truncate``/``deid codes`` runs (one-line error if unreadable)."""
    import json

    out = []
    for path in paths or []:
        try:
            with open(path, encoding="utf-8") as fh:
                rep = json.load(fh)
        except OSError as exc:
            raise DeidInputError(f"cannot read --prior-report {path!r}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise DeidInputError(f"--prior-report {path!r} is not JSON: {exc}") from None
        if not isinstance(rep, dict) or not ("removed_claims" in rep or rep.get("operation") in ("suppress", "shuffle")):
            raise DeidInputError(f"--prior-report {path!r} is not a deid truncate or deid codes report")
        out.append(rep)
    return out


def cmd_attack(args: argparse.Namespace) -> int:
    from ..io import write_json
    from ..longitudinal.assessment import attack_release
    from ..spec import load_spec

    take_old_spellings(args, "attack", required=("report",))
    guard_outputs([args.input, args.spec, args.original, args.background], [args.report])
    check_attack_options(args)
    t0 = time.perf_counter()
    spec = load_spec(args.spec)
    lg = longitudinal_of(spec, "attack")
    released = read_longitudinal(args.input, spec, lg, check_level1=False)
    background = read_longitudinal(args.background, spec, lg, "background", False) if args.background else released
    original = read_longitudinal(args.original, spec, lg, "original") if args.original else None
    # suppressed rows carry no values: left out of the release and of the adversary's source (and of its
    # original rows, which pair with the background's by position)
    keep = released_rows(background, lg)
    if original is not None and len(original) == len(background):
        original = original.loc[keep]
    same = background is released
    background = background.loc[keep]
    released = background if same else released.loc[released_rows(released, lg)]
    if released.empty:
        raise DeidInputError("every row of the input is suppressed: nothing is released to attack")
    threshold = spec.release.threshold if args.threshold is None else args.threshold
    if not 0 < threshold <= 1:
        raise DeidInputError(f"--threshold {threshold} is outside (0, 1]")
    att = attack_release(released, lg, threshold=threshold, background=None if same else background,
                         original=original, p_max=args.power, model=args.power_model, scale=args.scale,
                         iterations=args.iterations, seed=args.seed, exact=args.exact)
    out = {"input": str(args.input), "background": args.background, "original": args.original,
           "events": len(released), **att.summary(), "seconds": round(time.perf_counter() - t0, 4)}
    write_json(out, args.report)
    r = att.result
    summary_line("attack", [args.report], f"{r.persons:,} persons, high-risk share {r.high_risk_proportion:.4f} "
                 f"(risk above {threshold:g}), average risk {r.average_risk:.4f}")
    return 0


def cmd_truncate(args: argparse.Namespace) -> int:
    from ..io import write_json, write_table, write_text
    from ..longitudinal.truncate import truncate_claims
    from ..risk import k_for_threshold
    from ..spec import load_spec

    guard_outputs([args.input, args.spec], [args.out, args.report, args.html])
    spec = load_spec(args.spec)
    lg = longitudinal_of(spec, "truncate")
    df = read_longitudinal(args.input, spec, lg)
    k = args.k if args.k is not None else k_for_threshold(spec.release.threshold)
    t = truncate_claims(df, person=lg.person, level2=list(lg.level2), k=k, width=args.width, method=args.method,
                        percentile=args.percentile, seed=args.seed)
    warning = destruction_check("truncate", "claims", t.removed_claims, t.claims, args.force)
    report = {"input": str(args.input), "method": args.method, "k": k if args.method == "bins" else None,
              "width": args.width, "percentile": args.percentile if args.method == "percentile" else None,
              "seed": args.seed, **t.summary()}
    html = None
    if args.html:
        from ..report import render, truncate_document
        html = render(truncate_document(report, list(df.columns), release_type=spec.release.type,
                                        threshold=spec.release.threshold if args.k is None else 1.0 / k))
    write_table(t.frame, args.out)
    write_json(report, args.report)
    if html is not None:
        write_text(html, args.html)
    if warning:
        print(f"deid: warning: {warning}", file=sys.stderr)
    if t.unmet_bins:
        print(f"deid: warning: bin {', '.join(t.unmet_bins)} still holds fewer than k = {k} persons "
              "(the lowest bin cannot move down)", file=sys.stderr)
    summary_line("truncate", [args.out, args.report, args.html], f"{t.removed_claims:,} of {t.claims:,} claims removed "
                 f"({t.removed_claims / t.claims:.1%}), {t.removed_persons:,} of {t.persons:,} persons lost claims")
    return 0


def _code_column(args: argparse.Namespace, spec: Spec, lg: LongitudinalSpec) -> str:
    if args.code:
        return args.code
    coded = [h for h in lg.level2 if h in spec.hierarchies and spec.hierarchies[h].builder in CODE_BUILDERS]
    if len(coded) == 1:
        return coded[0]
    if not coded and len(lg.level2) == 1:
        return lg.level2[0]
    raise DeidInputError("name the code column with --code (the spec's level-2 QIs do not single one out: "
                         f"{', '.join(lg.level2) or 'none'})")


def _code_group(df: pd.DataFrame, spec: Spec, code: str, level: int) -> pd.Series | None:
    """The code generalized to ``level`` of its hierarchy (None at level 0: the code itself)."""
    from ..hierarchy import build_hierarchy, distinct_values

    if level == 0:
        return None
    if code not in spec.hierarchies:
        raise DeidInputError(f"--group-level {level} needs a hierarchy for {code!r} in the spec")
    h = build_hierarchy(spec.hierarchies[code], distinct_values(df[code]), name=code)
    if level > h.height:
        raise DeidInputError(f"--group-level {level} is above the height {h.height} of {code!r}'s hierarchy")
    return h.generalize(df[code], level, code).astype(object)


def cmd_codes(args: argparse.Namespace) -> int:
    from ..io import write_json, write_table, write_text
    from ..metric import is_marker
    from ..longitudinal.codes import shuffle_codes, suppress_codes
    from ..risk import k_for_threshold
    from ..spec import load_spec

    guard_outputs([args.input, args.spec], [args.out, args.report, args.html])
    spec = load_spec(args.spec)
    lg = longitudinal_of(spec, "codes")
    df = read_longitudinal(args.input, spec, lg)
    code = _code_column(args, spec, lg)
    if code == lg.person or code in lg.level1:
        raise DeidInputError(f"--code {code!r} is a per-person column ({'the person' if code == lg.person else 'level-1'}"
                             "): deid codes acts on a level-2 (per-event) code column such as a diagnosis")
    for c in [code, *(args.connected or []), *(args.nesting or [])]:
        if c not in df.columns:
            raise DeidInputError(f"column {c!r} is not in the input {args.input!r}")
    level = args.group_level if args.group_level is not None else (1 if args.shuffle else 0)
    if level < 0 or (args.shuffle and level == 0):
        raise DeidInputError(f"--group-level must be at least {1 if args.shuffle else 0}, got {level}"
                             + (" (shuffling within one code changes nothing)" if args.shuffle else ""))
    group = _code_group(df, spec, code, level)
    work = df if group is None else df.assign(**{"\x00group": group})
    classes = [*lg.level1, *(args.nesting or [])]
    connected = list(args.connected or [])
    report = {"input": str(args.input), "code": code, "classes": classes, "connected": connected,
              "group_level": level, "events": len(df), "persons": int(df[lg.person].nunique())}
    if args.suppress:
        k = args.k if args.k is not None else k_for_threshold(spec.release.threshold)
        if k < 1:
            raise DeidInputError(f"--k must be at least 1, got {k}")
        s = suppress_codes(work, person=lg.person, code=code, classes=classes, k=k,
                           group=None if group is None else "\x00group", connected=connected)
        out = s.frame
        report.update({"operation": "suppress", "k": k, **s.summary()})
        warning = destruction_check("codes", f"codes of {code!r}", s.suppressed_rows, int(df[code].notna().sum()),
                                    args.force)
    else:
        warning = None
        keys = classes + ([code] if group is None else ["\x00group"])
        out = shuffle_codes(work, code=code, keys=keys, connected=connected, seed=args.seed)
        changed = int((out[code].astype(object).to_numpy() != df[code].astype(object).to_numpy()).sum())
        report.update({"operation": "shuffle", "seed": args.seed, "rows_changed": changed,
                       "groups": int(out[keys].drop_duplicates().shape[0])})
    out = out[list(df.columns)]
    html = None
    if args.html:
        from ..report import codes_document, render
        held = {name: t.dropna(subset=[code]).groupby(code, observed=True)[lg.person].nunique()
                for name, t in (("before", df), ("after", out.loc[~is_marker(out[code])]))}
        html = render(codes_document(report, list(df.columns), held["before"], held["after"], level1=lg.level1,
                                     release_type=spec.release.type,
                                     threshold=None if args.shuffle else
                                     spec.release.threshold if args.k is None else 1.0 / args.k))
    write_table(out, args.out)
    if args.report:
        write_json(report, args.report)
    if html is not None:
        write_text(html, args.html)
    if warning:
        print(f"deid: warning: {warning}", file=sys.stderr)
    if args.suppress:
        figure = f"{report['suppressed_rows']:,} of {int(df[code].notna().sum()):,} codes of {code!r} suppressed (k = {report['k']})"
    else:
        figure = f"{report['rows_changed']:,} of {len(df):,} codes of {code!r} changed by the shuffle"
    summary_line("codes", [args.out, args.report, args.html], figure)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """``deid attack``, ``deid truncate`` and ``deid codes`` (specs with ``[longitudinal]``)."""
    at = sub.add_parser("attack", help="risk of a longitudinal release by simulated attack (adversary power)")
    at.add_argument("--input", required=True, help="the released (generalized) table, with the person column")
    at.add_argument("--spec", required=True, help=SPEC_HELP + "; needs [longitudinal]")
    at.add_argument("--background", help="the adversary's source: all events generalized as the release, before "
                                         "truncation (default: the input)")
    at.add_argument("--original", help="the original values of the background's rows (same rows, same order): "
                                       "the adversary knows original values and matches their released form")
    add_attack_options(at, "p_max, the most level-2 values an adversary knows (default: [longitudinal] "
                           "adversary_power)")
    at.add_argument("--threshold", type=PROBABILITY, help="risk above which a person is high risk (default: [release] "
                                                    "threshold)")
    at.add_argument("--report", help="JSON: persons, high-risk share, average risk (required)")
    add_old_spellings(at, [Renamed("--out", "--report", "report")])
    at.set_defaults(run=cmd_attack)

    tr = sub.add_parser("truncate", help="remove claims from the long tail of claims per person")
    add_input_spec(tr, "; needs [longitudinal]")
    tr.add_argument("--k", type=AT_LEAST_1, help="persons each bin of claim counts must hold (bins; default: "
                                          "1/[release] threshold)")
    tr.add_argument("--method", default="bins", choices=("bins", "percentile"),
                    help="bins: move persons of small bins down; percentile: top-code the claim count")
    tr.add_argument("--percentile", type=number(0, 100, lo_open=True), default=95.0, help="percentile to top-code at (percentile)")
    tr.add_argument("--width", type=AT_LEAST_1, default=5, help="width of the claim-count bins")
    tr.add_argument("--seed", type=SEED, default=0, help="random seed (new counts within a bin)")
    tr.add_argument("--out", required=True, help="the table with the removed claims left out (CSV or .parquet)")
    tr.add_argument("--report", required=True, help="JSON: claims and persons removed, bins before and after")
    add_force(tr)
    tr.add_argument("--html", help="self-contained HTML page: the verdict, what was removed, persons per bin before "
                                   "and after")
    tr.set_defaults(run=cmd_truncate)

    co = sub.add_parser("codes", help="suppress or shuffle medical codes held by few persons")
    add_input_spec(co, "; needs [longitudinal]")
    g = co.add_mutually_exclusive_group(required=True)
    g.add_argument("--suppress", action="store_true", help="suppress a code group held by fewer than k persons "
                                                           "in its class")
    g.add_argument("--shuffle", action="store_true", help="shuffle the codes within each class and code group")
    co.add_argument("--code", help="the code column (default: the level-2 QI with an icd/atc/prefix hierarchy)")
    co.add_argument("--group-level", type=AT_LEAST_0,
                    help="level of the code's hierarchy that forms the code group, 0 = the code itself "
                         "(default: 0 with --suppress, 1 with --shuffle)")
    co.add_argument("--nesting", action="append", metavar="COL",
                    help="a level-2 column the classes are nested in, e.g. place of care (repeatable)")
    co.add_argument("--connected", action="append", metavar="COL",
                    help="a column that goes with the code, e.g. its description (repeatable)")
    co.add_argument("--k", type=AT_LEAST_1, help="persons a code group needs (suppress; default: 1/[release] threshold)")
    co.add_argument("--seed", type=SEED, default=0, help="random seed (shuffle)")
    co.add_argument("--out", required=True, help="the table with codes suppressed or shuffled (CSV or .parquet)")
    co.add_argument("--report", help="JSON: what was suppressed or shuffled")
    add_force(co)
    co.add_argument("--html", help="self-contained HTML page: the verdict, what happened to each column, persons per "
                                   "code before and after")
    co.set_defaults(run=cmd_codes)
