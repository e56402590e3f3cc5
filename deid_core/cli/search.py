"""``deid search``: find policies that meet a threshold with little information loss (docs/deid_search.md).

Maps the options to the searches of :mod:`deid_core.algorithm`, verifies every reported policy by
re-assessing its release from scratch, and writes the results (nothing is written on bad input).
"""
from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np
import pandas as pd

from ..errors import DeidInputError
from ..spec import Spec
from ..transform.policy import Policy
from .known_options import add_known_options, known_of
from .options import (AT_LEAST_1, PROBABILITY, SEED, SHARE, accepted_columns, add_accept, add_force, add_input_spec,
                      guard_outputs, number, summary_line)

SEARCH_METHODS = ("bps", "directed", "ola", "partition", "boxes", "lola")
#: The searches whose risk can be the maximum over the blocks of a covering design (--known).
KNOWN_METHODS = ("ola", "bps", "directed")
#: option -> (the methods it applies to, its default): given to another method it is refused, not ignored.
METHOD_OPTIONS: dict[str, tuple[tuple[str, ...], object]] = {
    "population": (("bps", "directed", "partition"), None),
    "threshold": (("ola", "bps", "directed", "lola"), None),
    "iterations": (("bps", "directed", "lola"), None),
    "sampling_fraction": (("lola",), 1.0),
    "loss": (("ola", "lola"), "nue"),
    "top": (("ola", "lola"), 10),
    "min_population": (("partition",), 0.0),
    "seed": (("bps", "directed", "lola"), 0),
}


def check_method_options(args: argparse.Namespace) -> None:
    """Refuse an option the chosen method does not use (it would be ignored silently), then fill in defaults."""
    if args.force and args.method != "lola":
        raise DeidInputError(f"--force applies to --method lola (with --apply-best), not {args.method}")
    for name, (methods, default) in METHOD_OPTIONS.items():
        if getattr(args, name) is not None and args.method not in methods:
            raise DeidInputError(f"--{name.replace('_', '-')} applies to --method {', '.join(methods)}, "
                                 f"not {args.method}")
        if getattr(args, name) is None:
            setattr(args, name, default)


def run_ola(args: argparse.Namespace, spec: Spec, df: pd.DataFrame) -> tuple[dict, pd.DataFrame | None]:
    """``--method ola``: --k, or --threshold (default [release] threshold) on the release verdict of
    ``deid assess`` and ``deid apply`` (:func:`deid_core.risk.release_verdict`: the max risk of a public
    release, the strict average × Pr(T) otherwise); the result dict and (with ``--apply-best``) the
    verified release."""
    from ..algorithm.optimal import optimal_release

    if args.top < 1:
        raise DeidInputError(f"--top must be a positive integer, got {args.top}")
    found = optimal_release(df, spec, threshold=args.threshold, k=args.k,
                            measure="attack",
                            max_suppression=args.max_suppression or 0.0, loss=args.loss, top=args.top, progress=True,
                            known=known_of(args, spec))
    result = found.search.to_dict()
    out = None
    if found.policy is not None:
        result["best_policy"] = found.policy.to_dict()
        if args.apply_best:
            out = found.apply(df)
            check = found.reassess(out)
            if not check["meets"]:  # pragma: no cover - guarded by tests
                raise RuntimeError(f"internal error: best policy fails re-assessment {check}")
            result["best_reassessed"] = check
    return result, out


def run_lola(args: argparse.Namespace, spec: Spec, df: pd.DataFrame) -> tuple[dict, pd.DataFrame | None]:
    """``--method lola`` (El Emam et al. 2012, LOLA): OLA over the level-1 and level-2 hierarchies; a node is
    acceptable when the simulated attack's high-risk persons are ≤ --max-suppression (docs/longitudinal.md)."""
    from ..algorithm.lola import HHP_MAX_SUPPRESSION, lola_release

    found = lola_release(df, spec, threshold=args.threshold, k=args.k, sampling_fraction=args.sampling_fraction,
                         max_suppression=HHP_MAX_SUPPRESSION if args.max_suppression is None else args.max_suppression,
                         iterations=10_000 if args.iterations is None else args.iterations, seed=args.seed,
                         loss=args.loss, top=args.top, progress=True)
    result = found.search.to_dict()
    out = None
    if found.policy is not None:
        result["best_policy"] = found.policy.to_dict()
        result["best_policy_note"] = ("the policy generalizes; the high-risk persons of this data set are "
                                      "suppressed on top of it (not re-appliable to other data)")
        if args.apply_best:
            out = found.apply(df)
            if found.criterion.persons >= 20_000:
                print("deid search: re-assessing the release by a fresh attack", file=sys.stderr, flush=True)
            check = found.reassess(out, df)
            result["best_reassessed"] = check
            if not check["meets"]:  # a release above its criterion is not written unless asked for
                said = ("after suppressing the high-risk persons, the re-assessed high-risk proportion is "
                        f"{check['high_risk_proportion']:.4f}, above MaxSup {found.criterion.max_suppression:g}")
                if not args.force:
                    raise DeidInputError(f"{said}: nothing written (more --iterations, another --seed, or --force)")
                print(f"deid: warning: {said}", file=sys.stderr)
    return result, out


def run_subtree(args: argparse.Namespace, spec: Spec, df: pd.DataFrame,
                pop: pd.DataFrame | None) -> tuple[dict, pd.DataFrame | None]:
    """``--method bps|directed``: every reported policy is re-assessed from scratch; with ``[longitudinal]``
    the risk (and the Safe Harbor threshold) is over persons (docs/longitudinal.md)."""
    from ..algorithm.baseline import safe_harbor_risk
    from ..algorithm.known_subsets_search import KnownSubtreeProblem
    from ..algorithm.subtree import SubtreeProblem, search_subtree, verify_subtree
    from ..longitudinal.persons import person_index
    from ..risk import encode_table, validate_population

    if args.k is not None:
        raise DeidInputError("--k applies to --method ola only (bps/directed take --threshold, a normalized population risk)")
    if args.max_suppression:
        raise DeidInputError("--max-suppression applies to --method ola and lola only")
    args.iterations = 100 if args.iterations is None else args.iterations
    if args.iterations < 1:
        raise DeidInputError(f"--iterations must be a positive integer, got {args.iterations}")
    lg = spec.longitudinal
    persons = person_index(df, lg.person, lg.level1) if lg is not None else None
    table = encode_table(df, spec, pop)
    pop = validate_population(pop, table.qis) if pop is not None else None
    known = known_of(args, spec)
    if args.threshold is not None:
        if not 0 < args.threshold <= 1:
            raise DeidInputError(f"threshold {args.threshold} is outside (0, 1]")
        thr, source = args.threshold, "--threshold"
    else:
        thr = safe_harbor_risk(df, pop, spec, persons, known.blocks if known is not None else None)
        source = "safe harbor"
    problem = SubtreeProblem(table, thr, persons) if known is None else KnownSubtreeProblem(table, thr, known, persons)
    result = search_subtree(problem, args.method, args.iterations, args.seed, progress=True).to_dict()
    result["threshold_source"] = source
    if known is not None:
        result["known"] = known.summary()
    best_out = None
    for i, pol in enumerate(result["policies"]):
        bits = np.array([c == "1" for c in pol["bits"]], dtype=bool)
        risk, out = verify_subtree(problem, spec, df, pop, bits)
        if risk > thr + 1e-12:  # pragma: no cover - guarded by tests
            raise RuntimeError(f"internal error: policy {i} has risk {risk} > {thr} when applied")
        pol["reassessed_risk"] = risk
        if i == 0:
            best_out = out
            result["best_policy"] = problem.policy(spec, bits).to_dict()
    return result, (best_out if args.apply_best else None)


def run_partition(args: argparse.Namespace, spec: Spec, df: pd.DataFrame,
                  pop: pd.DataFrame | None) -> tuple[dict, pd.DataFrame]:
    """``--method partition`` (Liu et al. 2016 §3.3): minimum subset size ``--k``; Safe Harbor alongside."""
    from ..algorithm.partition import search_partition

    if args.k is None:
        raise DeidInputError("--method partition needs --k, the minimum subset size")
    if pop is None:
        raise DeidInputError("--method partition needs --population (instance-disclosure risk uses N_i)")
    result, out = search_partition(df, spec, pop, args.k, getattr(args, "min_population", 0.0))
    return result.to_dict(), out


def run_boxes(args: argparse.Namespace, spec: Spec, df: pd.DataFrame,
              pop: pd.DataFrame | None) -> tuple[dict, pd.DataFrame]:
    """``--method boxes`` (Xiang et al. 2014): k-anonymous interval boxes over the numeric QIs."""
    from ..algorithm.boxes import search_boxes

    if args.k is None:
        raise DeidInputError("--method boxes needs --k")
    result, out = search_boxes(df, spec.quasi, args.k)
    return result.to_dict(), out


def search_release(args: argparse.Namespace, spec: Spec, df: pd.DataFrame) -> tuple[dict, pd.DataFrame | None]:
    """The search of ``deid search`` on a table already read: the result dict (with ``best_policy`` recording
    every column's fate) and, with ``--apply-best``, the verified release checked for identifiers. Nothing
    is written; the workbench (``deid ui``) calls it with options parsed by the same parser."""
    from ..io import read_table

    check_method_options(args)
    spec.check_columns(df.columns)
    accepted = accepted_columns(args, args.out)
    fates = spec.fates(df.columns) if args.apply_best or args.policy_out or spec.rest is not None else None
    spec = spec.resolve(df.columns) if fates is not None else spec
    if not spec.quasi:
        raise DeidInputError("spec declares no quasi-identifier to search over")
    if args.known is not None and args.method not in KNOWN_METHODS:
        raise DeidInputError(f"--known applies to --method {', '.join(KNOWN_METHODS)} (not {args.method})")
    if args.method == "ola":
        result, out = run_ola(args, spec, df)
    elif args.method == "lola":
        result, out = run_lola(args, spec, df)
    else:
        pop = read_table(args.population, spec.missing_values, categorical=False) if args.population else None
        run = {"partition": run_partition, "boxes": run_boxes}.get(args.method, run_subtree)
        result, out = run(args, spec, df, pop)
        out = out if args.apply_best else None
    if args.apply_best and out is None:
        raise DeidInputError("no policy meets the threshold: nothing to apply (relax --k/--threshold or --max-suppression)")
    if args.policy_out and not result.get("best_policy"):
        raise DeidInputError(f"--method {args.method} found no re-appliable policy to write to --policy-out")
    if out is not None:  # every column has a fate; identifiers are refused before anything is written
        from ..detect import check_release
        out = out.drop(columns=[c for c in spec.direct if c in out.columns])
        result["identifier_check"] = check_release(out, fates, safe_harbor=False, accepted=accepted)
        result["accepted_columns"] = result["identifier_check"]["accepted_columns"]
    if fates is not None and "best_policy" in result:
        result["best_policy"] = Policy.from_dict(result["best_policy"]).with_fates(fates, spec.rest, False).to_dict()
    if result.get("best_policy") and args.method != "lola":  # lola suppresses this data set's persons on top
        result["release_verdict"] = best_release_verdict(spec, df, Policy.from_dict(result["best_policy"]))
    return result, out


def best_release_verdict(spec: Spec, df: pd.DataFrame, policy: Policy) -> dict:
    """The verdict ``deid apply --policy P --spec SPEC --html`` gives the best policy's release: the release
    measured from scratch (:func:`deid_core.report.release_assessment`), judged by
    :func:`deid_core.risk.release_verdict` against ``[release] threshold`` whatever the search's criterion."""
    from ..report import release_assessment
    from ..risk import release_measure

    a = release_assessment(df, policy.apply(df)[0], spec)
    return {"meets": a.attack["meets_threshold"], "overall_risk": a.attack["overall_risk"],
            "threshold": spec.release.threshold, "measure": release_measure(spec.release),
            "k_min": a.summary["k_min"], "suppressed_records": int(a.summary.get("suppressed_records", 0)),
            "records": len(df)}


def node_words(best: dict) -> str:
    """The best policy in a few words: its levels (ola, lola) or how many values it recodes."""
    if best.get("levels"):
        return ", ".join(f"{q} {lv}" for q, lv in best["levels"].items())
    if best.get("mapping") is not None:
        return f"{sum(1 for m in best['mapping'].values() if m)} column(s) recoded"
    return "the first policy"


def ending(args: argparse.Namespace, result: dict) -> str:
    """The last line's figures: the best node, its risk (the release verdict's, the one ``deid apply``
    states) and its suppression, and how many policies met the search's criterion."""
    pols = result["policies"]
    found = f"--method {args.method}, {len(pols):,} policies meet the search's criterion"
    if not pols:
        return found + ": none to apply"
    best, verdict = pols[0], result.get("release_verdict")
    supp = int(best.get("suppressed_records") or 0)
    if verdict is None:
        return (f"{found}; best: {node_words(best)}, risk {best.get('risk', 0):.4g}, {supp:,} records suppressed"
                + ("" if "best_policy" in result else ", none to apply"))
    n = verdict["records"]
    return (f"{found}; best: {node_words(best)}, overall risk {verdict['overall_risk']:.4g} "
            f"{'meets' if verdict['meets'] else 'does NOT meet'} the threshold {verdict['threshold']:g}, measured as "
            f"the {verdict['measure']}; {verdict['suppressed_records']:,} of {n:,} records suppressed "
            f"({100 * verdict['suppressed_records'] / max(n, 1):.1f} %)")


def run_search_command(args: argparse.Namespace) -> int:
    """Body of ``deid search``: validate, search, verify, then write (nothing written on bad input)."""
    from ..io import read_table, require_records, write_json, write_table
    from ..spec import load_spec

    t0 = time.perf_counter()
    spec = load_spec(args.spec)
    df = read_table(args.input, spec.missing_values)
    require_records(df, repr(args.input))
    result, out = search_release(args, spec, df)
    result["seconds_total"] = round(time.perf_counter() - t0, 4)
    page = None
    if getattr(args, "html", None):
        from ..report import render_search_html
        page = render_search_html(result, spec.release.type)
    write_json(result, args.out)
    if page is not None:
        from ..io import write_text
        write_text(page, args.html)
    if out is not None:
        write_table(out, args.apply_best)
    if args.policy_out:
        Policy.from_dict(result["best_policy"]).save(args.policy_out)
    if not result["policies"]:
        print("deid: warning: no policy meets the threshold", file=sys.stderr)
    summary_line("search", [args.out, args.html, args.apply_best, args.policy_out], ending(args, result))
    return 0


def search_arguments(argv: list[str]) -> argparse.Namespace:
    """``argv`` (the words after ``deid search``) parsed by the ``deid search`` parser, defaults included;
    a usage error raises :class:`common.cli.UsageError` (the workbench builds its searches this way)."""
    from common.cli import OneLineParser

    parser = OneLineParser(prog="deid")
    register(parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser))
    return parser.parse_args(["search", *argv])


def cmd_search(args: argparse.Namespace) -> int:
    guard_outputs([args.input, args.spec, args.population], [args.out, args.apply_best, args.html, args.policy_out])
    return run_search_command(args)


def register(sub: argparse._SubParsersAction) -> None:
    """``deid search``: find policies that meet a threshold with little information loss."""
    se = sub.add_parser("search", help="search for de-identification policies (OLA, BPS, Directed)")
    add_input_spec(se)
    se.add_argument("--method", required=True, choices=SEARCH_METHODS,
                    help="ola: optimal lattice anonymization (k-anonymity); bps, directed: risk-threshold "
                         "searches; partition, boxes: local recoding; lola: longitudinal OLA (needs [longitudinal])")
    se.add_argument("--population", help="CSV: QI columns at their most detailed level + count (bps, directed)")
    g = se.add_mutually_exclusive_group()
    g.add_argument("--threshold", type=PROBABILITY, help="risk threshold in (0, 1] (default: [release] threshold; "
                   "bps/directed: the Safe Harbor policy's normalized population risk)")
    g.add_argument("--k", type=AT_LEAST_1, help="k-anonymity (ola); minimum subset size (partition); lola: k = α·F, "
                   "high risk when fewer than k persons match (threshold = sampling fraction / k)")
    se.add_argument("--max-suppression", type=SHARE, default=None,
                    help="share of records that may be suppressed (ola, default 0); lola: MaxSup, the share of "
                         "persons that may be high risk and suppressed (default 0.008, the HHP release's)")
    se.add_argument("--iterations", type=AT_LEAST_1, default=None,
                    help="policies to look for (bps, directed; default 100); lola: simulated-attack targets per "
                         "node (default 10000; at least the number of persons: every person once)")
    se.add_argument("--sampling-fraction", type=PROBABILITY,
                    help="lola: α, the share of the population in the data (risk of a match = α / matches; default 1)")
    se.add_argument("--loss", choices=("nue", "geometric"), help="information loss (ola, lola; default nue)")
    se.add_argument("--top", type=AT_LEAST_1, help="policies to report (ola, lola; default 10)")
    se.add_argument("--min-population", type=number(0, math.inf, hi_open=True),
                    help="partition: also keep each side's population count at least this")
    se.add_argument("--seed", type=SEED, help="random seed (bps, directed, lola)")
    add_known_options(se, "the search's risk (ola, bps, directed; ola without suppression)")
    se.add_argument("--out", required=True, help="RESULT.json")
    se.add_argument("--apply-best", help="write the data released under the best policy here")
    se.add_argument("--policy-out", help="write the best policy here (re-appliable with deid apply; the same as "
                                         "best_policy in --out)")
    se.add_argument("--html", help="self-contained HTML page with a risk vs information loss plot of the policies")
    add_accept(se)
    add_force(se, "lola --apply-best: write the release even when its re-assessment by a fresh attack finds more "
                  "high-risk persons than MaxSup (refused otherwise)")
    se.set_defaults(run=cmd_search)
