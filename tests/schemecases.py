"""Bad point encodings of the ``ristretto`` scheme, each with the name of the check that must refuse it.

ristretto255 (RFC 9496, section 4.3.1): strings that are not canonical (bit 255 set, ``s ≥ p``, ``s``
negative, i.e. odd) or do not decode.
"""
from __future__ import annotations

from common.schemes import ristretto

P_FIELD = 2**255 - 19
NON_CANONICAL = (P_FIELD + 1).to_bytes(32, "little")        # s = p + 1 ≥ p
RIST_G = ristretto.base_mult((1).to_bytes(32, "little"))
HIGH_BIT = RIST_G[:31] + bytes([RIST_G[31] | 0x80])         # G with bit 255 set: libsodium 1.0.18 decodes it
NEGATIVE = (1).to_bytes(32, "little")                       # s = 1 is odd, i.e. negative
NOT_DECODABLE = (2).to_bytes(32, "little")                  # s = 2: canonical, but 1/sqrt fails

BAD_POINTS: list[tuple[bytes, str]] = [
    (ristretto.IDENTITY, "identity point"),
    (NON_CANONICAL, "non-canonical encoding"),
    (HIGH_BIT, "non-canonical encoding"),
    (NEGATIVE, "non-canonical encoding"),
    (NOT_DECODABLE, "not the encoding of a group element"),
    (bytes([0xff] * 31 + [0x7f]), "non-canonical encoding"),
]
"""Encodings a received point must not have, with the check that names each."""

BAD_IDS = [f"{check.replace(' ', '-')}-{i}" for i, (_, check) in enumerate(BAD_POINTS)]
