"""Party clients: encodings, cuckoo tables, blinded comparisons, CLI.

The friendly API is :class:`party_client.api.Party`.
"""
from party_client.api import LinkResult, Party
from party_client.errors import PartyError

__all__ = ["Party", "LinkResult", "PartyError"]
