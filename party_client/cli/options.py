"""Options and checks the ``party`` commands share: the key-holder connection, the matching key
source, the comparison scheme."""
from __future__ import annotations

import argparse

from common.cli import UsageError
from common.schemes import DEFAULT_SCHEME, RETIRED, SCHEME_NAMES, RetiredScheme
from party_client.transport import FIRST_CONTACT_SECONDS, RETRY_WINDOW_SECONDS


def columns(text: str | None) -> list[str]:
    """A comma-separated list of names (empty items dropped)."""
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


def party(args: argparse.Namespace, linking: bool = True):
    """The :class:`party_client.api.Party` of a connected command's options; with ``linking`` False
    its :class:`party_client.registrant.Registrant` (connect and register only: no pandas imported)."""
    if linking:
        from party_client.api import Party as kind
    else:
        from party_client.registrant import Registrant as kind
    return kind(args.dir, keyholder=args.keyholder, insecure=args.insecure, tls_dir=args.tls_dir,
                progress=None if not args.quiet else False, retry_window=args.retry_window,
                connect_timeout=args.connect_timeout)


def connected(sub: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of every command that talks to the key holder."""
    sub.add_argument("--dir", required=True, help="party directory (party init)")
    sub.add_argument("--keyholder", help="HOST:PORT (default: the address used at registration)")
    sub.add_argument("--insecure", action="store_true", default=None,
                     help="plaintext to a loopback key holder (remembered from `party register`)")
    sub.add_argument("--tls-dir", help="ca.pem, client.pem, client.key (default PARTYDIR/tls)")
    sub.add_argument("--quiet", action="store_true", help="no progress bars")
    sub.add_argument("--retry-window", type=float, default=RETRY_WINDOW_SECONDS, metavar="SECONDS",
                     help="survive key-holder outages this long, counted from the last contact")
    sub.add_argument("--connect-timeout", type=float, default=FIRST_CONTACT_SECONDS, metavar="SECONDS",
                     help="give up on a key holder never reached after this long")
    return sub


def key_source(args: argparse.Namespace) -> None:
    """Exactly one of ``--id-column`` (exact matching) and ``--rules`` (fuzzy matching)."""
    if (args.id_column is None) == (getattr(args, "rules", None) is None):
        raise UsageError(f"party {args.command}: give exactly one of --id-column and --rules")


def scheme_options(sub: argparse.ArgumentParser) -> None:
    """``--scheme`` and ``--key-bits`` of every querying command."""
    sub.add_argument("--scheme", type=_offered_scheme, choices=SCHEME_NAMES, default=DEFAULT_SCHEME,
                     help="comparison scheme: paillier or ristretto (exponential ElGamal on ristretto255, "
                          "the fast one); docs/protocol.md, \"Comparison schemes\"")
    sub.add_argument("--key-bits", type=int, default=None,
                     help="Paillier modulus: 2048 (when not given) or 3072; ristretto: 256 (its only size)")


def _offered_scheme(name: str) -> str:
    """A ``--scheme`` name; a retired one is refused saying what replaces it (``choices`` refuses the rest)."""
    if name in RETIRED:
        raise argparse.ArgumentTypeError(str(RetiredScheme(name)))
    return name


def assignment_options(sub: argparse.ArgumentParser) -> None:
    """``--one-to-one`` and ``--duplicate-free``: the choice among a record's matches (join, link-release)."""
    sub.add_argument("--one-to-one", action="store_true",
                     help="keep only the best match per querier row: the heaviest with comparison levels, "
                          "else the one with most rule terms fired")
    sub.add_argument("--duplicate-free", action="store_true",
                     help="both tables hold each person once (implies --one-to-one): with comparison levels, "
                          "keep the assignment of most matches and then largest total weight (docs/linking.md)")
