"""The comparison engines, each one way to lay out a round with both its halves (docs/protocol.md).

* :mod:`.interface` — the engine interface and the round model both halves share;
* :mod:`.choice` — the engine of a session mode and rule (the one place it is chosen);
* :mod:`.key_tables` — padded cuckoo tables per key table: exact identifiers and unblocked fuzzy terms;
* :mod:`.blocked` — fuzzy rules with blocking passes: candidate pairs per block;
* :mod:`.lookup` — a few identifiers against the holder's whole table, through keyed buckets.
"""
