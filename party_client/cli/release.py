"""``party link-release`` (join, then de-identify and release) and ``party dedup-many`` (which other
registries also hold each record): :mod:`party_client.release` from the command line."""
from __future__ import annotations

import argparse
import json

from common.cli import UsageError
from party_client.cli.options import assignment_options, columns, connected, key_source, party, scheme_options
from party_client.cli.preset_options import add_preset_options, check_plan, preset_rules


def _accepted_columns(items: list[str] | None) -> dict[str, str]:
    from deid_core import DeidInputError
    from deid_core.cli.options import flagged
    from deid_core.detect import parse_accepted
    from deid_core.errors import ParameterError
    try:
        return parse_accepted(items)
    except ParameterError as error:
        raise UsageError(f"party link-release: {flagged(error)}") from None
    except DeidInputError as error:
        raise UsageError(f"party link-release: {error}") from None


def _owner_key(path: str | None) -> bytes | None:
    """The data owner's key (``--key-file``, else ``$DEID_KEY``), as ``deid`` reads it."""
    from deid_core import DeidInputError
    from deid_core.cli.masking import owner_key
    try:
        return owner_key(path)
    except DeidInputError as error:
        raise UsageError(f"party link-release: {error}") from None


def cmd_link_release(args) -> int:
    from party_client.release import link_release
    args.rules = preset_rules(args)
    key_source(args)
    if check_plan(args, args.rules):
        return 0
    summary = link_release(party(args), args.holder, args.input, spec=args.spec, method=args.method,
                           out=args.out, report_dir=args.report_dir, id_column=args.id_column, rules=args.rules,
                           policy=args.policy, threshold=args.threshold, max_suppression=args.max_suppression,
                           accepted=_accepted_columns(args.accept_column), key=_owner_key(args.key_file),
                           one_to_one=args.one_to_one or args.duplicate_free, duplicate_free=args.duplicate_free,
                           key_bits=args.key_bits, timeout=args.timeout, scheme=args.scheme, force=args.force)
    print(json.dumps(summary, default=str))
    return 0


def cmd_dedup_many(args) -> int:
    from party_client.files import check_output, write_table
    from party_client.release import dedup_many
    key_source(args)
    check_output(args.out, args.input)
    output, report = dedup_many(party(args), columns(args.registries), args.input, id_column=args.id_column,
                                rules=args.rules, column=args.column, key_bits=args.key_bits,
                                timeout=args.timeout, scheme=args.scheme)
    write_table(output, args.out)
    print(json.dumps(report))
    return 0


def _querier_options(sub: argparse.ArgumentParser) -> None:
    """The options both commands share: input, matching key, output, scheme and waiting."""
    sub.add_argument("--input", required=True, help="your table (CSV or Parquet)")
    sub.add_argument("--id-column", help="exact matching on this column")
    sub.add_argument("--rules", help="fuzzy matching with this rules file (TOML), instead of --id-column")
    sub.add_argument("--out", required=True, help="output table (CSV or .parquet)")
    scheme_options(sub)
    sub.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait for each holder")


def register(commands: argparse._SubParsersAction) -> None:
    release = connected(commands.add_parser("link-release", help="join, then de-identify and release"))
    release.add_argument("--holder", required=True, help="the holder party's name (e.g. the registry)")
    _querier_options(release)
    add_preset_options(release, querier=True)
    assignment_options(release)
    release.add_argument("--spec", required=True, help="de-identification spec (TOML) of the joined table")
    release.add_argument("--method", required=True, help="safe-harbor | policy | threshold")
    release.add_argument("--policy", help="a saved deid policy (JSON) for --method policy")
    release.add_argument("--threshold", type=float, help="risk threshold for --method threshold")
    release.add_argument("--max-suppression", type=float, default=0.0,
                         help="share of records that may be suppressed (--method threshold)")
    release.add_argument("--report-dir", required=True, help="folder for release_report.json/.html")
    release.add_argument("--accept-column", action="append", metavar="NAME:REASON",
                         help="release this column although it looks like an identifier; the reason goes into "
                              "the report")
    release.add_argument("--key-file", help="file holding the data owner's secret masking key, as deid reads it "
                                            "(default: the DEID_KEY environment variable): notes replaced by "
                                            "surrogates ([text] mode), a policy's keyed steps")
    release.set_defaults(run=cmd_link_release)

    many = connected(commands.add_parser("dedup-many", help="which other registries also hold each record"))
    many.add_argument("--registries", required=True, help="comma-separated registry (holder) names")
    _querier_options(many)
    many.add_argument("--column", default="also_held_by",
                      help="output column listing the registries that also hold the record")
    many.set_defaults(run=cmd_dedup_many)
