"""The ``ec`` comparison scheme: exponential ElGamal on Ed25519's prime-order subgroup.

docs/protocol.md, "The blinded comparison": a comparison encrypts zero exactly when the
encodings are equal (mod the group order), padding never matches, every comparison is freshly
blinded, and every received point is checked before use.
"""
from __future__ import annotations

import os

import pytest
from hypothesis import given, settings, strategies as st
from nacl.bindings import (
    crypto_core_ed25519_add,
    crypto_core_ed25519_sub,
    crypto_scalarmult_ed25519_base_noclamp,
    crypto_scalarmult_ed25519_noclamp,
)

from common.schemes import SCHEME_NAMES, InvalidCiphertext, get_scheme
from common.schemes.ec import IDENTITY, ORDER, EcScheme, base_mult, scalar_from_encoding

P_FIELD = 2**255 - 19
D_CURVE = (-121665 * pow(121666, -1, P_FIELD)) % P_FIELD
G = crypto_scalarmult_ed25519_base_noclamp((1).to_bytes(32, "little"))
ORDER_2 = (P_FIELD - 1).to_bytes(32, "little")            # (0, -1)
ORDER_4 = bytes(32)                                         # (sqrt(-1), 0)
ORDER_8 = bytes.fromhex("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05")
NON_CANONICAL = (P_FIELD + 1).to_bytes(32, "little")        # y = p + 1, an alias of the identity

SCHEME = EcScheme()
KEY = SCHEME.generate_key(256)


def _off_curve_point() -> bytes:
    """The first y whose x^2 = (y^2 - 1) / (d y^2 + 1) has no square root (Euler's criterion)."""
    y = 2
    while True:
        u = (y * y - 1) * pow(D_CURVE * y * y + 1, -1, P_FIELD) % P_FIELD
        if u and pow(u, (P_FIELD - 1) // 2, P_FIELD) == P_FIELD - 1:
            return y.to_bytes(32, "little")
        y += 1


def _times_8(point: bytes) -> bytes:
    for _ in range(3):
        point = crypto_core_ed25519_add(point, point)
    return point


def _enc(n: int) -> bytes:
    return (n % 2**512).to_bytes(64, "little")


def _matches(xs: list[bytes | None], ys: list[bytes], positions: list[int] | None = None) -> list[bool]:
    query = SCHEME.encrypt(KEY.public, xs)
    assert SCHEME.validate(KEY.public, query) == len(xs)
    positions = list(range(len(ys))) if positions is None else positions
    comparisons = SCHEME.compare(KEY.public, query, positions, ys)
    assert len(comparisons) == 64 * len(ys)
    return SCHEME.zero_test(KEY.public, KEY.private, comparisons)


def _ciphertexts(count: int) -> bytearray:
    return bytearray(SCHEME.encrypt(KEY.public, [os.urandom(64) for _ in range(count)]))


def test_registered_and_sized() -> None:
    assert "ec" in SCHEME_NAMES
    scheme = get_scheme("ec")
    assert isinstance(scheme, EcScheme) and scheme.name == "ec"
    with pytest.raises(ValueError, match="unknown comparison scheme"):
        get_scheme("rot13")
    assert len(KEY.public) == 32 and len(KEY.private) == 32
    assert 0 < int.from_bytes(KEY.private, "little") < ORDER
    assert (SCHEME.key_bits(KEY.public), SCHEME.ciphertext_width(KEY.public),
            SCHEME.encoding_bytes(KEY.public)) == (256, 64, 64)


def test_match_is_zero_and_non_match_is_not() -> None:
    a, b, c = os.urandom(64), os.urandom(64), os.urandom(64)
    # a's row has positions 0 and 1, and encodings repeat as a holder row's h positions do
    assert _matches([a, b, c], [a, a, b, a, c, a], [0, 1, 1, 2, 2, 0]) == [True, False, True, False, True, True]


def test_padding_never_matches() -> None:
    ys = [os.urandom(64) for _ in range(8)] + [bytes(64), _enc(ORDER)]
    assert _matches([None] * 10, ys) == [False] * 10


def test_the_same_pair_compared_twice_gives_unrelated_bytes() -> None:
    x, y = os.urandom(64), os.urandom(64)
    query = SCHEME.encrypt(KEY.public, [x, x])
    assert query[:64] != query[64:]
    for ys, zero in (([x, x], True), ([y, y], False)):
        comparisons = SCHEME.compare(KEY.public, query, [0, 0], ys)
        first, second = comparisons[:64], comparisons[64:]
        assert first[:32] != second[:32] and first[32:] != second[32:]
        assert SCHEME.zero_test(KEY.public, KEY.private, comparisons) == [zero, zero]


def test_fast_blinding_is_ignored() -> None:
    x = os.urandom(64)
    query = SCHEME.encrypt(KEY.public, [x])
    comparisons = SCHEME.compare(KEY.public, query, [0, 0], [x, os.urandom(64)], fast_blinding=True)
    assert SCHEME.zero_test(KEY.public, KEY.private, comparisons) == [True, False]


def test_zero_scalar_is_the_identity_not_a_libsodium_error() -> None:
    """libsodium refuses the zero scalar; encodings that reduce to 0 mod ℓ still compare correctly."""
    with pytest.raises(RuntimeError):
        crypto_scalarmult_ed25519_base_noclamp(bytes(32))
    with pytest.raises(RuntimeError):
        crypto_scalarmult_ed25519_noclamp(bytes(32), G)
    zero, also_zero = bytes(64), _enc(ORDER)
    assert scalar_from_encoding(zero) == scalar_from_encoding(also_zero) == bytes(32)
    assert base_mult(bytes(32)) == IDENTITY
    other = os.urandom(64)
    assert _matches([zero, zero, zero, other], [zero, also_zero, other, zero]) == [True, True, False, False]


def test_crafted_second_point_gives_an_identity_that_tests_non_zero() -> None:
    """A querier sending c2 = Y·G makes H's c2 − Y·G the identity; H answers it and K calls it non-zero."""
    y = os.urandom(64)
    query = bytearray(_ciphertexts(1))
    query[32:64] = base_mult(scalar_from_encoding(y))
    SCHEME.validate(KEY.public, bytes(query))
    comparisons = SCHEME.compare(KEY.public, bytes(query), [0], [y])
    assert comparisons[32:] == IDENTITY
    assert SCHEME.zero_test(KEY.public, KEY.private, comparisons) == [False]


BAD_POINTS = [
    (IDENTITY, "identity point"),
    (NON_CANONICAL, "non-canonical encoding"),
    (_off_curve_point(), "not on the curve"),
    (ORDER_2, "small-order point"),
    (ORDER_4, "small-order point"),
    (ORDER_8, "small-order point"),
    (crypto_core_ed25519_add(G, ORDER_8), "not in the prime-order subgroup"),
]


def test_bad_points_are_what_they_claim() -> None:
    assert int.from_bytes(NON_CANONICAL, "little") >= P_FIELD
    for point in (ORDER_2, ORDER_4, ORDER_8):
        assert _times_8(point) == IDENTITY and point != IDENTITY
    mixed = crypto_core_ed25519_add(G, ORDER_8)
    assert _times_8(mixed) != IDENTITY and crypto_core_ed25519_sub(mixed, ORDER_8) == G


@pytest.mark.parametrize("point,check", BAD_POINTS, ids=[c + str(i) for i, (_, c) in enumerate(BAD_POINTS)])
@pytest.mark.parametrize("half,name", [(0, "first"), (32, "second")])
def test_validate_refuses_bad_points_naming_item_and_check(point: bytes, check: str, half: int, name: str) -> None:
    query = _ciphertexts(3)
    query[2 * 64 + half:2 * 64 + half + 32] = point
    with pytest.raises(InvalidCiphertext, match=f"^ciphertext 2: {name} point: {check}$"):
        SCHEME.validate(KEY.public, bytes(query))


def test_a_whole_query_is_validated_piece_by_piece_on_the_pool() -> None:
    """The holder validates a received query in pieces on its threads: every piece is checked, the first
    bad item in query order is the one named (by its number in the whole query), a ragged block is refused."""
    from concurrent.futures import ThreadPoolExecutor
    good = _ciphertexts(4)
    query = bytearray(bytes(good) * 5)                  # 20 ciphertexts, pieces of 3: 7 pieces
    query[17 * 64 + 32:17 * 64 + 64] = ORDER_8           # a bad point in the 6th piece
    query[19 * 64:19 * 64 + 32] = IDENTITY               # and one in the last
    with ThreadPoolExecutor(2) as pool:
        assert SCHEME.validate_all(KEY.public, bytes(good) * 5, pool, piece=3) == 20
        with pytest.raises(InvalidCiphertext, match="^ciphertext 17: second point: small-order point$"):
            SCHEME.validate_all(KEY.public, bytes(query), pool, piece=3)
        with pytest.raises(InvalidCiphertext, match="not a multiple"):
            SCHEME.validate_all(KEY.public, bytes(good) + b"x", pool, piece=3)


@pytest.mark.parametrize("point,check", BAD_POINTS, ids=[c + str(i) for i, (_, c) in enumerate(BAD_POINTS)])
@pytest.mark.parametrize("half,name", [(0, "first"), (32, "second")])
def test_zero_test_refuses_bad_points_naming_item_and_check(point: bytes, check: str, half: int, name: str) -> None:
    x = os.urandom(64)
    query = SCHEME.encrypt(KEY.public, [x])
    comparisons = bytearray(SCHEME.compare(KEY.public, query, [0, 0, 0], [x, x, x]))
    comparisons[64 + half:64 + half + 32] = point
    if point == IDENTITY and half == 32:  # a legitimate non-zero comparison (see the crafted-c2 test)
        assert SCHEME.zero_test(KEY.public, KEY.private, bytes(comparisons)) == [True, False, True]
        return
    with pytest.raises(InvalidCiphertext, match=f"^comparison 1: {name} point: {check}$"):
        SCHEME.zero_test(KEY.public, KEY.private, bytes(comparisons))


@pytest.mark.parametrize("point,half", [(IDENTITY, 0), (ORDER_8, 0), (crypto_core_ed25519_add(G, ORDER_8), 32),
                                         (_off_curve_point(), 32)])
def test_compare_refuses_an_unvalidated_bad_query(point: bytes, half: int) -> None:
    query = _ciphertexts(2)
    query[64 + half:64 + half + 32] = point
    SCHEME.compare(KEY.public, bytes(query), [0], [os.urandom(64)])
    with pytest.raises(InvalidCiphertext, match="^ciphertext 1: refused by libsodium"):
        SCHEME.compare(KEY.public, bytes(query), [0, 1], [os.urandom(64), os.urandom(64)])


def test_wrong_lengths_are_refused() -> None:
    block = bytes(_ciphertexts(2))
    for bad in (block[:-1], block + b"\x00"):
        with pytest.raises(InvalidCiphertext, match="not a multiple of 64"):
            SCHEME.validate(KEY.public, bad)
        with pytest.raises(InvalidCiphertext, match="not a multiple of 64"):
            SCHEME.zero_test(KEY.public, KEY.private, bad)
    with pytest.raises(ValueError, match="64 bytes"):
        SCHEME.encrypt(KEY.public, [os.urandom(32)])
    with pytest.raises(ValueError, match="64 bytes"):
        SCHEME.compare(KEY.public, block, [0], [os.urandom(63)])
    with pytest.raises(ValueError, match="outside"):
        SCHEME.compare(KEY.public, block, [2], [os.urandom(64)])
    with pytest.raises(ValueError, match="positions"):
        SCHEME.compare(KEY.public, block, [0, 1], [os.urandom(64)])


def test_keys_are_checked() -> None:
    SCHEME.check_key(KEY.public, KEY.private)
    other = SCHEME.generate_key(256)
    assert other.public != KEY.public
    with pytest.raises(ValueError, match="does not belong"):
        SCHEME.check_key(KEY.public, other.private)
    for private in (bytes(32), ORDER.to_bytes(32, "little"), KEY.private[:31]):
        with pytest.raises(ValueError):
            SCHEME.check_key(KEY.public, private)
    for public in (IDENTITY, ORDER_8, KEY.public[:31]):
        with pytest.raises(ValueError, match="not an ec public key"):
            SCHEME.check_key(public, KEY.private)
        with pytest.raises(ValueError, match="not an ec public key"):
            SCHEME.encrypt(public, [os.urandom(64)])
    with pytest.raises(ValueError):
        SCHEME.generate_key(0)


_BIG = 2**512 - 4 * ORDER


@settings(max_examples=150, deadline=None)
@given(x=st.integers(0, _BIG), y=st.integers(0, _BIG), shift=st.integers(0, 3), same=st.booleans())
def test_zero_exactly_when_equal_mod_the_order(x: int, y: int, shift: int, same: bool) -> None:
    if same:
        y = x + shift * ORDER
    assert _matches([_enc(x)], [_enc(y)]) == [x % ORDER == y % ORDER]
