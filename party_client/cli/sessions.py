"""``party sessions list`` and ``party sessions close``: the sessions interrupted runs left open and
the lookup sessions, as kept locally and as the key holder sees them."""
from __future__ import annotations

import argparse

from common.cli import OneLineParser, UsageError
from party_client.cli.options import connected, party


def cmd_sessions(args) -> int:
    """List the sessions this querier has open (interrupted runs, lookup sessions) with the key holder's
    view of each, or close them (at the key holder and locally)."""
    import datetime as dt
    querier = party(args)
    if args.action == "list":
        rows = querier.sessions()
        print("\t".join(("id", "holder", "mode", "round", "status", "created", "at key holder")))
        for row in rows:
            created = dt.datetime.fromtimestamp(row["created"], dt.timezone.utc).isoformat(timespec="seconds")
            print("\t".join((row["id"], row["holder"], row["mode"], str(row["round"]), row["status"], created,
                             row.get("at_keyholder", "?"))))
        return 0
    if (args.session_id is None) == (not args.all):
        raise UsageError("party sessions close: give a session ID or --all")
    closed = querier.close_sessions(None if args.all else [args.session_id])
    print(f"closed {len(closed)} session(s)" + (f": {', '.join(closed)}" if closed else ""))
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    sessions = commands.add_parser("sessions", help="sessions left open by interrupted runs, and lookup sessions: list or close")
    actions = sessions.add_subparsers(dest="action", required=True, parser_class=OneLineParser)
    connected(actions.add_parser("list", help="id, holder, mode, round, status, created, status at the key holder"))
    close = connected(actions.add_parser("close", help="end sessions at the key holder, delete their local state"))
    close.add_argument("session_id", nargs="?", metavar="ID", help="the session to close (see `party sessions list`)")
    close.add_argument("--all", action="store_true", help="every session listed by `party sessions list`")
    sessions.set_defaults(run=cmd_sessions)
