"""``party hold``: serve the queries addressed to this party, from its table (docs/protocol.md,
"The blinded comparison")."""
from __future__ import annotations

import argparse
import json
import os
import sys

from common.distributed import Cluster, add_timeout_option
from common.schemes import SCHEME_NAMES, Scheme, parse_scheme_list
from party_client.cli.options import columns, connected, key_source, party
from party_client.cli.preset_options import add_preset_options, preset_rules
from party_client.protocol.engines.session_indexes import DEFAULT_BUDGET_BYTES
from party_client.protocol.submitting import SUBMIT_WINDOW


def cmd_hold(args) -> int:
    holder = party(args)
    args.rules = preset_rules(args)
    key_source(args)
    def waiting() -> None:
        print(f"party: waiting for queries from the key holder at {holder.keyholder} (polls of "
              f"{args.poll_seconds:g} s); Ctrl-C to stop", file=sys.stderr, flush=True)

    def served_one(summary: dict) -> None:
        print(json.dumps(summary, default=str), flush=True)
    cluster = Cluster.at(args.dask, allow_plaintext=True, timeout=args.dask_timeout) if args.dask else None
    try:                                      # (connected before reading the table)
        served = holder.hold(args.input, args.id_column, columns(args.release_columns), once=args.once,
                             poll_seconds=args.poll_seconds, id_type=args.id_type, rules=args.rules,
                             allowed_queriers=columns(args.allow_querier) or None, schemes=args.schemes,
                             on_ready=None if args.once else waiting, on_served=None if args.once else served_one,
                             concurrency=args.concurrency, dask_client=cluster and cluster.client,
                             dask_timeout=args.dask_timeout, lookup_memory=args.lookup_memory << 20,
                             submit_window=args.submit_window, force=args.force)
    finally:                                  # Ctrl-C included: the scheduler drops our pending tasks
        if cluster is not None:
            cluster.close()
    print(f"served {len(served)} round(s)")
    if args.once:                             # polling printed each round as it was served
        for summary in served:
            print(json.dumps(summary, default=str))
    return 0


def _mebibytes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive number of MiB")
    return value


def _scheme_list(text: str) -> tuple[Scheme, ...]:
    try:
        return parse_scheme_list(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def register(commands: argparse._SubParsersAction) -> None:
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
    hold.add_argument("--schemes", type=_scheme_list, default=",".join(SCHEME_NAMES),
                      help="comparison schemes this holder serves, comma-separated; a round of another scheme "
                           "is refused")
    hold.add_argument("--allow-querier", help="comma-separated querier names (default: any)")
    hold.add_argument("--concurrency", type=int, default=os.cpu_count() or 1, metavar="N",
                      help="join and dedup rounds served at once (one per core); lookups get a wide "
                           "lane of their own (32 at once), so they never wait behind a join or each other")
    hold.add_argument("--lookup-memory", type=_mebibytes, default=DEFAULT_BUDGET_BYTES >> 20, metavar="MiB",
                      help="memory for lookup indexes, in MiB. Each lookup session's index "
                           "(4 bytes per row: 4 MB per million rows) is built once and kept while its key "
                           "lives; over this budget the least recently used is dropped and rebuilt at its "
                           "next round. The table's digests for lookups take 16 bytes per row, once "
                           "(default: %(default)s)")
    hold.add_argument("--submit-window", type=int, default=SUBMIT_WINDOW, metavar="N",
                      help="comparison batches of a round sent to the key holder at once, so it zero-tests "
                           "several while the next are computed")
    hold.add_argument("--dask", metavar="SCHEDULER_ADDRESS",
                      help="run the comparisons on this Dask cluster (tls://HOST:PORT, or tcp:// on loopback; "
                           'TLS files from Dask\'s config; needs pip install "securelink-deid[dask]")')
    add_timeout_option(hold)
    hold.set_defaults(run=cmd_hold)
