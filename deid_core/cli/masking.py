"""The data owner's masking key, the sealed reversal table of ``deid apply --reversal-out``, and
``deid reverse`` (docs/masking.md; El Emam & Arbuckle, ch. 11, "Controlled Re-Identification").

The key is read from ``--key-file`` or, without it, from the ``DEID_KEY`` environment variable (its
UTF-8 bytes, at least 16). It is never written to an output, a report or a message.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import DeidInputError
from ..transform.keys import KEY_ENV, environment_key

#: The steps whose pseudonym -> original pairs go into the sealed reversal table (fpe decrypts with the key).
REVERSIBLE_BY_TABLE = ("pseudonymize", "randomize", "names")
KEY_HELP = (f"file holding the data owner's secret key (at least 16 bytes; default: the {KEY_ENV} environment "
            "variable); never written anywhere")


def owner_key(path: str | None, required: bool = False) -> bytes | None:
    """The owner's key from ``path``, else from ``$DEID_KEY``; None when neither is given (unless ``required``)."""
    if path:
        try:
            key = Path(path).read_bytes().strip()
        except OSError as exc:
            raise DeidInputError(f"cannot read key file {path!r}: {exc.strerror or exc}") from None
    else:
        key = environment_key()
    if required and key is None:
        raise DeidInputError(f"a key is required: --key-file FILE or the {KEY_ENV} environment variable")
    if key is not None and len(key) < 16:
        raise DeidInputError("the masking key must be at least 16 bytes")
    return key


def add_reversal_option(p: argparse.ArgumentParser) -> None:
    """``--reversal-out`` of ``deid apply``."""
    p.add_argument("--reversal-out", metavar="FILE",
                   help="write the sealed pseudonym -> original table of the pseudonymize, randomize and names steps "
                        "(AES-GCM under a key derived from --key-file; opened only by deid reverse with that key)")


def sealed_reversal(args: argparse.Namespace, ctx: dict, key: bytes) -> bytes | None:
    """The sealed table's bytes for ``deid apply --reversal-out`` (None without the option)."""
    if not getattr(args, "reversal_out", None):
        return None
    from ..transform.reversal import seal
    return seal(ctx.get("reversal") or {}, key)


def cmd_reverse(args: argparse.Namespace) -> int:
    """Pseudonyms back to originals: FPE columns by decryption, the others through the sealed table."""
    import pandas as pd

    from ..io import read_table, require_records, write_table
    from ..transform import Policy
    from ..transform.fpe import check_step_key, fpe_decrypt, step_domain
    from ..transform.reversal import lookup, open_sealed
    from .options import guard_outputs, summary_line

    guard_outputs([args.table, args.policy, args.input, args.key_file], [args.out])
    if bool(args.value) == bool(args.input):
        raise DeidInputError("give exactly one of --value (repeatable) and --input")
    key = owner_key(args.key_file, required=True)
    if args.input:
        df = read_table(args.input)
        require_records(df, repr(args.input))
        if args.column not in df.columns:
            raise DeidInputError(f"unknown column {args.column!r}: not in {args.input!r}")
        values = [str(v) for v in df[args.column].dropna().astype(str).unique()]
    else:
        values = list(dict.fromkeys(args.value))
    fpe = None
    if args.policy:
        fpe = next((s for s in Policy.load(args.policy).steps if s["op"] == "fpe" and s.get("column") == args.column),
                   None)
    if fpe is not None:
        if "key_check" not in fpe:
            raise DeidInputError(f"the fpe step of {args.column!r} in {args.policy!r} records no key_check, so a wrong "
                                 "key would give plausible but false identities: use the policy written by "
                                 "deid apply --policy-out")
        check_step_key(fpe, key)
        out = pd.DataFrame({"pseudonym": values,
                            "original": fpe_decrypt(values, key, str(fpe.get("format", "digits")), step_domain(fpe))})
    elif args.table:
        try:
            blob = Path(args.table).read_bytes()
        except OSError as exc:
            raise DeidInputError(f"cannot read {args.table!r}: {exc.strerror or exc}") from None
        out = lookup(open_sealed(blob, key), args.column, values)
    else:
        raise DeidInputError(f"{args.column!r}: give --table (the sealed reversal table), or --policy when the "
                             "column was masked by an fpe step")
    write_table(out, args.out)
    missing = int(out["original"].isna().sum())
    summary_line("reverse", [args.out], f"{len(values)} pseudonym(s), {len(values) - missing} found"
                 + (f", {missing} not in the table" if missing else ""))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``reverse`` to the ``deid`` subcommands."""
    r = sub.add_parser("reverse", help="controlled re-identification: pseudonyms back to the original values "
                                       "(the data custodian, with the owner's key)")
    r.add_argument("--column", required=True, help="the masked column the pseudonyms come from")
    r.add_argument("--table", help="the sealed reversal table (deid apply --reversal-out)")
    r.add_argument("--policy", help="the policy that masked the column: an fpe column is decrypted with the key, "
                                    "no table needed")
    r.add_argument("--value", action="append", help="a pseudonym to reverse (repeatable)")
    r.add_argument("--input", help="a table whose --column holds the pseudonyms to reverse")
    r.add_argument("--out", required=True, help="CSV: pseudonym, original (one row per original)")
    r.add_argument("--key-file", help=KEY_HELP)
    r.set_defaults(run=cmd_reverse)
