"""``deid utility``: the analyses a recipient is likely to run, on the original and on the released table
(El Emam & Arbuckle, ch. 13, "Workload-Aware De-Identification"; docs/masking.md, "Utility")."""
from __future__ import annotations

import argparse
import time

from ..errors import DeidInputError
from .renamed import Renamed, add_old_spellings, take_old_spellings
from .options import SPEC_HELP, guard_outputs


def _pair(text: str) -> tuple[str, str]:
    a, sep, b = text.partition(":")
    if not sep or not a.strip() or not b.strip():
        raise DeidInputError(f"--crosstab: expected COLUMN:COLUMN, got {text!r}")
    return a.strip(), b.strip()


def cmd_utility(args: argparse.Namespace) -> int:
    from ..io import read_table, require_records, write_json, write_text
    from ..metric.utility import numeric_columns, utility
    from ..report import render_utility_html
    from ..spec import load_spec

    take_old_spellings(args, "utility", required=("report",))
    guard_outputs([args.original, args.released, args.spec], [args.report, args.html])
    t0 = time.perf_counter()
    spec = load_spec(args.spec)
    original = read_table(args.original, spec.missing_values)
    released = read_table(args.released, spec.missing_values)
    require_records(original, repr(args.original))
    require_records(released, repr(args.released))
    shared = [c for c in original.columns if c in released.columns and spec.columns.get(c) != "direct"]
    if args.numeric is not None:
        numeric = [c.strip() for c in args.numeric.split(",") if c.strip()]
        from ..metric.utility import numbers
        for c in numeric:  # a column with no number in it would give an empty table, not an analysis
            if c in original.columns and not numbers(original, [c])[c].notna().any():
                raise DeidInputError(f"--numeric {c!r}: none of its values in {args.original!r} is a number "
                                     "(name it in --categorical)")
    else:
        numeric = numeric_columns(original, shared)
    categorical = ([c.strip() for c in args.categorical.split(",") if c.strip()] if args.categorical is not None
                   else [c for c in shared if c not in numeric])
    pairs = [_pair(p) for p in args.crosstab] if args.crosstab else None
    result = {"original": str(args.original), "released": str(args.released),
              **utility(original, released, numeric, categorical, pairs, args.regress or [])}
    result["seconds"] = round(time.perf_counter() - t0, 4)
    html = render_utility_html(result) if args.html else None
    write_json(result, args.report)
    if html is not None:
        write_text(html, args.html)
    moments_mse = result["moments"].get("mse_means")
    print(f"deid utility: {args.report}{' and ' + str(args.html) if args.html else ''}: "
          f"{len(original):,} original vs {len(released):,} released records; numeric: {', '.join(numeric) or 'none'}"
          f"{'' if moments_mse is None else f' (MSE of the means {moments_mse:.4g})'}; categorical: "
          f"{', '.join(categorical) or 'none'}; {len(result['regressions'])} regression(s), "
          f"{len(result['crosstabs'])} cross-tab(s)")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``utility`` to the ``deid`` subcommands."""
    u = sub.add_parser("utility", help="data utility: means, SDs, covariances, regressions, cross-tabs and complete-"
                                       "case loss on the original vs the released table")
    u.add_argument("--original", required=True, help="the table before de-identification (CSV or Parquet)")
    u.add_argument("--released", required=True, help="the released table (its rows need not match the original's)")
    u.add_argument("--spec", required=True, help=SPEC_HELP + " (direct identifiers are left out)")
    u.add_argument("--numeric", help="comma-separated numeric columns (default: the shared columns whose every "
                                     "original value is a number and none has a leading zero, like a ZIP code)")
    u.add_argument("--categorical", help="comma-separated categorical columns (default: the other shared columns)")
    u.add_argument("--crosstab", action="append", metavar="A:B",
                   help="a pair of categorical columns to cross-tabulate (repeatable; default: every pair)")
    u.add_argument("--regress", action="append", metavar="Y~X1+X2",
                   help="an OLS regression of numeric columns, with an intercept (repeatable)")
    u.add_argument("--report", help="JSON: the measures of the original and the release side by side (required)")
    add_old_spellings(u, [Renamed("--out", "--report", "report")])
    u.add_argument("--html", help="self-contained HTML page")
    u.set_defaults(run=cmd_utility)
