"""``deid pdf``: a report page (any command's ``--html``) printed to PDF for the ethics board's file."""
from __future__ import annotations

import argparse
import sys

from .options import guard_outputs


def cmd_pdf(args: argparse.Namespace) -> int:
    from ..io import write_bytes
    from ..report.pdf import check_page, print_pdf

    guard_outputs([args.html], [args.out])
    check_page(args.html)
    print(f"deid pdf: printing {args.html} with headless Chromium (a few seconds)", file=sys.stderr, flush=True)
    data = print_pdf(args.html)
    write_bytes(data, args.out)
    print(f"deid pdf: {args.out}: {len(data):,} bytes printed from {args.html}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``pdf`` to the ``deid`` subcommands."""
    p = sub.add_parser("pdf", help="print a report page (--html of any command) to PDF with headless Chromium")
    p.add_argument("--html", required=True, help="the page written by a command's --html")
    p.add_argument("--out", required=True, help="the PDF to write")
    p.set_defaults(run=cmd_pdf)
