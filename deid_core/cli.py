"""``deid`` command line: assess, safe-harbor, apply, search.

Bad input (unknown column, value missing from a hierarchy, malformed
population table, threshold outside (0, 1], unreadable file) -> exit code 2
and one line on stderr; outputs are computed in memory first and written
atomically, never over the input.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Callable, Sequence

from common.cli import HelpFormatter
from .errors import DeidInputError

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints the whole usage)
        raise DeidInputError(f"{self.prog}: {message}")


def _levels(text: str | None) -> dict[str, int]:
    if not text:
        return {}
    out = {}
    for part in text.split(","):
        name, sep, lvl = part.rpartition("=")
        if not sep or not name or not lvl.strip().isdigit():
            raise DeidInputError(f"--levels: expected name=level[,name=level...], got {part!r}")
        out[name.strip()] = int(lvl)
    return out


def _guard_outputs(inputs: Sequence[str | None], outputs: Sequence[str | None]) -> None:
    ins = {Path(p).resolve() for p in inputs if p}
    for o in outputs:
        if o and Path(o).resolve() in ins:
            raise DeidInputError(f"output {o!r} would overwrite an input")


def cmd_assess(args: argparse.Namespace) -> int:
    from .assess import assess
    from .io import read_table, require_records, write_json, write_table, write_text
    from .report import build_report, plots, render_html
    from .spec import load_spec

    _guard_outputs([args.input, args.spec, args.population], [args.out, args.html, args.output, args.policy_out, args.per_record])
    t0 = time.perf_counter()
    spec = load_spec(args.spec)
    df = read_table(args.input, spec.missing_values)
    require_records(df, repr(args.input))
    releases = bool(args.output or args.policy_out)  # a release (or its recipe) needs every column's fate
    accepted = _accepted(args, args.out) if releases else {}
    fates = spec.fates(df.columns) if releases or spec.rest is not None else None
    spec = spec.resolve(df.columns) if fates is not None else spec
    pop = read_table(args.population, spec.missing_values, categorical=False) if args.population else None
    numeric = [c for c in args.numeric.split(",") if c] if args.numeric is not None else None
    a = assess(df, spec, pop, levels=_levels(args.levels), record_suppression=True if args.suppress else None,
               numeric=numeric)
    result = a.to_dict()
    if args.policy_out:
        result["policy"] = a.policy.to_dict(relative_to=Path(args.policy_out).resolve().parent)
    reapply = {"command": f"deid apply --input NEXT.csv --policy {args.policy_out or 'POLICY.json'} --out RELEASE.csv",
               "policy_file": str(args.policy_out or "")}
    result["report"] = build_report(a, input_name=str(args.input), source=df, reapply=reapply)
    if args.output:
        from .detect import check_release
        result["identifier_check"] = check_release(a.output, fates, safe_harbor=False, accepted=accepted)
        result["accepted_columns"] = result["identifier_check"]["accepted_columns"]
    result["seconds"] = round(time.perf_counter() - t0, 4)
    html = render_html(result["report"], plots(a)) if args.html else None
    write_json(result, args.out)
    if html is not None:
        write_text(html, args.html)
    if args.output:
        write_table(a.output, args.output)
    if args.policy_out:
        a.policy.with_fates(fates, spec.rest, False).save(args.policy_out)
    if args.per_record:
        write_table(a.per_record, args.per_record)
    return 0


def _accepted(args: argparse.Namespace, report: str | None) -> dict[str, str]:
    """``--accept-column NAME:REASON`` options of a command whose report file is ``report``."""
    from .detect import parse_accepted
    return parse_accepted(getattr(args, "accept_column", None), report or None)


def _add_accept(p: argparse.ArgumentParser) -> None:
    p.add_argument("--accept-column", action="append", metavar="NAME:REASON",
                   help="release this column although it looks like an identifier; the reason goes into the report")


def cmd_safe_harbor(args: argparse.Namespace) -> int:
    from .io import read_table, require_records, write_json, write_table
    from .safe_harbor import safe_harbor
    from .spec import load_spec

    _guard_outputs([args.input, args.spec, args.zip_population], [args.out, args.policy_out, args.report])
    accepted = _accepted(args, args.report)
    spec = load_spec(args.spec)
    df = read_table(args.input, spec.missing_values)
    require_records(df, repr(args.input))
    zp = read_table(args.zip_population, categorical=False) if args.zip_population else None
    out, policy, info = safe_harbor(df, spec, zp, args.reference_year, accepted=accepted)
    write_table(out, args.out)
    if args.policy_out:
        policy.save(args.policy_out)
    if args.report:
        write_json(info, args.report)
    return 0


def cmd_apply(args: argparse.Namespace) -> int:
    from .detect import check_release
    from .io import read_table, require_records, write_json, write_table
    from .transform import Policy

    _guard_outputs([args.input, args.policy, args.key_file], [args.out, args.report])
    accepted = _accepted(args, args.report)
    policy = Policy.load(args.policy)
    key = None
    if args.key_file:
        try:
            key = Path(args.key_file).read_bytes().strip()
        except OSError as exc:
            raise DeidInputError(f"cannot read key file {args.key_file!r}: {exc.strerror or exc}") from None
    df = read_table(args.input)
    require_records(df, repr(args.input))
    fates = policy.fates(list(df.columns))
    out, ctx = policy.apply(df, key=key)
    check = check_release(out, fates, safe_harbor=policy.is_safe_harbor(), accepted=accepted,
                          masked=[c for c, f in fates.items() if f == "masked"])
    write_table(out, args.out)
    if args.report:
        write_json({"policy": str(args.policy), "column_fates": fates, "identifier_check": check,
                    "accepted_columns": check["accepted_columns"], "warnings": ctx.get("warnings", [])}, args.report)
    for w in ctx.get("warnings", []):
        print(f"deid: warning: {w}", file=sys.stderr)
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    from .search import run_search_command
    _guard_outputs([args.input, args.spec, args.population], [args.out, args.apply_best, args.html])
    return run_search_command(args)


INPUT_HELP = "the table to de-identify (CSV or Parquet; at least one record)"
SPEC_HELP = "spec (TOML): column roles, hierarchies, release type and threshold"
SEARCH_METHODS = ("bps", "directed", "ola", "partition", "boxes")


def _register_search(sub: argparse._SubParsersAction) -> None:
    """``deid search``: find policies that meet a threshold with little information loss."""
    se = sub.add_parser("search", help="search for de-identification policies (OLA, BPS, Directed)")
    se.add_argument("--input", required=True, help=INPUT_HELP)
    se.add_argument("--spec", required=True, help=SPEC_HELP)
    se.add_argument("--method", required=True, choices=SEARCH_METHODS,
                    help="ola: optimal lattice anonymization (k-anonymity); bps, directed: risk-threshold "
                         "searches; partition, boxes: local recoding")
    se.add_argument("--population", help="CSV: QI columns at their most detailed level + count (bps, directed)")
    g = se.add_mutually_exclusive_group()
    g.add_argument("--threshold", type=float, help="risk threshold in (0, 1] (default: [release] threshold; "
                   "bps/directed: the Safe Harbor policy's normalized population risk)")
    g.add_argument("--k", type=int, help="k-anonymity (ola); minimum subset size (partition)")
    se.add_argument("--max-suppression", type=float, default=0.0, help="share of records that may be suppressed (ola)")
    se.add_argument("--iterations", type=int, default=100, help="policies to look for (bps, directed)")
    se.add_argument("--loss", default="nue", choices=("nue", "geometric"), help="information loss (ola)")
    se.add_argument("--top", type=int, default=10, help="policies to report (ola)")
    se.add_argument("--min-population", type=float, default=0.0,
                    help="partition: also keep each side's population count at least this")
    se.add_argument("--seed", type=int, default=0, help="random seed (bps, directed)")
    se.add_argument("--out", required=True, help="RESULT.json")
    se.add_argument("--apply-best", help="write the data released under the best policy here")
    se.add_argument("--html", help="self-contained HTML page with a risk vs information loss plot of the policies")
    _add_accept(se)
    se.set_defaults(func=cmd_search)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="deid", description="Measure re-identification risk and de-identify health data.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    a = sub.add_parser("assess", help="measure risk (optionally after generalization/suppression) and report")
    a.add_argument("--input", required=True, help=INPUT_HELP)
    a.add_argument("--spec", required=True, help=SPEC_HELP)
    a.add_argument("--population", help="CSV: QI columns at their most detailed level + count")
    a.add_argument("--out", required=True, help="report JSON")
    a.add_argument("--html", help="self-contained HTML report")
    a.add_argument("--levels", help="full-domain levels, e.g. age=2,zip=1 (overrides [transform] levels)")
    a.add_argument("--suppress", action="store_true", help="suppress records in classes smaller than k(threshold)")
    a.add_argument("--output", help="write the transformed data here")
    a.add_argument("--policy-out", help="write the re-appliable policy JSON here")
    a.add_argument("--per-record", help="CSV of per-record risks (class size, prosecutor, journalist, instance disclosure)")
    a.add_argument("--numeric", help="comma-separated numeric columns for before/after mean, SD, correlation")
    _add_accept(a)
    a.set_defaults(func=cmd_assess)
    s = sub.add_parser("safe-harbor", help="apply HIPAA Safe Harbor")
    s.add_argument("--input", required=True, help=INPUT_HELP)
    s.add_argument("--spec", required=True, help=SPEC_HELP)
    s.add_argument("--zip-population", help="CSV: zip (or zip3) + population (or count)")
    s.add_argument("--out", required=True, help="the released table (CSV or .parquet)")
    s.add_argument("--policy-out", help="write the re-appliable policy JSON here")
    s.add_argument("--report", help="JSON: which columns were recognized as which Safe Harbor kind")
    s.add_argument("--reference-year", type=int, help="year for the age >= 90 birth-year rule (default: this year)")
    _add_accept(s)
    s.set_defaults(func=cmd_safe_harbor)
    ap = sub.add_parser("apply", help="re-apply a saved policy to a new batch")
    ap.add_argument("--input", required=True, help=INPUT_HELP)
    ap.add_argument("--policy", required=True, help="policy JSON saved by assess/safe-harbor --policy-out")
    ap.add_argument("--out", required=True, help="the released table (CSV or .parquet)")
    ap.add_argument("--key-file", help="secret key for pseudonymize/randomize steps (kept by the data owner)")
    ap.add_argument("--report", help="JSON: each column's fate, the identifier check and accepted columns")
    _add_accept(ap)
    ap.set_defaults(func=cmd_apply)
    for register in EXTRA_COMMANDS.values():
        register(sub)
    return p


#: Subcommands added by other modules (e.g. ``search``): name -> register(subparsers).
#: ``register`` adds a parser whose ``func(args) -> int`` default is the handler;
#: raise :class:`DeidInputError` for bad input to get exit code 2.
EXTRA_COMMANDS: dict[str, Callable[[argparse._SubParsersAction], None]] = {"search": _register_search}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help
            return int(exc.code or 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return int(args.func(args))
    except DeidInputError as exc:
        print(f"deid: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (OSError, UnicodeDecodeError) as exc:
        msg = " ".join(str(getattr(exc, "strerror", None) or exc).split())
        print(f"deid: error: {getattr(exc, 'filename', '') or ''} {msg}".replace("  ", " ").strip(), file=sys.stderr)
        return EXIT_BAD_INPUT
    except MemoryError:
        print("deid: error: out of memory", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
