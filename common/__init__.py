"""Small helpers that the key holder, the party client and the de-identification core all use.

The dependency rule: ``keyholder`` and ``party_client`` share only ``proto/`` and ``common/``;
``common`` imports none of the three.
"""
