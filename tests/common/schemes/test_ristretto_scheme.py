"""What only the ``ristretto`` scheme's group has: a prime-order group whose encoding is its validation
(RFC 9496, section 4.3.1), with the one gap of the libsodium inside ``rbcl`` closed by the scheme.

The behaviour both exponential-ElGamal schemes share (matches, padding, fresh blinding, every
bad encoding refused with its check named in validation, zero test and comparison) is tested for
both in test_elgamal_schemes.py, with the bad encodings of tests/schemecases.py.
"""
from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest
import rbcl

from common.schemes import get_scheme
from common.schemes.ristretto import IDENTITY, ORDER, RistrettoScheme, point_check, random_scalars
from schemecases import BAD_POINTS, HIGH_BIT, NEGATIVE, NOT_DECODABLE, NON_CANONICAL, P_FIELD, RIST_G

SCHEME = get_scheme("ristretto")
KEY = SCHEME.generate_key(256)


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
    for point, check in BAD_POINTS["ristretto"]:
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
