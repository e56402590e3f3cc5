"""Comparison schemes behind one interface (:class:`Scheme`); :func:`get_scheme` names them."""
from __future__ import annotations

from common.schemes.base import InvalidCiphertext, KeyPair, Scheme

__all__ = ["InvalidCiphertext", "KeyPair", "Scheme", "get_scheme", "SCHEME_NAMES"]

SCHEME_NAMES: tuple[str, ...] = ()


def get_scheme(name: str) -> Scheme:
    """The scheme called ``name``; ``ValueError`` naming the known schemes otherwise."""
    raise ValueError(f"unknown comparison scheme {name!r}")
