"""``keyholder`` command line: ``serve``, ``pki init``, ``pki issue``, ``audit``.

Bad input exits with status 2 and one line on stderr.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import secrets
import signal
import sys
import threading
import time
from pathlib import Path

from common.cli import Expected, OneLineParser, UsageError, exit_now, run
from common.distributed import Cluster, ClusterLost, DaskUnavailable, add_timeout_option
from keyholder.cluster import cluster_zero_test
from common.schemes import SCHEME_NAMES, parse_scheme_list
from keyholder import pki
from keyholder.serving import RunningServer, TlsFiles, check_listen, start
from keyholder.limits import add_limit_options, limits_from_args
from keyholder.core import KeyHolder

log = logging.getLogger("keyholder")
PASSPHRASE_ENV = "KEYHOLDER_PASSPHRASE"
STOP_SECONDS = 4.5      # SIGTERM/SIGINT: calls under way get this long, then the process exits


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


def serve_until_signal(running: RunningServer, core: KeyHolder, cluster: Cluster | None = None) -> int:
    """Serve until SIGTERM or SIGINT, then stop within :data:`STOP_SECONDS`: long-polls are woken,
    new calls refused, calls under way get a grace period, and the store is closed after the last
    one.  Everything a finished call stored is committed; a call cut short is retried by its client
    against the restarted key holder.  K's Dask client (``--dask``) is closed at once: a zero test
    waiting on the cluster finishes locally within the grace, whether the scheduler is there or gone."""
    stopping = threading.Event()
    received: list[int] = []

    def on_signal(signum: int, _frame) -> None:
        received.append(signum)
        stopping.set()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    while not stopping.wait(1.0):
        pass
    started = time.monotonic()
    log.info("%s received: stopping (calls under way get %.0f s)", signal.Signals(received[0]).name, STOP_SECONDS)
    core.shutdown()                                   # wake list_work / wait_round long-polls
    running.stop(STOP_SECONDS - 1.0, close_store=False)  # refuse new calls; cancel the rest after the grace
    if cluster is not None:
        cluster.close()
    left = running.wait_idle(STOP_SECONDS - (time.monotonic() - started))
    if left:
        log.warning("stopped; %d call(s) still running were abandoned (their clients retry; nothing they "
                    "stored is lost)", left)
        exit_now(0)                                   # their threads would keep the process alive
    core.close()                                      # after the last call's thread has finished
    log.info("stopped")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    data_dir = Path(args.data_dir)
    if args.insecure and args.tls_dir:
        raise UsageError("choose one of --insecure and --tls-dir")
    try:
        tls = None if args.insecure else TlsFiles.in_dir(Path(args.tls_dir)) if args.tls_dir else None
    except FileNotFoundError as error:
        raise UsageError(str(error)) from None
    try:  # check the address and the transport rule before touching the data directory
        check_listen(args.listen, tls, args.insecure)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if data_dir.exists() and not data_dir.is_dir():
        raise UsageError(f"--data-dir {data_dir} is a file, not a folder: name the key holder's folder "
                         "(it is made if missing)")
    cluster = _cluster(args) if args.dask else None
    try:
        limits = limits_from_args(args)
        schemes = parse_scheme_list(args.schemes)
        core = KeyHolder(data_dir, read_passphrase(data_dir, args.passphrase_file), limits, schemes)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if cluster is not None:
        core.zero_test = cluster_zero_test(cluster, args.dask_min_comparisons)
    if any(scheme.costly_keys for scheme in schemes):
        core.key_factory.warm()
    try:
        running = start(core, args.listen, tls, args.insecure)
    except (ValueError, OSError) as error:
        core.close()
        raise UsageError(str(error)) from None
    if args.port_file:
        Path(args.port_file).write_text(str(running.port))
    return serve_until_signal(running, core, cluster)


def _cluster(args: argparse.Namespace) -> Cluster:
    """K's Dask cluster: TLS, or plaintext only on loopback with --insecure (the private keys travel)."""
    try:
        return Cluster.at(args.dask, allow_plaintext=args.insecure, timeout=args.dask_timeout)
    except (DaskUnavailable, ClusterLost) as error:
        raise UsageError(str(error)) from None


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


AUDIT_COLUMNS = ("at", "party", "action", "session_id", "round", "count", "detail")


def cmd_audit(args: argparse.Namespace) -> int:
    from keyholder.store import read_audit
    try:
        rows = read_audit(Path(args.data_dir))
    except FileNotFoundError:
        raise UsageError(f"no key holder store in {args.data_dir}") from None
    except ValueError as error:                     # a damaged store (keyholder.store.DamagedStore)
        raise UsageError(str(error)) from None
    if not args.json:
        print("\t".join(AUDIT_COLUMNS))
    for at, *rest in rows:
        row = dict(zip(AUDIT_COLUMNS, (dt.datetime.fromtimestamp(at, dt.timezone.utc)
                                       .isoformat(timespec="milliseconds"), *rest)))
        print(json.dumps(row) if args.json else "\t".join("" if v is None else str(v) for v in row.values()))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="keyholder", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

    serve = commands.add_parser("serve", help="run the key holder service",
                                description="Run the key holder service until SIGTERM or SIGINT (Ctrl-C);\n"
                                            f"it then stops within {STOP_SECONDS + 0.5:.0f} s, keeping every "
                                            "finished call.")
    serve.add_argument("--listen", required=True, help="HOST:PORT, e.g. 127.0.0.1:50051")
    serve.add_argument("--data-dir", required=True, help="SQLite store and relay spool")
    serve.add_argument("--insecure", action="store_true", help="plaintext, loopback addresses only")
    serve.add_argument("--tls-dir", help="ca.pem, server.pem, server.key (mTLS)")
    serve.add_argument("--passphrase-file", help=f"passphrase for keys at rest (or set {PASSPHRASE_ENV})")
    add_limit_options(serve)
    serve.add_argument("--dask", metavar="SCHEDULER_ADDRESS",
                       help="zero-test large batches on K's own Dask cluster: tls://HOST:PORT (tcp:// only on "
                            "loopback with --insecure); its scheduler and workers receive session private keys, "
                            "so they are inside K's trust boundary")
    serve.add_argument("--dask-min-comparisons", type=int, default=256, metavar="N",
                       help="batches with fewer comparisons are zero-tested locally")
    add_timeout_option(serve)
    serve.add_argument("--port-file", help="write the bound port here once listening")
    serve.add_argument("--schemes", default=",".join(SCHEME_NAMES),
                       help="comparison schemes offered to new sessions, comma-separated")
    serve.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR (to stderr)")
    serve.set_defaults(run=cmd_serve)

    pki_parser = commands.add_parser("pki", help="development certificates for mTLS",
                                     description="Development certificates for mTLS (a CA, the server's and "
                                                 "each party's certificate).")
    pki_commands = pki_parser.add_subparsers(dest="pki_command", required=True, parser_class=OneLineParser)
    init = pki_commands.add_parser("init", help="create a CA and the server certificate")
    init.add_argument("--tls-dir", required=True, help="folder to create: ca.pem, ca.key, server.pem, server.key")
    init.add_argument("--hosts", default="127.0.0.1,localhost,::1", help="server certificate names")
    init.set_defaults(run=cmd_pki_init)
    issue = pki_commands.add_parser("issue", help="issue a party's client certificate")
    issue.add_argument("--tls-dir", required=True, help="the key holder's folder holding the CA (pki init)")
    issue.add_argument("--name", required=True, help="party name (certificate common name)")
    issue.add_argument("--out", required=True, help="folder for ca.pem, client.pem, client.key "
                                                     "(use PARTYDIR/tls)")
    issue.set_defaults(run=cmd_pki_issue)

    audit = commands.add_parser("audit", help="print the audit log (counts only)",
                                description="Print who did what and when, with counts only (never a value):\n"
                                            "a header row and tab-separated rows, or JSON lines.")
    audit.add_argument("--data-dir", required=True, help="the key holder's --data-dir")
    audit.add_argument("--json", action="store_true", help="one JSON object per audit row instead of a table")
    audit.set_defaults(run=cmd_audit)
    return parser


def _log_to_stderr(args: argparse.Namespace) -> None:
    logging.basicConfig(level=getattr(args, "log_level", "INFO"), stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")


def main(argv: list[str] | None = None) -> int:
    return run(build_parser(), argv, [Expected(UsageError)], setup=_log_to_stderr)


if __name__ == "__main__":
    sys.exit(main())
