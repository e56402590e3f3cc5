"""The Paillier comparison scheme (common/schemes/paillier.py): fixed-base encryption, the blinded
comparison E(r(X - Y)) with a fresh full-size r each (K, which can decrypt, cannot tell which comparisons
hide the same difference), the book's literal formula (which tests x = -y), and K's half-CRT zero test
(docs/protocol.md, "The blinded comparison")."""
from __future__ import annotations

import os
import random
import secrets

import gmpy2
import pytest
from phe import paillier

from common.schemes import InvalidCiphertext as CiphertextError
from common.schemes import get_scheme
from common.schemes.paillier import (Encryptor, PublicKey, SessionKey, ZeroTester, blinded_comparison, blinding_factor,
                                     book_literal_comparison, negated_generator_power)
from party_client.protocol.batches import compare_units

RATIO_BOUND = 1 << 130      # numerator and denominator of a ratio K would look for (short r: below 2^128)


@pytest.fixture(scope="module")
def keypair():
    public, private = paillier.generate_paillier_keypair(n_length=1024)
    return public, private


def test_fixed_base_encryption_decrypts(keypair):
    public, private = keypair
    encryptor = Encryptor(PublicKey(public.n))
    for m in (0, 1, 12345, public.n - 1):
        c = encryptor.encrypt(m)
        assert private.raw_decrypt(int(c)) == m
    assert encryptor.encrypt(7) != encryptor.encrypt(7)               # probabilistic


def test_blinded_comparison_is_r_times_difference(keypair):
    public, private = keypair
    key = PublicKey(public.n)
    encryptor = Encryptor(key)
    x, y = 987654321, 123456789
    c_x = encryptor.encrypt(x)
    r = blinding_factor(key)
    assert private.raw_decrypt(int(blinded_comparison(key, c_x, negated_generator_power(key, x), r))) == 0
    assert private.raw_decrypt(int(blinded_comparison(key, c_x, negated_generator_power(key, y), r))) \
        == r * (x - y) % public.n


def small_ratio(t: int, n: int, bound: int = RATIO_BOUND) -> tuple[int, int] | None:
    """``(a, b)`` with ``a = b·t (mod n)`` and ``0 < a, |b| <= bound``, if there is one (rational
    reconstruction: the extended Euclidean algorithm on ``n`` and ``t``, stopped at the first remainder
    at most ``bound``; as ``2·bound² < n`` such a ratio is unique)."""
    r0, r1 = gmpy2.mpz(n), gmpy2.mpz(t) % n      # invariant: r_i = s_i·t (mod n)
    s0, s1 = gmpy2.mpz(0), gmpy2.mpz(1)
    while r1 > bound:
        quotient = r0 // r1
        r0, r1 = r1, r0 - quotient * r1
        s0, s1 = s1, s0 - quotient * s1
    return (int(r1), int(s1)) if r1 and abs(s1) <= bound else None


def differing_pairs(key: PublicKey, count: int) -> list[tuple[bytes, bytes]]:
    """``count`` pairs of a querier's encoding X and a holder's encoding Y, uniform (so X != Y)."""
    width = get_scheme("paillier").encoding_bytes(key.modulus_bytes())
    return [(os.urandom(width), os.urandom(width)) for _ in range(count)]


def test_the_key_holder_cannot_link_comparisons_hiding_the_same_difference(keypair):
    """K can decrypt what the holder sends: from two comparisons ``r1·d`` and ``r2·d`` of one difference
    ``d`` it gets ``r1/r2 mod n``.  Were ``r`` short, that would be a ratio of two small numbers, which
    rational reconstruction finds at once, grouping comparisons by querier record; the holder's
    comparisons (each pair twice, as a querier's identifier meets a holder row in two places of its
    table) show no such ratio."""
    public, private = keypair
    key = PublicKey(public.n)
    pairs = differing_pairs(key, 50)
    query = get_scheme("paillier").encrypt(key.modulus_bytes(), [x for x, _ in pairs for _ in range(2)])
    holder = [y for _, y in pairs for _ in range(2)]
    out = compare_units("paillier", key.modulus_bytes(), query, range(len(holder)), holder)   # as the holder does
    plain = [private.raw_decrypt(int(c)) for c in key.from_bytes(out)]
    for first, second in zip(plain[0::2], plain[1::2]):
        assert first and second and first != second
        assert small_ratio(first * int(gmpy2.invert(second, public.n)), public.n) is None


def test_the_ratio_test_links_comparisons_with_a_short_r(keypair):
    """The control: the same comparisons with each ``r`` drawn below 2^128 by hand are linked every time."""
    public, private = keypair
    key = PublicKey(public.n)
    encryptor = Encryptor(key)
    for x, y in differing_pairs(key, 50):
        c_x = encryptor.encrypt(int.from_bytes(x, "big"))
        negated_y = negated_generator_power(key, int.from_bytes(y, "big"))
        r1, r2 = (secrets.randbelow((1 << 128) - 1) + 1 for _ in range(2))
        first, second = (private.raw_decrypt(int(blinded_comparison(key, c_x, negated_y, r))) for r in (r1, r2))
        found = small_ratio(first * int(gmpy2.invert(second, public.n)), public.n)
        assert found is not None and found[0] * r2 == found[1] * r1


def test_books_literal_formula_tests_x_equals_minus_y(keypair):
    """B ch. 12 prints c = ((E(x) x E(y))^-1)^r: equal values do NOT give zero, x = -y does."""
    public, private = keypair
    key = PublicKey(public.n)
    encryptor = Encryptor(key)
    x = 5550001234
    r = blinding_factor(key)
    literal_equal = book_literal_comparison(key, encryptor.encrypt(x), encryptor.encrypt(x), r)
    assert private.raw_decrypt(int(literal_equal)) != 0
    literal_negated = book_literal_comparison(key, encryptor.encrypt(x), encryptor.encrypt(public.n - x), r)
    assert private.raw_decrypt(int(literal_negated)) == 0
    ours = blinded_comparison(key, encryptor.encrypt(x), negated_generator_power(key, x), r)
    assert private.raw_decrypt(int(ours)) == 0


def test_fresh_r_per_comparison(keypair):
    public, _ = keypair
    key = PublicKey(public.n)
    draws = {int(blinding_factor(key)) for _ in range(200)}
    assert len(draws) == 200 and all(1 <= r < public.n for r in draws)


def test_zero_test_agrees_with_full_decryption(keypair):
    public, private = keypair
    key = PublicKey(public.n)
    tester = ZeroTester(SessionKey(n=public.n, p=private.p, q=private.q))
    encryptor = Encryptor(key)
    values, expected = [], []
    for i in range(120):
        x = random.randrange(public.n)
        y = x if i % 3 == 0 else random.randrange(public.n)
        c = blinded_comparison(key, encryptor.encrypt(x), negated_generator_power(key, y), blinding_factor(key))
        values.append(c)
        expected.append(private.raw_decrypt(int(c)) == 0)
    assert tester.test_many(values) == expected
    assert [tester.is_zero(c) for c in values] == expected
    assert sum(expected) == 40


def test_zero_tester_rejects_values_outside_the_group(keypair):
    public, private = keypair
    tester = ZeroTester(SessionKey(n=public.n, p=private.p, q=private.q))
    width = tester.width
    for bad in (0, public.n * public.n, public.n * public.n + 5, private.p * 12345):
        blob = (bad % (1 << (8 * width))).to_bytes(width, "big")
        with pytest.raises(CiphertextError):
            tester.parse(blob)
    with pytest.raises(CiphertextError):
        tester.parse(b"\x01" * (width - 1))
