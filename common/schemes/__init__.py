"""Comparison schemes behind one interface (:class:`Scheme`); :func:`get_scheme` names them."""
from __future__ import annotations

from importlib import import_module

from common.schemes.base import InvalidCiphertext, KeyPair, Scheme

__all__ = ["InvalidCiphertext", "KeyPair", "Scheme", "get_scheme", "SCHEME_NAMES"]

_SCHEMES: dict[str, str] = {
    "ec": "common.schemes.ec:EcScheme",
}
"""Scheme name -> ``module:class``, imported on first use."""

SCHEME_NAMES: tuple[str, ...] = tuple(_SCHEMES)


def get_scheme(name: str) -> Scheme:
    """The scheme called ``name``; ``ValueError`` naming the known schemes otherwise."""
    if name not in _SCHEMES:
        raise ValueError(f"unknown comparison scheme {name!r} (known: {', '.join(SCHEME_NAMES)})")
    module, cls = _SCHEMES[name].split(":")
    return getattr(import_module(module), cls)()
