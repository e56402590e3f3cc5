"""What only the ``ec`` scheme's group has: Ed25519's cofactor, small-order points and points off
the prime-order subgroup, and libsodium's refusal of the zero scalar.

The behaviour both exponential-ElGamal schemes share (matches, padding, fresh blinding, every
bad point refused with its check named) is tested for both in test_elgamal_schemes.py, with the bad
points of tests/schemecases.py.
"""
from __future__ import annotations

import pytest
from nacl.bindings import crypto_core_ed25519_sub, crypto_scalarmult_ed25519_base_noclamp, \
    crypto_scalarmult_ed25519_noclamp

from common.schemes import get_scheme
from common.schemes.ec import IDENTITY, EcScheme, point_check
from schemecases import BAD_POINTS, ED_G, NON_CANONICAL, ORDER_2, ORDER_4, ORDER_8, P_FIELD, times_8


def test_the_class_behind_the_name() -> None:
    assert isinstance(get_scheme("ec"), EcScheme)


def test_libsodium_refuses_the_zero_scalar() -> None:
    """Why ``base_mult`` and the comparison define ``0·G`` and ``r·identity`` themselves."""
    with pytest.raises(RuntimeError):
        crypto_scalarmult_ed25519_base_noclamp(bytes(32))
    with pytest.raises(RuntimeError):
        crypto_scalarmult_ed25519_noclamp(bytes(32), ED_G)


def test_bad_points_are_what_they_claim() -> None:
    assert int.from_bytes(NON_CANONICAL, "little") >= P_FIELD
    for point in (ORDER_2, ORDER_4, ORDER_8):
        assert times_8(point) == IDENTITY and point != IDENTITY
    mixed = BAD_POINTS["ec"][-1][0]
    assert times_8(mixed) != IDENTITY and crypto_core_ed25519_sub(mixed, ORDER_8) == ED_G
    for point, check in BAD_POINTS["ec"]:
        assert point_check(point) == check
