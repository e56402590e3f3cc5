"""The data owner's masking key (El Emam & Arbuckle, *Anonymizing Health Data*, ch. 11: the salt of a keyed
hash and the key of format-preserving encryption "must be kept in a safe place"; docs/masking.md, "The
owner's key"). Every keyed step checks it here and derives its own key from it; its key check value lets a
policy refuse a wrong key (docs/masking.md, "A wrong key never yields an identity")."""
from __future__ import annotations

import os
from hmac import compare_digest
from typing import Mapping

from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ..errors import DeidInputError, ParameterError

MIN_KEY_BYTES = 16
#: The environment variable a command reads the owner's key from when no key file is given.
KEY_ENV = "DEID_KEY"


def environment_key() -> bytes | None:
    """The owner's key from ``$DEID_KEY`` (None when unset): how ``deid ui`` and the commands without a
    ``--key-file`` get it, never through a form or a file they write."""
    return os.environ.get(KEY_ENV, "").encode() or None


def check_key(key: bytes | None) -> bytes:
    """The data owner's masking key, refused when absent or shorter than 16 bytes."""
    if not key or len(key) < MIN_KEY_BYTES:
        raise ParameterError("a masking key of at least 16 bytes is required (supply it with {key} or the "
                             "DEID_KEY environment variable)", "key")
    return key


#: The key check value: the first 16 bytes of HMAC-SHA256 under a key derived from the owner's key (its own
#: HKDF label) of a fixed message. It tells whether two keys are the same and nothing else about the key
#: than any pseudonym does (docs/masking.md, "A wrong key never yields an identity").
KEY_CHECK_INFO = b"deid_core key check v1"


def key_check_value(key: bytes | None) -> str:
    """The hex key check value of the owner's key, recorded in every ``fpe`` step a policy masks with it."""
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=KEY_CHECK_INFO).derive(check_key(key))
    mac = hmac.HMAC(derived, hashes.SHA256())
    mac.update(b"the key that masked this column")
    return mac.finalize()[:16].hex()


def verify_key_check(key: bytes | None, expected: object, what: str) -> None:
    """Refuse a key whose check value is not ``expected`` (``what`` names the step in the message)."""
    if not isinstance(expected, str) or not compare_digest(key_check_value(key), expected):
        raise DeidInputError(f"{what}: the key is not the one that masked it (key_check differs); nothing written")


def text_recipe(text: Mapping[str, object] | None, key: bytes | None = None) -> dict | None:
    """What a saved policy records of ``[text]``: the mode and hints, and in ``surrogate`` mode the check value
    of the owner's key, so that the policy refuses another key (as its ``fpe`` steps do; docs/masking.md, "A
    wrong key never yields an identity")."""
    if text is None:
        return None
    recipe = dict(text)
    if recipe.get("mode") == "surrogate":
        recipe["key_check"] = key_check_value(key)
    return recipe


def check_text_key(text: Mapping[str, object] | None, key: bytes | None) -> None:
    """Refuse ``key`` for a policy whose notes are replaced by surrogates under another key (or none)."""
    if text is not None and text.get("mode") == "surrogate":
        verify_key_check(key, text.get("key_check"), "[text] surrogate")
