"""``party demo``: the whole story on an embedded key holder (:mod:`party_client.demo`)."""
from __future__ import annotations

import argparse
import sys


def cmd_demo(args) -> int:
    from party_client.demo import run_demo
    if args.keep:
        print("party: warning: --keep is deprecated: use --out", file=sys.stderr)
    return run_demo(out=args.out or args.keep, rows=args.rows, force=args.force)


def register(commands: argparse._SubParsersAction) -> None:
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
