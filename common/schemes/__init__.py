"""Comparison schemes behind one interface (:class:`Scheme`); :func:`get_scheme` names them.

The implementations are imported on first use (they import :mod:`common.schemes.base`, so a
top-level import here would be circular) and each is built once per process.
"""
from __future__ import annotations

import importlib
import threading

from common.schemes.base import InvalidCiphertext, KeyPair, Scheme

__all__ = ["InvalidCiphertext", "KeyPair", "Scheme", "get_scheme", "SCHEME_NAMES", "DEFAULT_SCHEME",
           "scheme_name", "parse_scheme_list"]

# name -> "module:class" of its implementation
_IMPLEMENTATIONS: dict[str, str] = {
    "paillier": "common.schemes.paillier:PaillierScheme",
    "ec": "common.schemes.ec:EcScheme",
}
SCHEME_NAMES: tuple[str, ...] = tuple(_IMPLEMENTATIONS)
DEFAULT_SCHEME = "paillier"       # the scheme of a session that names none (an empty ``scheme`` field)
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


def scheme_name(name: str | None) -> str:
    """The scheme a request names: empty means :data:`DEFAULT_SCHEME`; ``ValueError`` for an unknown name."""
    name = name or DEFAULT_SCHEME
    if name not in _IMPLEMENTATIONS:
        raise ValueError(f"unknown comparison scheme {name!r} (known: {', '.join(SCHEME_NAMES)})")
    return name


def parse_scheme_list(text: str) -> tuple[str, ...]:
    """A comma-separated list of scheme names (``--schemes paillier,ec``), each known, at least one."""
    names = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if not names:
        raise ValueError(f"name at least one comparison scheme (known: {', '.join(SCHEME_NAMES)})")
    for name in names:
        scheme_name(name)
    return names
