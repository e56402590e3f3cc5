"""The Paillier comparison scheme (common/schemes/paillier.py): fixed-base encryption, the blinded
comparison E(r(X - Y)) with a fresh r each, the book's literal formula (which tests x = -y), and K's
half-CRT zero test (docs/protocol.md, "The blinded comparison")."""
from __future__ import annotations

import random

import pytest
from phe import paillier

from common.schemes import InvalidCiphertext as CiphertextError
from common.schemes.paillier import (Encryptor, PublicKey, SessionKey, ZeroTester, blinded_comparison, blinding_factor,
                                     book_literal_comparison, negated_generator_power)


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
    r = blinding_factor(key, fast=False)
    assert private.raw_decrypt(int(blinded_comparison(key, c_x, negated_generator_power(key, x), r))) == 0
    assert private.raw_decrypt(int(blinded_comparison(key, c_x, negated_generator_power(key, y), r))) \
        == r * (x - y) % public.n
    fast = blinding_factor(key, fast=True)
    assert 1 <= fast < 2 ** 128
    assert private.raw_decrypt(int(blinded_comparison(key, c_x, negated_generator_power(key, x), fast))) == 0


def test_books_literal_formula_tests_x_equals_minus_y(keypair):
    """B ch. 12 prints c = ((E(x) x E(y))^-1)^r: equal values do NOT give zero, x = -y does."""
    public, private = keypair
    key = PublicKey(public.n)
    encryptor = Encryptor(key)
    x = 5550001234
    r = blinding_factor(key, fast=False)
    literal_equal = book_literal_comparison(key, encryptor.encrypt(x), encryptor.encrypt(x), r)
    assert private.raw_decrypt(int(literal_equal)) != 0
    literal_negated = book_literal_comparison(key, encryptor.encrypt(x), encryptor.encrypt(public.n - x), r)
    assert private.raw_decrypt(int(literal_negated)) == 0
    ours = blinded_comparison(key, encryptor.encrypt(x), negated_generator_power(key, x), r)
    assert private.raw_decrypt(int(ours)) == 0


def test_fresh_r_per_comparison(keypair):
    public, _ = keypair
    key = PublicKey(public.n)
    draws = {int(blinding_factor(key, fast=False)) for _ in range(200)}
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
        c = blinded_comparison(key, encryptor.encrypt(x), negated_generator_power(key, y),
                               blinding_factor(key, fast=i % 2 == 0))
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
