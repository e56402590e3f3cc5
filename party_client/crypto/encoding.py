"""Keyed encodings of normalized values (docs/protocol.md, "Encoding identifiers").

For field ``f`` and normalized value ``v`` the encoding is
``X = PRF_s("enc" || f || 0x00 || v)``: HKDF-Expand (SHA-256) keyed with the
256-bit session secret ``s``, expanded to the comparison scheme's encoding
length (:meth:`common.schemes.Scheme.encoding_bytes`; Paillier: ``|n| - 64``
bits, so ``X < n`` read as an integer).  Cuckoo bin positions are ``PRF_s("bin" || i || X) mod B``
and lookup buckets ``PRF_s("bucket" || X) mod B_L`` (HMAC-SHA256, 128 bits
reduced mod the table size: bias below 2^-100); keyed blocking buckets are
``PRF_s("block" || pass || key) mod B`` (64 bits).  Because every PRF is keyed
with ``s``, which the key holder never sees, K cannot dictionary-attack the
values it zero-tests nor the positions it sees.
"""
from __future__ import annotations

import os

from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

SECRET_BYTES = 32


def new_session_secret() -> bytes:
    """A fresh uniform 256-bit session secret ``s`` (the querier draws one per query, blocking plan or
    lookup session; only the querier and the holder ever hold it)."""
    return os.urandom(SECRET_BYTES)


def encoding_bytes(modulus_bits: int) -> int:
    """Length of an encoding in bytes: ``|n| - 64`` bits."""
    return (modulus_bits - 64) // 8


def encode_to(secret: bytes, field: str, value: str, length: int) -> bytes:
    """``PRF_s("enc" || f || 0x00 || v)``, ``length`` bytes.

    The field name may not contain NUL, so that (f, v) -> input is injective.
    """
    if "\x00" in field:
        raise ValueError("a field name may not contain NUL")
    info = b"enc" + field.encode() + b"\x00" + value.encode("utf-8")
    return HKDFExpand(hashes.SHA256(), length, info).derive(secret)


def encode(secret: bytes, field: str, value: str, modulus_bits: int) -> bytes:
    """The encoding for a Paillier modulus of ``modulus_bits`` bits (big-endian, read as an integer < n)."""
    return encode_to(secret, field, value, encoding_bytes(modulus_bits))


def _prf_mod(secret: bytes, message: bytes, modulus: int) -> int:
    mac = hmac.HMAC(secret, hashes.SHA256())
    mac.update(message)
    return int.from_bytes(mac.finalize()[:16], "big") % modulus


def bin_positions(secret: bytes, encoding: bytes, bins: int, hash_functions: int) -> list[int]:
    """The ``h`` cuckoo positions ``PRF_s("bin" || i || X) mod B``, i = 0..h-1."""
    return [_prf_mod(secret, b"bin" + bytes([i]) + encoding, bins) for i in range(hash_functions)]


def bucket(secret: bytes, encoding: bytes, buckets: int) -> int:
    """The lookup bucket ``PRF_s("bucket" || X) mod B_L``."""
    return _prf_mod(secret, b"bucket" + encoding, buckets)


def block_prf(secret: bytes, blocking_pass: int, key: str) -> int:
    """``PRF_s("block" || pass || key)`` as a 64-bit integer; a keyed block bucket is this mod B.

    64 bits keep the bucket search vectorized (numpy ``uint64``); the bias mod ``B < 2^32`` is
    below 2^-32, irrelevant for blocking.
    """
    mac = hmac.HMAC(secret, hashes.SHA256())
    mac.update(b"block" + blocking_pass.to_bytes(2, "big") + key.encode("utf-8"))
    return int.from_bytes(mac.finalize()[:8], "big")
