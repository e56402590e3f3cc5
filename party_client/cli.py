"""``party`` command line: init, register, hold, join, dedup, lookup, link-release, dedup-many,
estimate, demo.

Exit status 0 on success; 2 with one line on stderr for bad input or a
refusal (nothing is written); 1 when the key holder stays unreachable.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys

from common.cli import INTERRUPTED, Expected, OneLineParser, UsageError, exit_now, run
from common.distributed import Cluster, ClusterLost, DaskUnavailable, add_timeout_option
from common.schemes import DEFAULT_SCHEME, SCHEME_NAMES, parse_scheme_list
from party_client.errors import PartyError
from party_client.preset_options import add_preset_options, check_plan, estimate_preset, preset_rules, write_page
from party_client.transport import FIRST_CONTACT_SECONDS, RETRY_WINDOW_SECONDS, KeyHolderUnavailable

log = logging.getLogger("party")


def _columns(text: str | None) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


def _party(args):
    from party_client.api import Party
    return Party(args.dir, keyholder=args.keyholder, insecure=args.insecure, tls_dir=args.tls_dir,
                 progress=None if not args.quiet else False, retry_window=args.retry_window,
                 connect_timeout=args.connect_timeout)


def cmd_init(args) -> int:
    from party_client.identity import PartyDir
    party = PartyDir.create(args.dir, args.name)
    print(f"party '{party.name}' created in {party.path}; key fingerprint {party.fingerprint}")
    return 0


def cmd_register(args) -> int:
    fingerprint = _party(args).register()
    print(f"registered with the key holder at {args.keyholder}; key fingerprint {fingerprint}")
    return 0


def cmd_hold(args) -> int:
    party = _party(args)
    args.rules = preset_rules(args)
    _key_source(args)
    def waiting() -> None:
        print(f"party: waiting for queries from the key holder at {party.keyholder} (polls of "
              f"{args.poll_seconds:g} s); Ctrl-C to stop", file=sys.stderr, flush=True)

    def served_one(summary: dict) -> None:
        print(json.dumps(summary, default=str), flush=True)
    cluster = Cluster.at(args.dask, allow_plaintext=True, timeout=args.dask_timeout) if args.dask else None
    try:                                      # (connected before reading the table)
        served = party.hold(args.input, args.id_column, _columns(args.release_columns), once=args.once,
                            poll_seconds=args.poll_seconds, id_type=args.id_type, rules=args.rules,
                            allow_fast_blinding=args.allow_fast_blinding,
                            allowed_queriers=_columns(args.allow_querier) or None, schemes=args.schemes,
                            on_ready=None if args.once else waiting, on_served=None if args.once else served_one,
                            concurrency=args.concurrency, dask_client=cluster and cluster.client,
                            dask_timeout=args.dask_timeout)
    finally:                                  # Ctrl-C included: the scheduler drops our pending tasks
        if cluster is not None:
            cluster.close()
    print(f"served {len(served)} round(s)")
    if args.once:                             # polling printed each round as it was served
        for summary in served:
            print(json.dumps(summary, default=str))
    return 0


def _key_source(args) -> None:
    if (args.id_column is None) == (getattr(args, "rules", None) is None):
        raise UsageError(f"party {args.command}: give exactly one of --id-column and --rules")


def _finish(result, out: str, report_file: str | None) -> int:
    from party_client.tables import write_table
    write_table(result.frame, out)
    if report_file:
        with open(report_file, "w") as sink:
            json.dump(result.report, sink, indent=2, default=str)
    summary = {k: result.report[k] for k in ("mode", "holder", "scheme", "records", "matched_output_rows", "output_rows",
                                             "blinding", "risk", "buckets", "warning") if k in result.report}
    print(json.dumps(summary, default=str))
    if result.report.get("warning"):
        print(f"party: warning: {result.report['warning']}", file=sys.stderr)
    return 0


def cmd_query(args) -> int:
    from party_client.tables import check_output
    check_output(args.out, args.input)
    if args.command != "lookup":
        args.rules = preset_rules(args)
        _key_source(args)
        if check_plan(args, args.rules):           # before any session, or even a party directory
            return 0
    party = _party(args)
    common = dict(id_type=args.id_type, key_bits=args.key_bits, fast_blinding=args.fast_blinding,
                  timeout=args.timeout, matched_column=args.matched_column, scheme=args.scheme)
    if args.command == "lookup":
        if args.id_column is None:
            raise UsageError("party lookup: --id-column is required")
        result = party.lookup(args.holder, args.input, args.id_column, args.population, max_risk=args.max_risk,
                              buckets=args.buckets, **common)
    else:
        result = getattr(party, args.command)(args.holder, args.input, args.id_column, rules=args.rules,
                                              term_column=args.term_column, one_to_one=args.one_to_one,
                                              duplicate_free=args.duplicate_free,
                                              **common)
        write_page(args, args.rules, result)
    return _finish(result, args.out, args.report)


def _accepted_columns(items: list[str] | None) -> dict[str, str]:
    from deid_core import DeidInputError
    from deid_core.detect import parse_accepted
    try:
        return parse_accepted(items)
    except DeidInputError as error:
        raise UsageError(f"party link-release: {error}") from None


def cmd_link_release(args) -> int:
    from party_client.release import link_release
    args.rules = preset_rules(args)
    _key_source(args)
    if check_plan(args, args.rules):
        return 0
    summary = link_release(_party(args), args.holder, args.input, spec=args.spec, method=args.method,
                           out=args.out, report_dir=args.report_dir, id_column=args.id_column, rules=args.rules,
                           policy=args.policy, threshold=args.threshold, max_suppression=args.max_suppression,
                           accepted=_accepted_columns(args.accept_column),
                           key_bits=args.key_bits, fast_blinding=args.fast_blinding, timeout=args.timeout,
                           scheme=args.scheme)
    print(json.dumps(summary, default=str))
    return 0


def cmd_dedup_many(args) -> int:
    from party_client.release import dedup_many
    from party_client.tables import check_output, write_table
    _key_source(args)
    check_output(args.out, args.input)
    output, report = dedup_many(_party(args), _columns(args.registries), args.input, id_column=args.id_column,
                                rules=args.rules, column=args.column, key_bits=args.key_bits,
                                fast_blinding=args.fast_blinding, timeout=args.timeout, scheme=args.scheme)
    write_table(output, args.out)
    print(json.dumps(report))
    return 0


def cmd_estimate(args) -> int:
    """Fellegi-Sunter m and u by EM on the querier's own table; no key holder involved."""
    import math
    from party_client.matching.estimate import estimate_rules, rules_text
    from party_client.tables import check_output, read_table, require_records, write_text
    check_output(args.out, args.rules, args.input, suffixes=(".toml",), kind="a .toml")
    frame = read_table(args.input)
    require_records(frame, args.input)
    if args.preset:
        return estimate_preset(args, frame)
    if not args.rules:
        raise UsageError("party estimate: give --rules or --preset")
    document, result = estimate_rules(args.rules, frame, args.threshold, max_pairs=args.max_pairs, seed=args.seed)
    write_text(rules_text(document, result, len(frame)), args.out)
    prior = math.log2((1 - result.match_proportion) / result.match_proportion)
    print(f"{len(frame):,} records, {result.pairs:,} training pairs; EM: {result.iterations} iterations, "
          f"{'converged' if result.converged else 'NOT converged'}; about {result.expected_matches:,.0f} "
          f"matching pairs (even odds within this table at weight {prior:.1f})")
    print(f"{'field':<12} {'m':>10} {'u':>10} {'log2(m/u)':>10}")
    for name, m in result.m.items():
        u = result.u[name]
        print(f"{name:<12} {m:>10.4g} {u:>10.4g} {math.log2(m / u):>10.2f}")
    threshold = document["rule"]["fellegi_sunter"]["threshold"]
    print(f"wrote {args.out} (threshold {threshold:g})")
    if result.not_above_u:
        print(f"party: warning: m did not exceed u for {', '.join(result.not_above_u)} (set just above u: these "
              "fields barely count)", file=sys.stderr)
    if not result.converged or result.not_above_u:
        print("party: warning: EM learns m from the duplicates in the input; without enough of them the "
              "estimates mean little", file=sys.stderr)
    return 0


def cmd_sessions(args) -> int:
    """List the sessions this querier left open, or close them (at the key holder and locally)."""
    import datetime as dt
    party = _party(args)
    if args.action == "list":
        rows = party.sessions()
        print("\t".join(("id", "holder", "mode", "round", "status", "created")))
        for row in rows:
            created = dt.datetime.fromtimestamp(row["created"], dt.timezone.utc).isoformat(timespec="seconds")
            print("\t".join((row["id"], row["holder"], row["mode"], str(row["round"]), row["status"], created)))
        return 0
    if (args.session_id is None) == (not args.all):
        raise UsageError("party sessions close: give a session ID or --all")
    closed = party.close_sessions(None if args.all else [args.session_id])
    print(f"closed {len(closed)} session(s)" + (f": {', '.join(closed)}" if closed else ""))
    return 0


def cmd_demo(args) -> int:
    from party_client.demo import run_demo
    if args.keep:
        print("party: warning: --keep is deprecated: use --out", file=sys.stderr)
    return run_demo(out=args.out or args.keep, rows=args.rows, force=args.force)


QUERY_HELP = {
    "join": ("join your table with a holder's: your rows plus its released columns",
             "Join your table with the holder's (like a SQL left join): every row of your table, plus the\n"
             "columns the holder releases for the rows that matched, plus --matched-column."),
    "dedup": ("which of your records the holder also has (no columns released)",
              "De-duplicate: mark which of your records the holder also has. Nothing of the holder's\n"
              "table comes back, only --matched-column, one output row per input row."),
    "lookup": ("look a few records up in a large holder through risk-bounded buckets",
               "Look a few records up in a large holder: the holder compares only one keyed bucket per\n"
               "identifier, sized so that the revealed bucket's re-identification risk stays at most\n"
               "--max-risk for a population of --population people."),
}
QUERY_EPILOG = ("join or dedup? Both find the same matches. join brings back the holder's released columns\n"
                "(a matched row appears once per matching holder row); dedup brings back only True/False per\n"
                "row, for when you need to know the overlap and not the holder's data.")


def _scheme_list(text: str) -> tuple[str, ...]:
    try:
        return parse_scheme_list(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _scheme_options(sub) -> None:
    """``--scheme`` and ``--key-bits`` of every querying command."""
    sub.add_argument("--scheme", choices=SCHEME_NAMES, default=DEFAULT_SCHEME,
                     help="comparison scheme: paillier (default) or ec (exponential ElGamal on Ed25519, "
                          "much faster; docs/protocol.md, \"Comparison schemes\")")
    sub.add_argument("--key-bits", type=int, default=None,
                     help="Paillier modulus: 2048 (default) or 3072; ec: 256 (its only size)")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="party", description=__doc__)
    parser.add_argument("--log-level", default="WARNING", help="DEBUG, INFO, WARNING or ERROR (to stderr)")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

    init = commands.add_parser("init", help="create a party directory with a fresh identity key")
    init.add_argument("--dir", required=True, help="party directory to create (holds the identity key)")
    init.add_argument("--name", required=True,
                      help="this party's name at the key holder (letters, digits, '.', '_', '-')")
    init.set_defaults(run=cmd_init)

    def connected(sub):
        sub.add_argument("--dir", required=True, help="party directory (party init)")
        sub.add_argument("--keyholder", help="HOST:PORT (default: the address used at registration)")
        sub.add_argument("--insecure", action="store_true", default=None,
                         help="plaintext to a loopback key holder (remembered from `party register`)")
        sub.add_argument("--tls-dir", help="ca.pem, client.pem, client.key (default PARTYDIR/tls)")
        sub.add_argument("--quiet", action="store_true", help="no progress bars")
        sub.add_argument("--retry-window", type=float, default=RETRY_WINDOW_SECONDS, metavar="SECONDS",
                         help="survive key-holder outages this long, counted from the last contact (default 600)")
        sub.add_argument("--connect-timeout", type=float, default=FIRST_CONTACT_SECONDS, metavar="SECONDS",
                         help="give up on a key holder never reached after this long (default 30)")
        return sub

    register = connected(commands.add_parser("register", help="register with the key holder"))
    register.set_defaults(run=cmd_register)

    hold = connected(commands.add_parser(
        "hold", help="serve queries addressed to this party",
        description="Serve the queries other parties address to this party, from your table.\n"
                    "Without --once it polls the key holder until Ctrl-C and prints one JSON line per round."))
    hold.add_argument("--input", required=True, help="your table (CSV or Parquet)")
    hold.add_argument("--id-column", help="exact matching on this column")
    hold.add_argument("--rules", help="fuzzy matching with this rules file (TOML), instead of --id-column")
    add_preset_options(hold, querier=False)
    hold.add_argument("--id-type", default="identifier", help="how ids are normalized: identifier or name")
    hold.add_argument("--release-columns", help="comma-separated columns released to a joining querier")
    hold.add_argument("--once", action="store_true", help="serve what is pending, then exit")
    hold.add_argument("--poll-seconds", type=float, default=20.0,
                      help="how long each poll waits at the key holder for new queries")
    hold.add_argument("--allow-fast-blinding", action="store_true",
                      help="honour a querier's request for 128-bit blinding (16x faster; a querier "
                           "colluding with the key holder could then test guesses of non-matching ids)")
    hold.add_argument("--schemes", type=_scheme_list, default=",".join(SCHEME_NAMES),
                      help=f"comparison schemes this holder serves, comma-separated (default: "
                           f"{','.join(SCHEME_NAMES)}); a round of another scheme is refused")
    hold.add_argument("--allow-querier", help="comma-separated querier names (default: any)")
    hold.add_argument("--concurrency", type=int, default=os.cpu_count() or 1, metavar="N",
                      help="rounds served at once, one per core by default; lookups get a lane of their own "
                           "of the same width, so they never wait behind a join")
    hold.add_argument("--dask", metavar="SCHEDULER_ADDRESS",
                      help="run the comparisons on this Dask cluster (tls://HOST:PORT, or tcp:// on loopback; "
                           'TLS files from Dask\'s config; needs pip install "securelink-deid[dask]")')
    add_timeout_option(hold)
    hold.set_defaults(run=cmd_hold)

    for mode in ("join", "dedup", "lookup"):
        sub = connected(commands.add_parser(mode, help=QUERY_HELP[mode][0], description=QUERY_HELP[mode][1],
                                            epilog=QUERY_EPILOG))
        sub.add_argument("--holder", required=True, help="the holder party's name")
        sub.add_argument("--input", required=True, help="your table (CSV or Parquet)")
        sub.add_argument("--id-column", help="exact matching on this column")
        sub.add_argument("--id-type", default="identifier", help="how ids are normalized: identifier or name")
        if mode != "lookup":
            sub.add_argument("--rules", help="fuzzy matching with this rules file (TOML), instead of --id-column")
            sub.add_argument("--term-column", help="add a column naming the rule terms that matched")
            sub.add_argument("--one-to-one", action="store_true",
                             help="keep only the best match per querier row (most rule terms fired)")
            sub.add_argument("--duplicate-free", action="store_true",
                             help="with --one-to-one and comparison levels: both tables hold each person once, "
                                  "so choose the matches of largest total weight globally")
            add_preset_options(sub, querier=True)
        sub.add_argument("--out", required=True, help="CSV or Parquet (.parquet)")
        sub.add_argument("--report", help="write the run's report (JSON) here")
        _scheme_options(sub)
        sub.add_argument("--fast-blinding", action="store_true",
                         help="ask the holder for 128-bit blinding (the holder decides; Paillier only)")
        sub.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait for the holder")
        sub.add_argument("--matched-column", default="matched",
                         help="output column saying whether the row matched (True/False)")
        if mode == "lookup":
            sub.add_argument("--population", type=int, required=True,
                             help="people in the population the queried persons come from")
            sub.add_argument("--max-risk", type=float, default=0.05,
                             help="largest re-identification risk of the revealed bucket")
            sub.add_argument("--buckets", type=int, help="bucket count (refused above --max-risk)")
        sub.set_defaults(run=cmd_query)

    def querier_common(sub):
        sub.add_argument("--input", required=True, help="your table (CSV or Parquet)")
        sub.add_argument("--id-column", help="exact matching on this column")
        sub.add_argument("--rules", help="fuzzy matching with this rules file (TOML), instead of --id-column")
        sub.add_argument("--out", required=True, help="output table (CSV or .parquet)")
        _scheme_options(sub)
        sub.add_argument("--fast-blinding", action="store_true",
                         help="ask the holders for 128-bit blinding (each holder decides; Paillier only)")
        sub.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait for each holder")

    release = connected(commands.add_parser("link-release", help="join, then de-identify and release"))
    release.add_argument("--holder", required=True, help="the holder party's name (e.g. the registry)")
    querier_common(release)
    add_preset_options(release, querier=True)
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
    release.set_defaults(run=cmd_link_release)

    many = connected(commands.add_parser("dedup-many", help="which other registries also hold each record"))
    many.add_argument("--registries", required=True, help="comma-separated registry (holder) names")
    querier_common(many)
    many.add_argument("--column", default="also_held_by",
                      help="output column listing the registries that also hold the record")
    many.set_defaults(run=cmd_dedup_many)

    estimate = commands.add_parser("estimate", help="estimate Fellegi-Sunter m and u (EM) on your own table")
    estimate.add_argument("--rules", help="rules file (TOML) naming the fields")
    add_preset_options(estimate, querier=False)
    estimate.add_argument("--input", required=True, help="your table (CSV or Parquet); it must contain duplicates")
    estimate.add_argument("--out", required=True, help="rules file to write (.toml) with [rule.fellegi_sunter]")
    estimate.add_argument("--threshold", type=float,
                          help="log2 weight threshold (default: the rules file's Fellegi-Sunter threshold)")
    estimate.add_argument("--max-pairs", type=int, default=1_000_000, help="training pairs drawn at most")
    estimate.add_argument("--seed", type=int, default=0, help="random seed for drawing training pairs")
    estimate.set_defaults(run=cmd_estimate)

    sessions = commands.add_parser("sessions", help="sessions left open by interrupted runs: list or close")
    actions = sessions.add_subparsers(dest="action", required=True, parser_class=OneLineParser)
    connected(actions.add_parser("list", help="id, holder, mode, round, status, created"))
    close = connected(actions.add_parser("close", help="end sessions at the key holder, delete their local state"))
    close.add_argument("session_id", nargs="?", metavar="ID", help="the session to close (see `party sessions list`)")
    close.add_argument("--all", action="store_true", help="every session listed by `party sessions list`")
    sessions.set_defaults(run=cmd_sessions)

    demo = commands.add_parser("demo", help="run the whole story on an embedded key holder",
                               description="Run the whole story on one machine (about a minute): a key holder, "
                                           "five parties,\nfour linkages and a de-identified release; the files "
                                           "stay in --out.")
    demo.add_argument("--out", help="folder for the demo's files, kept after the run "
                                    "(default: ./securelink-demo)")
    demo.add_argument("--force", action="store_true",
                      help="replace an earlier demo's files in a non-empty --out (other files are left alone)")
    demo.add_argument("--keep", help="deprecated: same as --out")
    demo.add_argument("--rows", type=int, default=300, help="registry size (synthetic people)")
    demo.set_defaults(run=cmd_demo)
    return parser


def _log_to_stderr(args: argparse.Namespace) -> None:
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")


#: Exit 1 when the key holder (or the --dask scheduler) stays unreachable, 2 for bad input or a refusal,
#: 130 on Ctrl-C.
EXPECTED = [Expected(KeyHolderUnavailable, 1),
            Expected(ClusterLost, 1, lambda error: f"error: {error}" + (
                "; the round was not finished (the next `party hold` sends what the key holder is missing)"
                if error.in_round else "")),
            Expected((UsageError, PartyError, DaskUnavailable), 2),
            Expected(KeyboardInterrupt, INTERRUPTED, lambda _: "interrupted")]


def main(argv: list[str] | None = None) -> int:
    status = run(build_parser(), argv, EXPECTED, setup=_log_to_stderr)
    if status == INTERRUPTED:   # every cleanup has run; a thread still in a call must not delay the exit
        exit_now(status)
    return status


if __name__ == "__main__":
    sys.exit(main())
