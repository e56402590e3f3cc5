"""Party clients: encodings, cuckoo tables, blinded comparisons, CLI.

The friendly API is :class:`party_client.api.Party`.  ``Party``, ``LinkResult`` and ``PartyError`` are
imported on first use (PEP 562 module ``__getattr__``), so that a command which needs neither pandas
nor the protocol (``party init``, ``party --help``) starts without importing them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from party_client.api import LinkResult, Party
    from party_client.errors import PartyError

__all__ = ["Party", "LinkResult", "PartyError"]


def __getattr__(name: str):
    if name in ("Party", "LinkResult"):
        from party_client import api
        return getattr(api, name)
    if name == "PartyError":
        from party_client.errors import PartyError
        return PartyError
    raise AttributeError(f"module 'party_client' has no attribute {name!r}")
