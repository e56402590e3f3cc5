"""``deid search``: find policies that meet a threshold with little information loss (docs/deid_search.md).

Reads the table, maps the flags to :class:`deid_core.release_search.SearchOptions`, calls
:func:`deid_core.release_search.search_release` (which verifies every reported policy by re-assessing
its release from scratch) and writes the results (nothing is written on bad input).
"""
from __future__ import annotations

import argparse
import math
import sys
import time

from ..release_search import METHODS, SearchOptions, known_applies, search_release
from ..spec import Spec
from ..transform.policy import Policy
from .known_options import add_known_options, known_of
from .masking import KEY_HELP, owner_key
from .renamed import Renamed, add_old_spellings, take_old_spellings
from .options import (AT_LEAST_1, PROBABILITY, SEED, SHARE, accepted_columns, add_accept, add_force, add_input_spec,
                      guard_outputs, number, summary_line)


def search_options(args: argparse.Namespace, spec: Spec) -> SearchOptions:
    """The library's options from ``deid search``'s (the population and the covering design read and built
    here); ``--policy-out`` asks for a re-appliable policy."""
    from ..io import read_table

    if args.known is not None:
        known_applies(args.method)        # before a covering design is built for nothing
    population = read_table(args.population, spec.missing_values, categorical=False) if args.population else None
    return SearchOptions(method=args.method, k=args.k, threshold=args.threshold, max_suppression=args.max_suppression,
                         population=population, iterations=args.iterations, sampling_fraction=args.sampling_fraction,
                         loss=args.loss, top=args.top, min_population=args.min_population, seed=args.seed,
                         known=known_of(args, spec), apply_best=bool(args.out),
                         reapplicable=bool(args.policy_out), accepted=accepted_columns(args, args.report),
                         force=args.force, key=owner_key(args.key_file))


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
    found = search_release(df, spec, search_options(args, spec))
    result, out = found.summary, found.release
    result["seconds_total"] = round(time.perf_counter() - t0, 4)
    page = None
    if getattr(args, "html", None):
        from ..report import render_search_html
        page = render_search_html(result, spec.release.type)
    write_json(result, args.report)
    if page is not None:
        from ..io import write_text
        write_text(page, args.html)
    if out is not None:
        write_table(out, args.out)
    if args.policy_out:
        Policy.from_dict(result["best_policy"]).save(args.policy_out)
    if not result["policies"]:
        print("deid: warning: no policy meets the threshold", file=sys.stderr)
    summary_line("search", [args.report, args.html, args.out, args.policy_out], ending(args, result))
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    take_old_spellings(args, "search", required=("report",))
    guard_outputs([args.input, args.spec, args.population, args.key_file],
                  [args.report, args.out, args.html, args.policy_out])
    return run_search_command(args)


def register(sub: argparse._SubParsersAction) -> None:
    """``deid search``: find policies that meet a threshold with little information loss."""
    se = sub.add_parser("search", help="search for de-identification policies (OLA, BPS, Directed)")
    add_input_spec(se)
    se.add_argument("--method", required=True, choices=METHODS,
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
    se.add_argument("--report", help="JSON: the policies found, the best one and its verdict (required)")
    se.add_argument("--out", help="the table released under the best policy (CSV or .parquet)")
    se.add_argument("--policy-out", help="write the best policy here (re-appliable with deid apply; the same as "
                                         "best_policy in --report)")
    add_old_spellings(se, [Renamed("--apply-best", "--out", "out")], json_out_is_report=True)
    se.add_argument("--key-file", help=KEY_HELP + " (notes replaced by surrogates: [text] mode)")
    se.add_argument("--html", help="self-contained HTML page with a risk vs information loss plot of the policies")
    add_accept(se)
    add_force(se, "lola --out: write the release even when its re-assessment by a fresh attack finds more "
                  "high-risk persons than MaxSup (refused otherwise)")
    se.set_defaults(run=cmd_search)
