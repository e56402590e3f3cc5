"""Bad point encodings of the two elliptic-curve schemes (``ec``, ``ristretto``), each with the name
of the check that must refuse it, and the small helpers their tests share.

Ed25519 (Bernstein, Duif, Lange, Schwabe & Yang 2012, section 5): points off the curve, of small
order, outside the prime-order subgroup, non-canonical.  ristretto255 (RFC 9496, section 4.3.1):
strings that are not canonical (bit 255 set, ``s ≥ p``, ``s`` negative, i.e. odd) or do not decode.
"""
from __future__ import annotations

from nacl.bindings import crypto_core_ed25519_add, crypto_scalarmult_ed25519_base_noclamp

from common.schemes import ec, ristretto

P_FIELD = 2**255 - 19
D_CURVE = (-121665 * pow(121666, -1, P_FIELD)) % P_FIELD
ELLIPTIC = ("ec", "ristretto")
"""The schemes whose received points are group elements (Paillier's have their own tests)."""

ED_G = crypto_scalarmult_ed25519_base_noclamp((1).to_bytes(32, "little"))
ORDER_2 = (P_FIELD - 1).to_bytes(32, "little")            # (0, -1)
ORDER_4 = bytes(32)                                         # (sqrt(-1), 0)
ORDER_8 = bytes.fromhex("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05")
NON_CANONICAL = (P_FIELD + 1).to_bytes(32, "little")        # s or y = p + 1 ≥ p: refused by both schemes

RIST_G = ristretto.base_mult((1).to_bytes(32, "little"))
HIGH_BIT = RIST_G[:31] + bytes([RIST_G[31] | 0x80])         # G with bit 255 set: libsodium 1.0.18 decodes it
NEGATIVE = (1).to_bytes(32, "little")                       # s = 1 is odd, i.e. negative
NOT_DECODABLE = (2).to_bytes(32, "little")                  # s = 2: canonical, but 1/sqrt fails


def off_curve_point() -> bytes:
    """The first y whose x^2 = (y^2 - 1) / (d y^2 + 1) has no square root (Euler's criterion)."""
    y = 2
    while True:
        u = (y * y - 1) * pow(D_CURVE * y * y + 1, -1, P_FIELD) % P_FIELD
        if u and pow(u, (P_FIELD - 1) // 2, P_FIELD) == P_FIELD - 1:
            return y.to_bytes(32, "little")
        y += 1


def times_8(point: bytes) -> bytes:
    """``8·point`` on Ed25519 (three doublings through libsodium)."""
    for _ in range(3):
        point = crypto_core_ed25519_add(point, point)
    return point


BAD_POINTS: dict[str, list[tuple[bytes, str]]] = {
    "ec": [
        (ec.IDENTITY, "identity point"),
        (NON_CANONICAL, "non-canonical encoding"),
        (off_curve_point(), "not on the curve"),
        (ORDER_2, "small-order point"),
        (ORDER_4, "small-order point"),
        (ORDER_8, "small-order point"),
        (crypto_core_ed25519_add(ED_G, ORDER_8), "not in the prime-order subgroup"),
    ],
    "ristretto": [
        (ristretto.IDENTITY, "identity point"),
        (NON_CANONICAL, "non-canonical encoding"),
        (HIGH_BIT, "non-canonical encoding"),
        (NEGATIVE, "non-canonical encoding"),
        (NOT_DECODABLE, "not the encoding of a group element"),
        (bytes([0xff] * 31 + [0x7f]), "non-canonical encoding"),
    ],
}
"""Per scheme, encodings a received point must not have, with the check that names each."""

BAD_CASES = [(name, point, check) for name in ELLIPTIC for point, check in BAD_POINTS[name]]
BAD_IDS = [f"{name}-{check.replace(' ', '-')}-{i}" for i, (name, _, check) in enumerate(BAD_CASES)]


def group_module(name: str):
    """The module of scheme ``name`` (``ORDER``, ``IDENTITY``, ``base_mult``, ``scalar_from_encoding``)."""
    return {"ec": ec, "ristretto": ristretto}[name]
