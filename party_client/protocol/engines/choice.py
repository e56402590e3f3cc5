"""The comparison engines by session mode and rule: the one place a round's engine is chosen."""
from __future__ import annotations

from party_client.protocol.engines.blocked import BlockedEngine
from party_client.protocol.engines.interface import Engine
from party_client.protocol.engines.key_tables import KeyTablesEngine
from party_client.protocol.engines.lookup import LookupEngine
from proto import linkage_pb2 as pb

_TABLES, _LOOKUP, _BLOCKED = KeyTablesEngine(), LookupEngine(), BlockedEngine()

# (session mode, the rule has blocking passes) -> engine
ENGINES: dict[tuple[int, bool], Engine] = {
    (pb.JOIN, False): _TABLES, (pb.DEDUP, False): _TABLES,
    (pb.JOIN, True): _BLOCKED, (pb.DEDUP, True): _BLOCKED,
    (pb.LOOKUP, False): _LOOKUP, (pb.LOOKUP, True): _LOOKUP,
}


def engine_for(mode: int, blocked: bool) -> Engine:
    """The engine of a session mode (``pb.JOIN``, ...) for a rule with (``blocked``) or without blocking passes."""
    return ENGINES[mode, bool(blocked)]
