"""The data owner's masking key (El Emam & Arbuckle, *Anonymizing Health Data*, ch. 11: the salt of a keyed
hash and the key of format-preserving encryption "must be kept in a safe place"; docs/masking.md, "The
owner's key"). Every keyed step checks it here and derives its own key from it."""
from __future__ import annotations

from ..errors import DeidInputError

MIN_KEY_BYTES = 16


def check_key(key: bytes | None) -> bytes:
    """The data owner's masking key, refused when absent or shorter than 16 bytes."""
    if not key or len(key) < MIN_KEY_BYTES:
        raise DeidInputError("a masking key of at least 16 bytes is required (supply it with --key-file or the "
                             "DEID_KEY environment variable)")
    return key
