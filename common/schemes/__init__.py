"""Comparison schemes behind one interface (:class:`Scheme`), in a registry keyed by name.

:func:`get_scheme` is the one place a scheme's name becomes its object, and the one place an empty
name means :data:`DEFAULT_SCHEME`.  Inside a process, options, contexts and reports carry the
:class:`Scheme` object; its name (``scheme.name``) crosses only process boundaries: the proto's
``scheme`` fields, task arguments of worker processes and Dask, command-line flags and files.
A new scheme is one implementation of :class:`Scheme` plus one line in :data:`_IMPLEMENTATIONS`.
A scheme no longer offered stays named in :data:`RETIRED`, so that a session or file naming it is
refused with :class:`RetiredScheme` (what to use instead), not as an unknown name.

The implementations are imported on first use (they import :mod:`common.schemes.base`, so a
top-level import here would be circular) and each is built once per process.
"""
from __future__ import annotations

import importlib
import threading

from common.schemes.base import InvalidCiphertext, KeyPair, Scheme

__all__ = ["InvalidCiphertext", "KeyPair", "Scheme", "get_scheme", "all_schemes", "SCHEME_NAMES",
           "DEFAULT_SCHEME", "RETIRED", "RetiredScheme", "parse_scheme_list"]

# name -> "module:class" of its implementation
_IMPLEMENTATIONS: dict[str, str] = {
    "paillier": "common.schemes.paillier:PaillierScheme",
    "ristretto": "common.schemes.ristretto:RistrettoScheme",
}
SCHEME_NAMES: tuple[str, ...] = tuple(_IMPLEMENTATIONS)
DEFAULT_SCHEME = "paillier"       # the scheme of a session that names none (an empty ``scheme`` field)
# name -> the scheme that replaces it; ``ec``, exponential ElGamal on Ed25519's prime-order subgroup, was
# ``ristretto``'s protocol on a group with a cofactor, at twice its cost (docs/protocol.md, "Comparison schemes")
RETIRED: dict[str, str] = {"ec": "ristretto"}
_SCHEMES: dict[str, Scheme] = {}
_LOCK = threading.Lock()


class RetiredScheme(ValueError):
    """A scheme no longer offered (:data:`RETIRED`), named by a session or a file from before."""

    def __init__(self, name: str) -> None:
        self.name, self.replacement = name, RETIRED[name]
        super().__init__(f"the comparison scheme {name!r} is no longer offered: use {self.replacement}")

    def of_session(self, session_id: str) -> str:
        """The one line that refuses a session of this scheme, saying how to go on."""
        return (f"session {session_id} uses the comparison scheme {self.name!r}, no longer offered: close it "
                f"(party sessions close {session_id}) and link again with --scheme {self.replacement}")


def get_scheme(name: str | None = None) -> Scheme:
    """The scheme called ``name``; empty (or ``None``) is :data:`DEFAULT_SCHEME`; :class:`RetiredScheme`
    for a retired name, ``ValueError`` naming the known schemes for any other."""
    name = name or DEFAULT_SCHEME
    if name in RETIRED:
        raise RetiredScheme(name)
    if name not in _IMPLEMENTATIONS:
        raise ValueError(f"unknown comparison scheme {name!r} (known: {', '.join(SCHEME_NAMES)})")
    with _LOCK:
        scheme = _SCHEMES.get(name)
        if scheme is None:
            module, cls = _IMPLEMENTATIONS[name].split(":")
            scheme = _SCHEMES[name] = getattr(importlib.import_module(module), cls)()
        return scheme


def all_schemes() -> tuple[Scheme, ...]:
    """Every known scheme, in registry order (what a key holder offers and a holder serves by default)."""
    return tuple(get_scheme(name) for name in SCHEME_NAMES)


def parse_scheme_list(text: str) -> tuple[Scheme, ...]:
    """A comma-separated list of scheme names (``--schemes paillier,ristretto``), each known, at least one."""
    names = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if not names:
        raise ValueError(f"name at least one comparison scheme (known: {', '.join(SCHEME_NAMES)})")
    return tuple(get_scheme(name) for name in names)
