"""The linking protocol seen from each party (docs/protocol.md).

:mod:`~party_client.protocol.querier` and :mod:`~party_client.protocol.holder` drive a round;
each comparison engine (:mod:`~party_client.protocol.tables`, :mod:`~party_client.protocol.lookup`,
:mod:`~party_client.protocol.blocked`) holds both halves of its round behind
:class:`~party_client.protocol.engine.Engine`; :mod:`~party_client.protocol.wire` frames the
messages.  Every engine computes through :class:`common.schemes.Scheme`.
"""
