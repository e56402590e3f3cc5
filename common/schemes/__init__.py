"""Comparison schemes behind one interface (:class:`Scheme`); :func:`get_scheme` names them.

The implementations are imported on first use (they import :mod:`common.schemes.base`, so a
top-level import here would be circular) and each is built once per process.
"""
from __future__ import annotations

import importlib
import threading

from common.schemes.base import InvalidCiphertext, KeyPair, Scheme

__all__ = ["InvalidCiphertext", "KeyPair", "Scheme", "get_scheme", "SCHEME_NAMES", "DEFAULT_SCHEME"]

# name -> "module:class" of its implementation
_IMPLEMENTATIONS: dict[str, str] = {
    "paillier": "common.schemes.paillier:PaillierScheme",
    "ec": "common.schemes.ec:EcScheme",
}
SCHEME_NAMES: tuple[str, ...] = tuple(_IMPLEMENTATIONS)
DEFAULT_SCHEME = "paillier"       # the scheme of every session until the parties can choose one
_SCHEMES: dict[str, Scheme] = {}
_LOCK = threading.Lock()


def get_scheme(name: str) -> Scheme:
    """The scheme called ``name``; ``ValueError`` naming the known schemes otherwise."""
    if name not in _IMPLEMENTATIONS:
        raise ValueError(f"unknown comparison scheme {name!r} (known: {', '.join(SCHEME_NAMES)})")
    with _LOCK:
        scheme = _SCHEMES.get(name)
        if scheme is None:
            module, cls = _IMPLEMENTATIONS[name].split(":")
            scheme = _SCHEMES[name] = getattr(importlib.import_module(module), cls)()
        return scheme
