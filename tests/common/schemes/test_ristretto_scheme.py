"""The ``ristretto`` scheme, exponential ElGamal on ristretto255.

docs/protocol.md, "The blinded comparison": a comparison encrypts zero exactly when the encodings are
equal (mod the group order), padding never matches, every comparison is freshly blinded, and every
received point is checked before use, the failed check named (the bad encodings of
tests/schemecases.py).  The group is prime-order and its encoding is its validation (RFC 9496,
section 4.3.1), with the one gap of the libsodium inside ``rbcl`` closed by the scheme.
"""
from __future__ import annotations

import glob
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest
import rbcl
from hypothesis import given, settings, strategies as st

from common.schemes import SCHEME_NAMES, InvalidCiphertext, get_scheme
from common.schemes.ristretto import IDENTITY, ORDER, RistrettoScheme, base_mult, point_check, random_scalars, \
    scalar_from_encoding
from schemecases import BAD_IDS, BAD_POINTS, HIGH_BIT, NEGATIVE, NOT_DECODABLE, NON_CANONICAL, P_FIELD, RIST_G

SCHEME = get_scheme("ristretto")
KEY = SCHEME.generate_key(256)
_GROUP = SimpleNamespace(name="ristretto", scheme=SCHEME, key=KEY, ORDER=ORDER, IDENTITY=IDENTITY,
                         base_mult=base_mult, scalar_from_encoding=scalar_from_encoding)


@pytest.fixture
def group() -> SimpleNamespace:
    """The scheme with a session key and its module's constants."""
    return _GROUP


def test_the_class_behind_the_name() -> None:
    assert isinstance(SCHEME, RistrettoScheme) and SCHEME.title == "exponential ElGamal on ristretto255"


def test_the_generator_is_rfc_9496s() -> None:
    """RFC 9496, appendix A.1: the encoding of the generator (and the identity is 32 zero bytes)."""
    assert RIST_G.hex() == "e2f2ae0a6abc4e71a884a961c500515f58e30b6aa582dd8db6a65945e08d2d76"
    assert rbcl.crypto_core_ristretto255_is_valid_point(IDENTITY) and point_check(IDENTITY, identity_ok=True) is None


def test_libsodium_refuses_the_zero_scalar_and_an_identity_product() -> None:
    """Why ``base_mult`` and the comparison define ``0·G`` and ``r·identity`` themselves."""
    with pytest.raises(RuntimeError):
        rbcl.crypto_scalarmult_ristretto255_base(bytes(32))
    with pytest.raises(RuntimeError):
        rbcl.crypto_scalarmult_ristretto255((1).to_bytes(32, "little"), IDENTITY)


def test_bit_255_is_refused_by_the_scheme_though_libsodium_decodes_it() -> None:
    """The libsodium 1.0.18 bundled by ``rbcl`` reads G with bit 255 set as G; RFC 9496 refuses it and
    so does every entry point of the scheme (if a later libsodium refuses it too, this still holds)."""
    assert HIGH_BIT != RIST_G
    if rbcl.crypto_core_ristretto255_is_valid_point(HIGH_BIT):
        assert rbcl.crypto_core_ristretto255_add(HIGH_BIT, IDENTITY) == RIST_G
    assert point_check(HIGH_BIT) == "non-canonical encoding"


def test_bad_encodings_are_what_they_claim() -> None:
    """Each bad string fails RFC 9496's decoding for the reason its check names; every good point decodes."""
    assert int.from_bytes(NON_CANONICAL, "little") >= P_FIELD
    assert int.from_bytes(NEGATIVE, "little") & 1
    for point in (NEGATIVE, NOT_DECODABLE, NON_CANONICAL):
        assert not rbcl.crypto_core_ristretto255_is_valid_point(point)
    assert int.from_bytes(NOT_DECODABLE, "little") < P_FIELD and not NOT_DECODABLE[0] & 1
    for point, check in BAD_POINTS:
        assert point_check(point) == check
    for _ in range(50):  # no cofactor: every encoded element is valid, with no further test
        point = rbcl.crypto_core_ristretto255_random()
        assert point_check(point) is None


def test_random_scalars_are_in_range_and_distinct() -> None:
    scalars = random_scalars(1000)
    assert len(set(scalars)) == 1000
    assert all(0 < int.from_bytes(s, "little") < ORDER for s in scalars)


def test_a_non_identity_public_key_is_required() -> None:
    for public in (IDENTITY, HIGH_BIT, NOT_DECODABLE):
        with pytest.raises(ValueError, match="not a ristretto public key"):
            SCHEME.encrypt(public, [os.urandom(64)])


def test_importing_the_scheme_leaves_no_copy_of_libsodium_behind(tmp_path) -> None:
    """``rbcl`` writes its libsodium to a temporary file in every process; the scheme removes it."""
    repo = Path(__file__).resolve().parents[3]
    subprocess.run([sys.executable, "-c", "from common.schemes import get_scheme; get_scheme('ristretto')"],
                   check=True, env=dict(os.environ, TMPDIR=str(tmp_path)), cwd=repo)
    assert glob.glob(os.path.join(tmp_path, "*")) == []


def _enc(n: int) -> bytes:
    return (n % 2**512).to_bytes(64, "little")


def _matches(g: SimpleNamespace, xs: list[bytes | None], ys: list[bytes],
             positions: list[int] | None = None) -> list[bool]:
    query = g.scheme.encrypt(g.key.public, xs)
    assert g.scheme.validate(g.key.public, query) == len(xs)
    positions = list(range(len(ys))) if positions is None else positions
    comparisons = g.scheme.compare(g.key.public, query, positions, ys)
    assert len(comparisons) == 64 * len(ys)
    return g.scheme.zero_test(g.key.public, g.key.private, comparisons)


def _ciphertexts(g: SimpleNamespace, count: int) -> bytearray:
    return bytearray(g.scheme.encrypt(g.key.public, [os.urandom(64) for _ in range(count)]))


def test_registered_and_sized(group) -> None:
    assert group.name in SCHEME_NAMES and get_scheme(group.name) is group.scheme
    assert group.scheme.name == group.name and group.scheme.fixed_key_bits == 256
    assert len(group.key.public) == 32 and len(group.key.private) == 32
    assert 0 < int.from_bytes(group.key.private, "little") < group.ORDER
    public = group.key.public
    assert (group.scheme.key_bits(public), group.scheme.ciphertext_width(public),
            group.scheme.encoding_bytes(public)) == (256, 64, 64)


def test_match_is_zero_and_non_match_is_not(group) -> None:
    a, b, c = os.urandom(64), os.urandom(64), os.urandom(64)
    # a's row has positions 0 and 1, and encodings repeat as a holder row's h positions do
    assert _matches(group, [a, b, c], [a, a, b, a, c, a], [0, 1, 1, 2, 2, 0]) \
        == [True, False, True, False, True, True]


def test_padding_never_matches(group) -> None:
    ys = [os.urandom(64) for _ in range(8)] + [bytes(64), _enc(group.ORDER)]
    assert _matches(group, [None] * 10, ys) == [False] * 10


def test_the_same_pair_compared_twice_gives_unrelated_bytes(group) -> None:
    x, y = os.urandom(64), os.urandom(64)
    query = group.scheme.encrypt(group.key.public, [x, x])
    assert query[:64] != query[64:]
    for ys, zero in (([x, x], True), ([y, y], False)):
        comparisons = group.scheme.compare(group.key.public, query, [0, 0], ys)
        first, second = comparisons[:64], comparisons[64:]
        assert first[:32] != second[:32] and first[32:] != second[32:]
        assert group.scheme.zero_test(group.key.public, group.key.private, comparisons) == [zero, zero]


def test_encodings_that_reduce_to_zero_compare_correctly(group) -> None:
    """libsodium refuses the zero scalar (above); ``0·G`` is the identity."""
    zero, also_zero = bytes(64), _enc(group.ORDER)
    assert group.scalar_from_encoding(zero) == group.scalar_from_encoding(also_zero) == bytes(32)
    assert group.base_mult(bytes(32)) == group.IDENTITY
    other = os.urandom(64)
    assert _matches(group, [zero, zero, zero, other], [zero, also_zero, other, zero]) == [True, True, False, False]


def test_crafted_second_point_gives_an_identity_that_tests_non_zero(group) -> None:
    """A querier sending c2 = Y·G makes H's c2 − Y·G the identity; H answers it and K calls it non-zero."""
    y = os.urandom(64)
    query = _ciphertexts(group, 1)
    query[32:64] = group.base_mult(group.scalar_from_encoding(y))
    group.scheme.validate(group.key.public, bytes(query))
    comparisons = group.scheme.compare(group.key.public, bytes(query), [0], [y])
    assert comparisons[32:] == group.IDENTITY
    assert group.scheme.zero_test(group.key.public, group.key.private, comparisons) == [False]


@pytest.mark.parametrize("point,check", BAD_POINTS, ids=BAD_IDS)
@pytest.mark.parametrize("half,which", [(0, "first"), (32, "second")])
def test_validate_refuses_bad_points_naming_item_and_check(group, point: bytes, check: str, half: int,
                                                           which: str) -> None:
    g = group
    query = _ciphertexts(g, 3)
    query[2 * 64 + half:2 * 64 + half + 32] = point
    with pytest.raises(InvalidCiphertext, match=f"^ciphertext 2: {which} point: {check}$"):
        g.scheme.validate(g.key.public, bytes(query))


def test_a_whole_query_is_validated_piece_by_piece_on_the_pool(group) -> None:
    """The holder validates a received query in pieces on its threads: every piece is checked, the first
    bad item in query order is the one named (by its number in the whole query), a ragged block is refused."""
    good = _ciphertexts(group, 4)
    query = bytearray(bytes(good) * 5)                  # 20 ciphertexts, pieces of 3: 7 pieces
    query[17 * 64 + 32:17 * 64 + 64] = NON_CANONICAL     # a bad point in the 6th piece
    query[19 * 64:19 * 64 + 32] = group.IDENTITY         # and one in the last
    with ThreadPoolExecutor(2) as pool:
        assert group.scheme.validate_all(group.key.public, bytes(good) * 5, pool, piece=3) == 20
        with pytest.raises(InvalidCiphertext, match="^ciphertext 17: second point: non-canonical encoding$"):
            group.scheme.validate_all(group.key.public, bytes(query), pool, piece=3)
        with pytest.raises(InvalidCiphertext, match="not a multiple"):
            group.scheme.validate_all(group.key.public, bytes(good) + b"x", pool, piece=3)


@pytest.mark.parametrize("point,check", BAD_POINTS, ids=BAD_IDS)
@pytest.mark.parametrize("half,which", [(0, "first"), (32, "second")])
def test_zero_test_refuses_bad_points_naming_item_and_check(group, point: bytes, check: str, half: int,
                                                            which: str) -> None:
    g = group
    x = os.urandom(64)
    query = g.scheme.encrypt(g.key.public, [x])
    comparisons = bytearray(g.scheme.compare(g.key.public, query, [0, 0, 0], [x, x, x]))
    comparisons[64 + half:64 + half + 32] = point
    if point == g.IDENTITY and half == 32:  # a legitimate non-zero comparison (see the crafted-c2 test)
        assert g.scheme.zero_test(g.key.public, g.key.private, bytes(comparisons)) == [True, False, True]
        return
    with pytest.raises(InvalidCiphertext, match=f"^comparison 1: {which} point: {check}$"):
        g.scheme.zero_test(g.key.public, g.key.private, bytes(comparisons))


_DECODED_BY_LIBSODIUM = [(case, case_id) for case, case_id in zip(BAD_POINTS, BAD_IDS)
                         if case[1] != "non-canonical encoding"]


@pytest.mark.parametrize("point,check", [c for c, _ in _DECODED_BY_LIBSODIUM],
                         ids=[i for _, i in _DECODED_BY_LIBSODIUM])
@pytest.mark.parametrize("half", [0, 32])
def test_compare_refuses_an_unvalidated_bad_query(group, point: bytes, check: str, half: int) -> None:
    """Comparing goes through libsodium, which decodes every operand: a query that skipped validation
    is refused at the bad item.  Non-canonical encodings are left to validation (the libsodium 1.0.18
    in ``rbcl`` ignores bit 255 of an encoding: test_bit_255_is_refused_by_the_scheme_though_libsodium_decodes_it)."""
    g = group
    if half == 32 and point == g.IDENTITY:
        return  # c2 = identity is a valid group element to subtract from; validation refuses it
    query = _ciphertexts(g, 2)
    query[64 + half:64 + half + 32] = point
    g.scheme.compare(g.key.public, bytes(query), [0], [os.urandom(64)])
    with pytest.raises(InvalidCiphertext, match="^ciphertext 1: .*refused by libsodium"):
        g.scheme.compare(g.key.public, bytes(query), [0, 1], [os.urandom(64), os.urandom(64)])


def test_wrong_lengths_are_refused(group) -> None:
    scheme, public = group.scheme, group.key.public
    block = bytes(_ciphertexts(group, 2))
    for bad in (block[:-1], block + b"\x00"):
        with pytest.raises(InvalidCiphertext, match="not a multiple of 64"):
            scheme.validate(public, bad)
        with pytest.raises(InvalidCiphertext, match="not a multiple of 64"):
            scheme.zero_test(public, group.key.private, bad)
    with pytest.raises(ValueError, match="64 bytes"):
        scheme.encrypt(public, [os.urandom(32)])
    with pytest.raises(ValueError, match="64 bytes"):
        scheme.compare(public, block, [0], [os.urandom(63)])
    with pytest.raises(ValueError, match="outside"):
        scheme.compare(public, block, [2], [os.urandom(64)])
    with pytest.raises(ValueError, match="positions"):
        scheme.compare(public, block, [0, 1], [os.urandom(64)])


def test_keys_are_checked(group) -> None:
    scheme, key = group.scheme, group.key
    scheme.check_key(key.public, key.private)
    other = scheme.generate_key(256)
    assert other.public != key.public
    with pytest.raises(ValueError, match="does not belong"):
        scheme.check_key(key.public, other.private)
    for private in (bytes(32), group.ORDER.to_bytes(32, "little"), key.private[:31]):
        with pytest.raises(ValueError):
            scheme.check_key(key.public, private)
    for public in (group.IDENTITY, NON_CANONICAL, key.public[:31]):
        with pytest.raises(ValueError, match="not a ristretto public key"):
            scheme.check_key(public, key.private)
        with pytest.raises(ValueError, match="not a ristretto public key"):
            scheme.encrypt(public, [os.urandom(64)])
    with pytest.raises(ValueError):
        scheme.generate_key(0)


_BIG = 2**512 - 4 * ORDER


@settings(max_examples=100, deadline=None)
@given(x=st.integers(0, _BIG), y=st.integers(0, _BIG), shift=st.integers(0, 3), same=st.booleans())
def test_zero_exactly_when_equal_mod_the_order(x: int, y: int, shift: int, same: bool) -> None:
    g = _GROUP
    if same:
        y = x + shift * g.ORDER
    assert _matches(g, [_enc(x)], [_enc(y)]) == [x % g.ORDER == y % g.ORDER]
