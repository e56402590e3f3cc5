"""``deid ui``: the release workbench in the browser (docs/ui.md), served on loopback by default."""
from __future__ import annotations

import argparse
import secrets
import sys

from common.net import is_loopback
from ..errors import DeidInputError
from .options import AT_LEAST_1, integer


def cmd_ui(args: argparse.Namespace) -> int:
    if not is_loopback(args.host) and not args.allow_remote:
        raise DeidInputError(f"refusing to serve on {args.host}: the workbench shows data; pass --allow-remote "
                             "to serve beyond this computer")
    import uvicorn

    from ..ui import create_app

    # a token on loopback too: another local user or process must not read a tab's data or evict its table
    token = secrets.token_urlsafe(24)
    app = create_app(host=args.host, port=args.port, token=token, max_upload_mb=args.max_upload_mb,
                     allow_remote=args.allow_remote)
    shown = f"[{args.host}]" if ":" in args.host else args.host
    address = f"http://{shown}:{args.port}/?token={token}"
    print(f"deid ui: open {address} (Ctrl-C stops it; data are kept in memory and in {app.workspaces.root}, "
          "removed on exit)", file=sys.stderr, flush=True)
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning", lifespan="on")
    finally:
        app.workspaces.close()
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``ui`` to the ``deid`` subcommands."""
    u = sub.add_parser("ui", help="the release workbench in the browser: load, declare, assess, search, export")
    u.add_argument("--port", type=integer(1, 65535), default=8000, help="port to serve on")
    u.add_argument("--host", default="127.0.0.1", help="address to serve on (loopback unless --allow-remote)")
    u.add_argument("--allow-remote", action="store_true",
                   help="allow a non-loopback --host (every request needs the token printed at start, as on loopback)")
    u.add_argument("--max-upload-mb", type=AT_LEAST_1, default=256, help="largest file accepted by an upload, in MB")
    u.set_defaults(run=cmd_ui)
