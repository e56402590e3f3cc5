"""``deid geo`` (cluster small areas and release a column of area codes) and ``deid geoproxy`` (risk of
predicting where a person lives from the provider areas) — docs/geography.md, "From the command line".

Everything is computed in memory first; outputs are written atomically only after every output folder was
checked, never over an input.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pandas as pd

from ..errors import DeidInputError
from .renamed import Renamed, add_old_spellings, take_old_spellings
from .options import AT_LEAST_0, AT_LEAST_1, PROBABILITY, SEED, guard_outputs, summary_line

#: Seconds between progress lines of a long clustering (no silent waits).
PROGRESS_EVERY = 2.0
#: Records from which ``deid geoproxy`` says what it is measuring before each boundary (a few seconds each).
ANNOUNCE_RECORDS = 100_000


def _read_data(path: str, columns: list[str]) -> pd.DataFrame:
    """The input table as exact text (nothing is missing: empty cells stay empty), with the named columns."""
    from ..io import read_text_table, require_records

    df = read_text_table(path, [], categorical=True)
    require_records(df, repr(path))
    for c in columns:
        if c not in df.columns:
            raise DeidInputError(f"column {c!r} is not in the input {path!r}")
    return df


def _progress(what: str):
    """A progress callback printing one line at most every :data:`PROGRESS_EVERY` seconds."""
    t0 = last = time.perf_counter()

    def report(rounds: int, clusters: int, small: int) -> None:
        nonlocal last
        now = time.perf_counter()
        if now - last >= PROGRESS_EVERY:
            last = now
            print(f"deid geo: {what}: round {rounds}, {clusters:,} clusters, {small:,} still below k "
                  f"({now - t0:.0f} s)", file=sys.stderr, flush=True)
    return report


def hierarchy_text(areas, clustering) -> str:
    """ARX layout (``;``, no header): area id; cluster id; [boundary;] ``*`` — cluster ids nest in boundaries."""
    cols = [pd.Series(areas.ids.to_numpy(dtype=object)), pd.Series(clustering.names[clustering.labels])]
    if areas.boundary_source is not None:
        cols.append(pd.Series(areas.boundary_names[areas.boundary]))
    line = cols[0]
    for c in cols[1:]:
        line = line + ";" + c
    return "\n".join((line + ";*").tolist()) + "\n"


def geo_command(args: argparse.Namespace) -> str:
    """The ``deid geo`` command that releases the next batch the same way (for the page)."""
    risk = f"--k {args.k}" if args.k is not None else f"--threshold {args.threshold:g}"
    extra = "".join(f" {flag} {value}" for flag, value in (("--person", args.person),
                                                          ("--within-prefix", args.within_prefix)) if value is not None)
    return (f"deid geo --areas AREAS.csv --input NEXT.csv --column {args.column} {risk} --release {args.release} "
            f"--seed {args.seed}{extra} --out RELEASE.csv")


def cmd_geo(args: argparse.Namespace) -> int:
    from ..geo.areas import read_areas
    from ..geo.cluster import cluster_areas
    from ..geo.release import release_areas
    from ..io import write_json, write_table, write_text
    from ..risk import k_for_threshold
    from ..risk.attack import meets

    guard_outputs([args.areas, args.input], [args.out, args.report, args.hierarchy_out, args.html])
    t0 = time.perf_counter()
    if args.k is not None and args.k < 1:
        raise DeidInputError(f"--k must be at least 1, got {args.k}")
    k = args.k if args.k is not None else k_for_threshold(args.threshold)
    threshold = args.threshold if args.threshold is not None else 1.0 / k
    if args.knn < 1:
        raise DeidInputError(f"--knn must be at least 1, got {args.knn}")
    areas = read_areas(args.areas, args.within_prefix)
    df = _read_data(args.input, [args.column, *([args.person] if args.person else [])])
    clustering = cluster_areas(areas, k, knn=args.knn, progress=_progress(f"clustering {len(areas):,} areas"))
    released = release_areas(df[args.column], areas, clustering, args.release, args.seed, args.column,
                             df[args.person] if args.person else None)
    out = df.copy()
    out[args.column] = released.values
    fate = ("a random area of its cluster" if args.release == "random" else "the id of its cluster")
    report = {"input": str(args.input), "areas": str(args.areas), "column": args.column,
              "columns": {c: (f"replaced by {fate}" if c == args.column else "unchanged") for c in df.columns},
              "threshold": threshold, "k": k, "boundary": areas.boundary_source,
              "areas_in_table": len(areas), "population": int(areas.population.sum()),
              "area_km2_given": areas.has_area,
              "meets_threshold": meets(clustering.max_risk, threshold),
              "clustering": clustering.summary(), "release": released.summary,
              "seconds": round(time.perf_counter() - t0, 4)}
    hierarchy = hierarchy_text(areas, clustering) if args.hierarchy_out else None
    html = None
    if args.html:
        from ..report import geo_document, render
        people = areas.population.astype(float)
        clusters = np.bincount(clustering.labels, weights=people)
        html = render(geo_document(report, people, clusters[clusters > 0], geo_command(args)))
    write_table(out, args.out)
    if args.report:
        write_json(report, args.report)
    if html is not None:
        write_text(html, args.html)
    if hierarchy is not None:
        write_text(hierarchy, args.hierarchy_out)
    summary = clustering.summary()
    others = [c for c in df.columns if c != args.column]
    print(f"deid geo: {args.out}: {args.column} replaced by {fate} (k = {k}: {len(areas):,} areas in "
          f"{summary['clusters']:,} clusters, max risk {summary['max_risk']:.4g}, "
          f"{'meets' if report['meets_threshold'] else 'does NOT meet'} {threshold:g}); "
          f"{released.summary['records_changed']:,} of {len(df):,} records changed; "
          f"{len(others)} other column(s) unchanged ({', '.join(others)}): assess or apply a policy to them "
          "before any release")
    return 0


def cmd_geoproxy(args: argparse.Namespace) -> int:
    from ..geo.areas import areas_from_frame
    from ..geo.proxy import geoproxy_risk
    from ..io import read_text_table, write_json

    take_old_spellings(args, "geoproxy", required=("report",))
    guard_outputs([args.areas, args.input], [args.report])
    t0 = time.perf_counter()
    prefixes = args.within_prefix or [0]
    if any(p < 0 for p in prefixes):
        raise DeidInputError("--within-prefix must be 0 (no boundary) or more")
    table = read_text_table(args.areas, [""], categorical=False)
    cols = [c for c in (args.home, args.provider_area, args.person, args.provider, args.visit) if c]
    df = _read_data(args.input, cols)
    results = []
    for p in prefixes:
        if len(df) >= ANNOUNCE_RECORDS:
            print(f"deid geoproxy: scoring {len(df):,} records against the {args.neighbors} nearest areas of each "
                  f"provider area{f' within prefixes of {p}' if p else ''} ({time.perf_counter() - t0:.0f} s so far)",
                  file=sys.stderr, flush=True)
        areas = areas_from_frame(table, f"area table {str(args.areas)!r}", p or None)
        r = geoproxy_risk(df, areas, home=args.home, provider_area=args.provider_area, person=args.person,
                          provider=args.provider, visit=args.visit, variant=args.variant, level=args.level,
                          neighbors=args.neighbors)
        results.append({"within_prefix": p, **r.summary()})
    write_json({"input": str(args.input), "areas": str(args.areas), "home": args.home,
                "provider_area": args.provider_area, "results": results,
                "seconds": round(time.perf_counter() - t0, 4)}, args.report)
    summary_line("geoproxy", [args.report], "; ".join(
        f"{'no boundary' if r['within_prefix'] == 0 else 'within prefixes of ' + str(r['within_prefix'])}: "
        f"{r['units']:,} {r['level']}s, average risk {r['average_risk']:.4f}, max {r['max_risk']:.4f}" for r in results))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """``deid geo`` and ``deid geoproxy``."""
    from ..geo.cluster import DEFAULT_KNN
    from ..geo.proxy import DEFAULT_NEIGHBORS, LEVELS, VARIANTS
    from ..geo.release import RELEASES

    g = sub.add_parser("geo", help="cluster adjacent small areas until each holds enough people; release a "
                                   "column of area codes as a random area of its cluster or the cluster id")
    g.add_argument("--areas", required=True, help="area table (CSV or Parquet): id, lat, lon, population "
                                                  "[, area_km2, neighbors, boundary]")
    g.add_argument("--input", required=True, help="the table whose area column is released (read as exact text)")
    g.add_argument("--column", required=True, help="the column of area codes (e.g. zip)")
    risk = g.add_mutually_exclusive_group(required=True)
    risk.add_argument("--threshold", type=PROBABILITY,
                      help="maximum risk: every cluster holds at least k = 1/threshold people (0.09 -> 11)")
    risk.add_argument("--k", type=AT_LEAST_1, help="people every cluster must hold (instead of --threshold)")
    g.add_argument("--out", required=True, help="the table with the column released (CSV or .parquet)")
    g.add_argument("--release", default="random", choices=RELEASES,
                   help="random: a random area of the record's cluster (the book's); cluster: the cluster id")
    g.add_argument("--seed", type=SEED, default=0, help="random seed (release random)")
    g.add_argument("--person", help="person id column: one draw per person and cluster, so all records of a "
                                    "person show the same area (release random)")
    g.add_argument("--within-prefix", type=AT_LEAST_0, metavar="N",
                   help="never cluster across the first N characters of the ids (e.g. 3-digit ZIP)")
    g.add_argument("--knn", type=AT_LEAST_1, default=DEFAULT_KNN,
                   help="neighbours per area when the area table has no neighbors column")
    g.add_argument("--report", help="JSON: clusters, risk, release, shift distances")
    g.add_argument("--html", help="self-contained HTML page: the verdict, what happened to each column, people per "
                                  "area and per cluster")
    g.add_argument("--hierarchy-out", metavar="FILE",
                   help="the clusters as a generalization hierarchy (ARX layout: id;cluster;[boundary;]*)")
    g.set_defaults(run=cmd_geo)

    p = sub.add_parser("geoproxy", help="risk of predicting a person's area from their providers' areas "
                                        "(triangulation over the nearest areas)")
    p.add_argument("--areas", required=True, help="area table (as for deid geo)")
    p.add_argument("--input", required=True, help="claims or visits: one row per record")
    p.add_argument("--home", required=True, help="the person's area column (e.g. patient zip)")
    p.add_argument("--provider-area", required=True, help="the provider's area column (e.g. provider zip)")
    p.add_argument("--person", help="the person id column (patient level)")
    p.add_argument("--provider", help="the provider id column (variants providers, visits)")
    p.add_argument("--visit", help="the visit column, e.g. date of service (variant visits)")
    p.add_argument("--level", default="patient", choices=LEVELS,
                   help="patient: all records of a person together; record: each record alone")
    p.add_argument("--variant", default="providers", choices=VARIANTS,
                   help="what one vote is: a claim, a visit, a distinct provider (the book's), a provider area")
    p.add_argument("--neighbors", type=AT_LEAST_1, default=DEFAULT_NEIGHBORS,
                   help="nearest areas that get points (n - rank) around each provider area")
    p.add_argument("--within-prefix", type=AT_LEAST_0, action="append", metavar="N",
                   help="the adversary knows the first N characters of the home area (repeatable; 0 = none)")
    p.add_argument("--report", help="JSON: average geoproxy risk and rank shares per boundary (required)")
    add_old_spellings(p, [Renamed("--out", "--report", "report")])
    p.set_defaults(run=cmd_geoproxy)
