"""``deid subsample``: draw a random sample (of persons with ``[longitudinal]``, else of records) and
measure its journalist risk with the full data as the population; ``--find-fraction`` searches the
largest fraction that meets a threshold over repeated draws (docs/subsampling.md).

Outputs are computed in memory first and written atomically, never over an input.
"""
from __future__ import annotations

import argparse
import math
import sys
import time

from ..errors import DeidInputError
from .options import AT_LEAST_1, PROBABILITY, SEED, SHARE, add_input_spec, guard_outputs, summary_line


def default_threshold(spec) -> float:
    """The spec's threshold on Pr(re-id | attack): ``[release] threshold`` / the largest Pr(T), as the
    searches take it (El Emam & Arbuckle, ch. 2, "Measuring Risk Under Plausible Attacks")."""
    from ..risk import release_conditional_threshold

    return release_conditional_threshold(spec.release)


def check_search_options(args: argparse.Namespace) -> None:
    """One-line errors for the options of ``--find-fraction`` before any data is read."""
    if args.threshold is not None and not 0 < args.threshold <= 1:
        raise DeidInputError(f"threshold {args.threshold} is outside (0, 1]")
    if args.draws < 1:
        raise DeidInputError(f"--draws must be at least 1, got {args.draws}")
    if not 0 < args.step <= 1:
        raise DeidInputError(f"--step {args.step} is outside (0, 1]")
    if not 0 <= args.quantile <= 1:
        raise DeidInputError(f"--quantile {args.quantile} is outside [0, 1]")


def cmd_subsample(args: argparse.Namespace) -> int:
    from ..io import read_table, require_records, write_json, write_table, write_text
    from ..risk import meets
    from ..subsample import MIN_POWERED_UNITS, find_fraction, measure_key, prepare, risk_of, sample_size
    from ..spec import load_spec

    guard_outputs([args.input, args.spec], [args.out, args.report, args.html])
    if args.find_fraction == (args.fraction is not None):
        raise DeidInputError("give exactly one of --fraction F and --find-fraction")
    if not args.find_fraction and args.out is None:
        raise DeidInputError("--fraction needs --out (the sample)")
    if args.fraction is not None:
        sample_size(1, args.fraction)  # one line when outside (0, 1]
    check_search_options(args)
    t0 = time.perf_counter()
    spec = load_spec(args.spec)
    df = read_table(args.input, spec.missing_values)
    require_records(df, repr(args.input))
    spec.check_columns(df.columns)
    if not spec.quasi:
        raise DeidInputError("spec declares no quasi-identifier: there is no risk to measure")
    measure = args.measure or ("max" if spec.release.type == "public" else "average")
    threshold = args.threshold if args.threshold is not None else default_threshold(spec)
    if not 0 < threshold <= 1:
        raise DeidInputError(f"threshold {threshold} is outside (0, 1]")
    sub = prepare(df, spec)
    report: dict = {"input": str(args.input), "units": sub.units, "population_units": sub.n_units,
                    "population_records": sub.n_rows, "rounding": "floor(N x fraction), exact decimal, at least 1",
                    "seed": args.seed, "full": sub.full, "measure": measure_key(measure), "threshold": threshold}
    fraction = args.fraction
    if args.find_fraction:
        from tqdm import tqdm
        grid = math.ceil(1 / args.step)  # bisection: the top, the bottom, then log2 of the grid at most
        with tqdm(total=args.draws * (2 + math.ceil(math.log2(max(grid, 2)))), delay=2, desc="deid subsample (draws, "
                  "at most)", unit="draw", leave=False) as bar:
            search = find_fraction(sub, threshold, measure, draws=args.draws, seed=args.seed, step=args.step,
                                   quantile=args.quantile, progress=lambda d: bar.update(d - bar.n))
        report["search"] = search
        fraction = search["fraction"]
    rows = None
    if fraction is not None:
        rows = sub.draw(fraction, args.seed)
        sample = sub.measure(rows)
        risk = risk_of(sample, measure)
        report.update(fraction=fraction, sample_units=sample_size(sub.n_units, fraction), sample_records=int(len(rows)),
                      draw=0, sample=sample, risk=risk, meets_threshold=bool(meets(risk, threshold)))
    report["seconds"] = round(time.perf_counter() - t0, 4)
    html = None
    if args.html:
        from ..report import render, subsample_document
        html = render(subsample_document(report, list(df.columns), release_type=spec.release.type,
                                         release_threshold=spec.release.threshold))
    if args.out is not None and rows is not None:
        write_table(df.iloc[rows].reset_index(drop=True), args.out)
    if args.report:
        write_json(report, args.report)
    if html is not None:
        write_text(html, args.html)
    if fraction is not None:
        searched = report.get("search")
        how = (f"; the largest fraction whose {searched['quantile']:g} quantile over {searched['draws']} draws "
               f"meets it (median {searched['at_fraction']['median']:.4g})" if searched else "")
        print(f"deid subsample: {args.out or 'no sample written'}: fraction {fraction:g}, {report['sample_units']:,} "
              f"of {sub.n_units:,} {sub.units} ({report['sample_records']:,} records); journalist {measure} risk "
              f"{report['risk']:.4g} against {threshold:g}{how}")
    if fraction is None:
        summary_line("subsample", [args.report], f"no fraction down to {args.step:g} meets the threshold "
                     f"{threshold:g} (journalist {measure}): no sample written")
        print(f"deid: warning: no fraction down to {args.step} meets the threshold {threshold:g} "
              f"(journalist {measure}); nothing written but the report", file=sys.stderr)
    elif report["sample_units"] < MIN_POWERED_UNITS:
        print(f"deid: warning: the sample holds {report['sample_units']} {sub.units}, fewer than "
              f"{MIN_POWERED_UNITS}: classical tests lose statistical power", file=sys.stderr)
    if fraction is not None and not report["meets_threshold"]:
        print(f"deid: warning: the drawn sample's journalist {measure} risk {report['risk']:.4g} does not meet "
              f"{threshold:g}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """``deid subsample``: a random sample and its journalist risk against the full data."""
    p = sub.add_parser("subsample", help="draw a random sample (persons with [longitudinal]) and measure its "
                                         "journalist risk against the full data")
    add_input_spec(p)
    p.add_argument("--fraction", type=PROBABILITY, help="sampling fraction in (0, 1]: floor(N x fraction) units")
    p.add_argument("--find-fraction", action="store_true",
                   help="search the largest fraction (on a grid of --step) that meets --threshold over --draws draws")
    p.add_argument("--threshold", type=PROBABILITY,
                   help="on the journalist risk (default: [release] threshold / the largest Pr(attack))")
    p.add_argument("--measure", choices=("max", "average"),
                   help="journalist max or average risk (default: max for a public release, else average)")
    p.add_argument("--draws", type=AT_LEAST_1, default=100, help="--find-fraction: draws per probed fraction")
    p.add_argument("--quantile", type=SHARE, default=0.95,
                   help="--find-fraction: a fraction meets the threshold when this quantile of the risk over "
                        "the draws does (0.5: the median)")
    p.add_argument("--step", type=PROBABILITY, default=0.01, help="--find-fraction: grid of fractions")
    p.add_argument("--seed", type=SEED, default=0, help="random seed (draw 0 is the sample written)")
    p.add_argument("--out", help="the sample (CSV or .parquet; every column of the input, its rows in input order)")
    p.add_argument("--report", help="JSON: sizes, rounding, the sample's and the full data's risk, the search")
    p.add_argument("--html", help="self-contained HTML page: the verdict, the sample against the full data, the "
                                  "fractions probed")
    p.set_defaults(run=cmd_subsample)
