"""The data owner's masking key (El Emam & Arbuckle, *Anonymizing Health Data*, ch. 11: the salt of a keyed
hash and the key of format-preserving encryption "must be kept in a safe place"; docs/masking.md, "The
owner's key"). Every keyed step checks it here and derives its own key from it; its key check value lets a
policy refuse a wrong key (docs/masking.md, "A wrong key never yields an identity")."""
from __future__ import annotations

from hmac import compare_digest

from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ..errors import DeidInputError, ParameterError

MIN_KEY_BYTES = 16


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
