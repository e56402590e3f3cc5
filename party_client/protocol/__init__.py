"""The linking protocol seen from each party (docs/protocol.md).

:mod:`~party_client.protocol.querier` and :mod:`~party_client.protocol.holder` drive a round;
each comparison engine of :mod:`~party_client.protocol.engines` (key tables, blocked, lookup) holds
both halves of its round behind :class:`~party_client.protocol.engines.interface.Engine`;
:mod:`~party_client.protocol.wire` frames the messages.  Every engine computes through :class:`common.schemes.Scheme`.
"""
