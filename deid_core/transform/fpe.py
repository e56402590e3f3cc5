"""Format-preserving pseudonyms: FF3-1 encryption of the digits of an identifier (El Emam & Arbuckle,
*Anonymizing Health Data*, ch. 11, "Pseudonymization" and "Controlled Re-Identification"; NIST SP 800-38G
Rev. 1, FF3-1, as implemented by the ``ff3`` package; docs/masking.md).

The pseudonym fits the original field: every non-digit character (the dashes of ``123-45-6789``, a
site prefix ``AB``) stays in place and only the digits are encrypted, so a column of 11 characters stays
11 characters and a database schema is not distorted. Formats:

* ``digits`` — every digit encrypted (at least 6: FF3-1's domain must hold a million values; at most 56);
* ``ssn`` — 9 digits; a valid SSN (area not 000, 666 or 900–999, group not 00, serial not 0000) becomes
  another valid SSN and an invalid one an invalid one (cycle walking inside the value's class, so the
  map stays a bijection and decrypts);
* ``luhn`` — the last digit is a Luhn check digit: the other digits are encrypted and the check digit
  is recomputed, so the pseudonym passes the check an application applies (an input failing it is refused).

Decryption needs only the data owner's key (no mapping table). The FF3-1 key is derived from the owner's
key by HKDF-SHA256; the 56-bit tweak from the step's ``domain`` (default: the column name), so the same
identifier gets the same pseudonym in every table masked with the same key and domain (referential
integrity across tables) and different domains give unrelated pseudonyms.
"""
from __future__ import annotations

import hashlib
import re
from typing import Any, Callable, Iterable, Mapping

import pandas as pd
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ..errors import DeidInputError
from ..spec import SUPPRESSED
from .keys import check_key, key_check_value, verify_key_check
from .ops import map_categories

FORMATS = ("digits", "ssn", "luhn")
#: FF3-1 with radix 10: 10^6 ≥ the minimum domain of one million, and 2·⌊96/log2 10⌋ digits at most.
MIN_DIGITS, MAX_DIGITS = 6, 56
_NON_DIGIT = re.compile(r"[^0-9]")


def _cipher(key: bytes, domain: str) -> Any:
    """FF3-1 cipher with an AES-256 key derived from the owner's key and a tweak derived from ``domain``."""
    from ff3 import FF3Cipher

    aes = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"deid_core fpe ff3-1 v1").derive(check_key(key))
    tweak = hashlib.sha256(b"deid_core fpe tweak\x00" + domain.encode()).digest()[:7]
    return FF3Cipher(aes.hex(), tweak.hex())


def luhn_digit(body: str) -> str:
    """The Luhn check digit of a digit string (the digit that makes ``body + digit`` pass the check)."""
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch) * (2 if i % 2 == 0 else 1)
        total += d - 9 if d > 9 else d
    return str((10 - total % 10) % 10)


def luhn_valid(number: str) -> bool:
    """Whether the last digit of ``number`` (digits only) is its Luhn check digit."""
    return len(number) >= 2 and luhn_digit(number[:-1]) == number[-1]


def ssn_valid(digits: str) -> bool:
    """A possible SSN: area not 000, 666 or 9xx, group not 00, serial not 0000 (9 digits)."""
    return digits[:3] not in ("000", "666") and digits[0] != "9" and digits[3:5] != "00" and digits[5:] != "0000"


def _walk(step: Callable[[str], str], x: str, same_class: Callable[[str], bool] | None) -> str:
    """Cycle walking: apply ``step`` until the result is in ``x``'s class (a bijection on each class)."""
    y = step(x)
    if same_class is None:
        return y
    cls = same_class(x)
    while same_class(y) != cls:
        y = step(y)
    return y


def _transform(values: Iterable[str], key: bytes, fmt: str, domain: str, decrypt: bool) -> list[str]:
    if fmt not in FORMATS:
        raise DeidInputError(f"fpe format {fmt!r} must be one of {', '.join(FORMATS)}")
    c = _cipher(key, domain)
    step = c.decrypt if decrypt else c.encrypt
    out = []
    for v in values:
        if v == SUPPRESSED:
            out.append(v)
            continue
        digits = _NON_DIGIT.sub("", v)
        body = digits[:-1] if fmt == "luhn" else digits
        if fmt == "ssn" and len(digits) != 9:
            raise DeidInputError(f"fpe format 'ssn' needs 9 digits; a value of domain {domain!r} has {len(digits)}")
        if not MIN_DIGITS <= len(body) <= MAX_DIGITS:
            raise DeidInputError(f"fpe needs {MIN_DIGITS} to {MAX_DIGITS} encrypted digits per value (FF3-1 domain "
                                 f"of at least a million); a value of domain {domain!r} has {len(body)}")
        if fmt == "luhn" and not luhn_valid(digits):
            raise DeidInputError(f"fpe format 'luhn': a value of domain {domain!r} fails its Luhn check digit")
        new = _walk(step, body, ssn_valid if fmt == "ssn" else None)
        if fmt == "luhn":
            new += luhn_digit(new)
        it = iter(new)
        out.append("".join(next(it) if "0" <= ch <= "9" else ch for ch in v))
    return out


def fpe_encrypt(values: Iterable[str], key: bytes, fmt: str = "digits", domain: str = "") -> list[str]:
    """Format-preserving pseudonyms of ``values`` (see the module docstring for ``fmt``)."""
    return _transform(values, key, fmt, domain, decrypt=False)


def fpe_decrypt(values: Iterable[str], key: bytes, fmt: str = "digits", domain: str = "") -> list[str]:
    """The original values of pseudonyms made by :func:`fpe_encrypt` with the same key, format and domain."""
    return _transform(values, key, fmt, domain, decrypt=True)


def step_domain(step: Mapping[str, Any]) -> str:
    """The tweak domain of an ``fpe`` step: ``domain``, else the column name."""
    return str(step.get("domain") or step["column"])


def check_step_key(step: Mapping[str, Any], key: bytes | None) -> None:
    """Refuse ``key`` when the ``fpe`` step records the check value of another key (a pseudonym made or
    decrypted under the wrong key is a plausible but false identifier)."""
    if "key_check" in step:
        verify_key_check(key, step["key_check"], f"fpe step of column {step.get('column')!r}")


def op_fpe(df: pd.DataFrame, step: Mapping[str, Any], ctx: dict) -> pd.DataFrame:
    """Policy step ``{"op": "fpe", "column": C, "format": "digits"|"ssn"|"luhn", "domain": D, "key_check": V}``:
    a step recording ``key_check`` refuses another key; the check value of the key used goes to
    ``ctx["key_checks"]`` (what ``deid apply --policy-out`` records)."""
    c = step.get("column")
    if c not in df.columns:
        raise DeidInputError(f"unknown column {c!r}: not in the input")
    check_step_key(step, ctx.get("key"))
    fmt, domain = str(step.get("format", "digits")), step_domain(step)
    df[c] = map_categories(df[c], lambda cats: fpe_encrypt(cats, ctx.get("key"), fmt, domain))
    ctx.setdefault("key_checks", {})[c] = key_check_value(ctx.get("key"))
    return df
