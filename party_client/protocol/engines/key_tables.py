"""The key-table engine: exact identifiers and the terms of fuzzy rules without blocking, each key table
sent as a padded cuckoo table.

docs/protocol.md, "Exact matching at scale" (after Pinkas, Schneider & Zohner,
"Scalable private set intersection based on OT extension", ACM TOPS 2018, and
Pinkas et al., "Efficient circuit-based PSI via cuckoo hashing", EUROCRYPT 2018):
the querier places its distinct keys, encoded under a fresh session secret ``s``,
in one padded cuckoo table per key table (the identifier, or each term of a fuzzy
rule), every bin and stash cell encrypted (``E(random)`` when empty).  The holder
compares each of its rows with the ``h`` bins its key hashes to and the stash, per
table; a row without a key in a table is compared against random bins with a random
value, so K sees the same number of comparisons for every row.
"""
from __future__ import annotations

import json
import logging
import os
import secrets

import numpy as np

from party_client.crypto.cuckoo import EMPTY, CuckooFailure, bin_count, padded_size, place
from party_client.crypto.encoding import bin_positions, encode_to, new_session_secret
from party_client.errors import PartyError
from party_client.matching.keys import QuerierKeys
from party_client.progress import tqdm_rows
from party_client.protocol.engines.interface import (CIPHERTEXTS_PER_RECORD, HolderContext, Matches, PreparedQuery,
                                                     Progress, QueryOptions, ReceivedQuery, Results, RoundPlan)
from proto import linkage_pb2 as pb

log = logging.getLogger("party")
CUCKOO_ATTEMPTS = 8

MAX_HASH_FUNCTIONS = 4      # a table's hash functions the holder accepts (the querier uses cuckoo.HASH_FUNCTIONS)
MAX_STASH = 8               # and stash slots


def prepare_tables(keys: QuerierKeys, options: QueryOptions, length: int,
                   progress: Progress) -> tuple[PreparedQuery, list[bytes | None]]:
    """Encode every table's keys under a fresh ``s`` and cuckoo-place them (one table per term)."""
    params = options.cuckoo
    for _ in range(CUCKOO_ATTEMPTS):
        secret = new_session_secret()
        specs, slots, encoded = [], [], []
        try:
            for t, table in enumerate(keys.tables):
                bins = bin_count(len(table.values), params)
                encodings = [encode_to(secret, table.name, v, length)
                             for v in progress(f"encode {table.name}", len(table.values))(table.values)]
                positions = [bin_positions(secret, x, bins, params.hash_functions) for x in encodings]
                placed, stashed = place(positions, bins, params.stash)
                cells = placed + stashed + [EMPTY] * (params.stash - len(stashed))
                slots.extend(None if k == EMPTY else (t, k) for k in cells)
                encoded.append(encodings)
                specs.append(pb.TableSpec(name=table.name, bins=bins, hash_functions=params.hash_functions,
                                          stash=params.stash))
            break
        except CuckooFailure:
            log.info("cuckoo insertion failed; drawing a fresh session secret")
    else:
        raise PartyError("cuckoo table construction failed repeatedly; raise the expansion factor")
    header = pb.QueryHeader(session_secret=secret, key_spec=keys.spec, tables=specs,
                            records_per_chunk=CIPHERTEXTS_PER_RECORD)
    flat = [None if slot is None else encoded[slot[0]][slot[1]] for slot in slots]
    return PreparedQuery(secret, header, slots, []), flat


def table_matches(prepared: PreparedQuery, results: Results) -> Matches:
    """Cuckoo tables and lookups: the zero comparisons' table positions name the querier's keys."""
    matches = []
    for attachment, indices in results:
        if any(i >= len(attachment.positions) for i in indices):
            raise PartyError("a result does not fit its attachment")
        hits = {prepared.slots[p] for p in (attachment.positions[i] for i in indices)
                if p < len(prepared.slots) and prepared.slots[p] is not None}
        if hits:
            matches.append((sorted(hits), [json.loads(v) for v in attachment.values]))
    return matches


class KeyTablesEngine:
    """Padded cuckoo tables, one per key table."""

    def declared(self, keys: QuerierKeys, options: QueryOptions) -> int:
        return sum(bin_count(len(t.values), options.cuckoo) + options.cuckoo.stash for t in keys.tables)

    def prepare(self, keys: QuerierKeys, options: QueryOptions, length: int, lookup_secret: bytes | None,
                progress: Progress) -> tuple[PreparedQuery, list[bytes | None]]:
        return prepare_tables(keys, options, length, progress)

    def planned_from_header(self, header: pb.QueryHeader) -> int | None:
        return sum(t.bins + t.stash for t in header.tables)

    def plan(self, context: HolderContext, query: ReceivedQuery) -> RoundPlan | str:
        header, keys = query.header, context.data.keys
        sizes = [t.bins + t.stash for t in header.tables]
        if any(t.hash_functions < 1 or t.bins < 1 for t in header.tables) or query.ciphertexts != sum(sizes):
            return "the cuckoo tables do not match their header"
        # each row is compared with h bins and the stash of every table: a header asking more would make
        # the holder (and K) work without bound for the querier
        if any(t.hash_functions > MAX_HASH_FUNCTIONS or t.stash > MAX_STASH for t in header.tables):
            return (f"a cuckoo table may have at most {MAX_HASH_FUNCTIONS} hash functions and {MAX_STASH} stash "
                    "slots (each row is compared with every one)")
        offsets = np.cumsum([0] + sizes)
        secret, length = header.session_secret, context.encoding_length
        order = context.shuffle(context.session_id, context.data.rows)
        units = []
        for row in tqdm_rows(order, "holder: encode rows", context.progress):
            comparisons = []
            for t, table in enumerate(header.tables):
                value = keys.values[t][row]
                if value is None:
                    x = os.urandom(length)
                    positions = [secrets.randbelow(table.bins) for _ in range(table.hash_functions)]
                else:
                    x = encode_to(secret, table.name, value, length)
                    positions = bin_positions(secret, x, table.bins, table.hash_functions)
                positions += list(range(table.bins, table.bins + table.stash))
                comparisons.extend((int(offsets[t]) + p, x) for p in positions)
            units.append((int(row), comparisons))
        return RoundPlan(units)

    def matches(self, prepared: PreparedQuery, results: Results, keys: QuerierKeys) -> Matches:
        return table_matches(prepared, results)

    def facts(self, keys: QuerierKeys, prepared: PreparedQuery, options: QueryOptions) -> dict:
        return {"tables": [t.name for t in prepared.header.tables],
                "cuckoo_bins": [int(t.bins) for t in prepared.header.tables],
                "hash_functions": options.cuckoo.hash_functions,
                "padded_to": [padded_size(len(t.values)) for t in keys.tables]}
