"""``keyholder`` command line: ``serve``, ``pki init``, ``pki issue``, ``audit``.

Bad input exits with status 2 and one line on stderr.
"""
from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import secrets
import signal
import sys
from pathlib import Path

from keyholder import pki
from keyholder.server import TlsFiles, is_loopback, split_address, start
from keyholder.limits import add_limit_options, limits_from_args
from keyholder.sessions import KeyHolder

log = logging.getLogger("keyholder")
PASSPHRASE_ENV = "KEYHOLDER_PASSPHRASE"


class UsageError(Exception):
    """Bad input: reported as one line, exit status 2."""


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse prints usage + message; we want one line
        raise UsageError(f"{self.prog}: {message}")


def read_passphrase(data_dir: Path, passphrase_file: str | None) -> bytes:
    """The passphrase that encrypts session keys at rest: file, environment, or a generated file."""
    if passphrase_file:
        try:
            value = Path(passphrase_file).read_bytes().strip()
        except OSError as error:
            raise UsageError(f"cannot read --passphrase-file: {error.strerror}") from None
        if not value:
            raise UsageError("--passphrase-file is empty")
        return value
    if os.environ.get(PASSPHRASE_ENV):
        return os.environ[PASSPHRASE_ENV].encode()
    generated = data_dir / "passphrase"
    if not generated.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(generated, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_urlsafe(32))
    log.warning("no --passphrase-file or %s: session keys are encrypted with %s, which sits next to "
                "them; keep the passphrase on another volume in production", PASSPHRASE_ENV, generated)
    return generated.read_bytes().strip()


def cmd_serve(args: argparse.Namespace) -> int:
    data_dir = Path(args.data_dir)
    if args.insecure and args.tls_dir:
        raise UsageError("choose one of --insecure and --tls-dir")
    try:
        tls = None if args.insecure else TlsFiles.in_dir(Path(args.tls_dir)) if args.tls_dir else None
    except FileNotFoundError as error:
        raise UsageError(str(error)) from None
    try:  # check the address before touching the data directory
        host, _ = split_address(args.listen)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if args.insecure and not is_loopback(host):
        raise UsageError(f"--insecure serves plaintext and is refused on the non-loopback address {host}")
    if not args.insecure and tls is None:
        raise UsageError("choose --tls-dir DIR (mTLS) or --insecure (loopback only)")
    try:
        limits = limits_from_args(args)
        core = KeyHolder(data_dir, read_passphrase(data_dir, args.passphrase_file), limits)
    except ValueError as error:
        raise UsageError(str(error)) from None
    try:
        running = start(core, args.listen, tls, args.insecure)
    except (ValueError, OSError) as error:
        core.close()
        raise UsageError(str(error)) from None
    if args.port_file:
        Path(args.port_file).write_text(str(running.port))
    stop = lambda *_: running.server.stop(2.0)  # noqa: E731 - signal handler
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    running.wait()
    running.stop(0)
    return 0


def cmd_pki_init(args: argparse.Namespace) -> int:
    try:
        written = pki.init_ca(Path(args.tls_dir), tuple(h.strip() for h in args.hosts.split(",") if h.strip()))
    except FileExistsError as error:
        raise UsageError(str(error)) from None
    print("\n".join(str(p) for p in written))
    return 0


def cmd_pki_issue(args: argparse.Namespace) -> int:
    if not (Path(args.tls_dir) / "ca.key").is_file():
        raise UsageError(f"{args.tls_dir} holds no CA: run `keyholder pki init` first")
    print("\n".join(str(p) for p in pki.issue_client(Path(args.tls_dir), args.name, Path(args.out))))
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    from keyholder.store import Store
    path = Path(args.data_dir) / "keyholder.sqlite3"
    if not path.is_file():
        raise UsageError(f"no key holder store in {args.data_dir}")
    store = Store(path)
    for at, party, action, session_id, round_no, count, detail in store.audit_rows():
        print("\t".join(str(v) if v is not None else "" for v in
                        (dt.datetime.fromtimestamp(at, dt.timezone.utc).isoformat(timespec="milliseconds"),
                         party, action, session_id, round_no, count, detail)))
    store.close()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="keyholder", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

    serve = commands.add_parser("serve", help="run the key holder service")
    serve.add_argument("--listen", required=True, help="HOST:PORT, e.g. 127.0.0.1:50051")
    serve.add_argument("--data-dir", required=True, help="SQLite store and relay spool")
    serve.add_argument("--insecure", action="store_true", help="plaintext, loopback addresses only")
    serve.add_argument("--tls-dir", help="ca.pem, server.pem, server.key (mTLS)")
    serve.add_argument("--passphrase-file", help=f"passphrase for keys at rest (or set {PASSPHRASE_ENV})")
    add_limit_options(serve)
    serve.add_argument("--port-file", help="write the bound port here once listening")
    serve.add_argument("--log-level", default="INFO")
    serve.set_defaults(run=cmd_serve)

    pki_parser = commands.add_parser("pki", help="development certificates for mTLS")
    pki_commands = pki_parser.add_subparsers(dest="pki_command", required=True, parser_class=OneLineParser)
    init = pki_commands.add_parser("init", help="create a CA and the server certificate")
    init.add_argument("--tls-dir", required=True)
    init.add_argument("--hosts", default="127.0.0.1,localhost,::1", help="server certificate names")
    init.set_defaults(run=cmd_pki_init)
    issue = pki_commands.add_parser("issue", help="issue a party's client certificate")
    issue.add_argument("--tls-dir", required=True)
    issue.add_argument("--name", required=True, help="party name (certificate common name)")
    issue.add_argument("--out", required=True, help="folder for ca.pem, client.pem, client.key "
                                                     "(use PARTYDIR/tls)")
    issue.set_defaults(run=cmd_pki_issue)

    audit = commands.add_parser("audit", help="print the audit log (counts only)")
    audit.add_argument("--data-dir", required=True)
    audit.set_defaults(run=cmd_audit)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        logging.basicConfig(level=getattr(args, "log_level", "INFO"), stream=sys.stderr,
                            format="%(asctime)s %(name)s %(levelname)s %(message)s")
        return args.run(args)
    except UsageError as error:
        print(f"keyholder: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
