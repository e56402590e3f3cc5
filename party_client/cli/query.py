"""``party join``, ``party dedup`` and ``party lookup``: query a holder, write your table with what matched."""
from __future__ import annotations

import argparse
import json
import sys

from common.cli import UsageError
from common.distributed import Cluster, add_timeout_option
from party_client.cli.options import assignment_options, connected, key_source, party, scheme_options
from party_client.cli.preset_options import add_preset_options, check_plan, preset_rules, write_page

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
               "--max-risk both for a population of --population people and among the holder's own people\n"
               "(it buckets them all; a person's rows share a bucket): the key holder hands out the number\n"
               "of people (distinct keys) the holder announces when serving (`party hold`), rounded down to\n"
               "a step of sqrt(2). The output says which bound decided (decided_by) and the risk against\n"
               "each (risk: population; holder_risk). Every lookup at one holder uses one secret, so a person\n"
               "meets the same bucket each time; a lookup whose buckets under another count would narrow a\n"
               "person past --max-risk is refused before anything is sent. The output is id,matched only."),
}
QUERY_EPILOG = ("join or dedup? Both find the same matches. join brings back the holder's released columns\n"
                "(a matched row appears once per matching holder row); dedup brings back only True/False per\n"
                "row, for when you need to know the overlap and not the holder's data.")


def _finish(result, out: str, report_file: str | None) -> int:
    from party_client.files import write_table
    write_table(result.frame, out)
    if report_file:
        with open(report_file, "w") as sink:
            json.dump(result.report, sink, indent=2, default=str)
    shown = ("mode", "holder", "scheme", "records", "matched_output_rows", "output_rows", "records_matched_more_than_once",
             "records_kept_of_tied_rows", "buckets", "decided_by", "risk", "holder_risk", "warning")
    summary = {k: result.report[k] for k in shown if k in result.report}
    if "passes" in result.report:     # blocked: your records each pass's bins had no room for (--report names them)
        summary["left_out_per_pass"] = {p["fields"]: p["left_out"] for p in result.report["passes"]}
    print(json.dumps(summary, default=str))
    if result.report.get("warning"):
        print(f"party: warning: {result.report['warning']}", file=sys.stderr)
    return 0


def cmd_query(args) -> int:
    from party_client.files import check_output
    check_output(args.out, args.input)
    if args.command != "lookup":
        args.rules = preset_rules(args)
        key_source(args)
        if check_plan(args, args.rules):           # before any session, or even a party directory
            return 0
    querier = party(args)
    common = dict(id_type=args.id_type, key_bits=args.key_bits, timeout=args.timeout,
                  matched_column=args.matched_column, scheme=args.scheme)
    if args.command == "lookup":
        if args.id_column is None:
            raise UsageError("party lookup: --id-column is required")
        result = querier.lookup(args.holder, args.input, args.id_column, args.population, max_risk=args.max_risk,
                                buckets=args.buckets, **common)
    else:
        cluster = Cluster.at(args.dask, allow_plaintext=True, timeout=args.dask_timeout) if args.dask else None
        try:
            result = getattr(querier, args.command)(args.holder, args.input, args.id_column, rules=args.rules,
                                                    term_column=args.term_column,
                                                    one_to_one=args.one_to_one or args.duplicate_free,
                                                    duplicate_free=args.duplicate_free,
                                                    dask_client=cluster and cluster.client,
                                                    dask_timeout=args.dask_timeout, force=args.force, **common)
        finally:                              # Ctrl-C included: the scheduler drops our pending tasks
            if cluster is not None:
                cluster.close()
        write_page(args, args.rules, result)
    return _finish(result, args.out, args.report)


def register(commands: argparse._SubParsersAction) -> None:
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
            assignment_options(sub)
            add_preset_options(sub, querier=True)
            sub.add_argument("--dask", metavar="SCHEDULER_ADDRESS",
                             help="encrypt the query on this Dask cluster (tls://HOST:PORT, or tcp:// on loopback; "
                                  'TLS files from Dask\'s config; needs pip install "securelink-deid[dask]")')
            add_timeout_option(sub)
        sub.add_argument("--out", required=True, help="CSV or Parquet (.parquet)")
        sub.add_argument("--report", help="write the run's report (JSON) here")
        scheme_options(sub)
        sub.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait for the holder")
        sub.add_argument("--matched-column", default="matched",
                         help="output column saying whether the row matched (True/False)")
        if mode == "lookup":
            sub.add_argument("--population", type=int, required=True,
                             help="people in the population the queried persons come from")
            sub.add_argument("--max-risk", type=float, default=0.05,
                             help="largest re-identification risk of the revealed bucket")
            sub.add_argument("--buckets", type=int,
                             help="bucket count (refused above --max-risk against either bound)")
        sub.set_defaults(run=cmd_query)
