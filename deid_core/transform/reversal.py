"""The sealed reversal table: pseudonym -> original, for the custodian's controlled re-identification
(El Emam & Arbuckle, *Anonymizing Health Data*, ch. 11, "Controlled Re-Identification"; docs/masking.md).

Keyed-hash pseudonyms and randomized values cannot be decrypted, so re-identifying them needs a mapping
table kept "in a secure place". The table is never written in the clear: it is sealed with AES-256-GCM
under a key derived from the data owner's key (or passphrase) by scrypt (n = 2^15, r = 8, p = 1) with a
fresh random salt, and the file holds only ``magic | salt | nonce | ciphertext`` (the header is the
associated data, so any change to it fails the tag too). Format-preserving pseudonyms
(:mod:`.fpe`) need no table: the key decrypts them.

While a policy is applied, the masking steps add their (original, pseudonym) pairs to
``ctx["reversal"]`` when it exists (:func:`record`, :func:`record_series`).
"""
from __future__ import annotations

import json
import os
import zlib
from typing import Mapping, Sequence

import pandas as pd

from common.aead import NONCE_BYTES, SALT_BYTES, TAG_BYTES, Aead, AuthenticationFailed, passphrase_key

from ..errors import DeidInputError
from .keys import check_key

MAGIC = b"DEIDREV1"


def record(ctx: dict, column: str, originals: Sequence[str], pseudonyms: Sequence[str]) -> None:
    """Add a masking step's distinct (original, pseudonym) pairs to ``ctx["reversal"]`` if it collects them."""
    table = ctx.get("reversal")
    if table is None:
        return
    pairs = table.setdefault(column, {})
    for o, p in zip(originals, pseudonyms):
        if isinstance(p, str):
            pairs.setdefault(p, set()).add(str(o))


def record_series(ctx: dict, column: str, before: pd.Series, after: pd.Series) -> None:
    """:func:`record` for a whole column masked in place: its distinct (original, replacement) pairs."""
    if ctx.get("reversal") is None:
        return
    pairs = pd.DataFrame({"o": before.astype(object), "p": after.astype(object)}).dropna().drop_duplicates()
    record(ctx, column, pairs["o"].tolist(), pairs["p"].tolist())


def _cipher(key: bytes, salt: bytes) -> Aead:
    return Aead(passphrase_key(check_key(key), salt))


def seal(table: Mapping[str, Mapping[str, set[str] | Sequence[str]]], key: bytes) -> bytes:
    """The sealed file's bytes for ``{column: {pseudonym: originals}}``."""
    plain = {"format": "deid_core.reversal", "version": 1,
             "columns": {c: {p: sorted(o) for p, o in sorted(pairs.items())} for c, pairs in table.items()}}
    salt, nonce = os.urandom(SALT_BYTES), os.urandom(NONCE_BYTES)
    body = zlib.compress(json.dumps(plain, ensure_ascii=False, separators=(",", ":")).encode(), 6)
    return MAGIC + salt + _cipher(key, salt).seal(body, MAGIC + salt + nonce, nonce=nonce)


def open_sealed(blob: bytes, key: bytes) -> dict[str, dict[str, list[str]]]:
    """``{column: {pseudonym: [originals]}}`` of a sealed table; a wrong key or an altered file is refused."""
    head = len(MAGIC) + SALT_BYTES + NONCE_BYTES
    if len(blob) <= head + TAG_BYTES or not blob.startswith(MAGIC):
        raise DeidInputError("not a sealed reversal table (written by deid apply --reversal-out)")
    salt = blob[len(MAGIC):len(MAGIC) + SALT_BYTES]
    try:
        body = _cipher(key, salt).open(blob[len(MAGIC) + SALT_BYTES:], blob[:head])
    except AuthenticationFailed:
        raise DeidInputError("the reversal table does not open with this key (wrong key, or the file was altered)"
                             ) from None
    plain = json.loads(zlib.decompress(body))
    return plain["columns"]


def lookup(table: Mapping[str, Mapping[str, Sequence[str]]], column: str, pseudonyms: Sequence[str]) -> pd.DataFrame:
    """One row per (pseudonym, original) pair; a pseudonym the table lacks gets an empty original.

    A randomized name may stand for several originals (two names can draw the same replacement): each is
    a row.
    """
    if column not in table:
        raise DeidInputError(f"the reversal table has no column {column!r} (it has: {', '.join(sorted(table)) or 'none'})")
    pairs = table[column]
    rows = [(p, o) for p in pseudonyms for o in (pairs.get(p) or [None])]
    return pd.DataFrame(rows, columns=["pseudonym", "original"], dtype=object)
