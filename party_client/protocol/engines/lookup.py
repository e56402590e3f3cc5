"""The lookup engine: a few identifiers against the holder's whole table.

docs/protocol.md, "Lookup": each distinct key reveals only its keyed bucket
(:func:`party_client.crypto.encoding.lookup_buckets`) to the holder (the querier
pads its entries with dummies in random buckets), and the holder compares each
entry with the rows of that bucket only, so a lookup costs O(bucket)
comparisons.  The holder buckets all its rows for a new session in one
vectorized pass over digests computed once, keeps them while the session lives,
and encodes only the rows of the queried buckets.
"""
from __future__ import annotations

import secrets

import numpy as np

from party_client.crypto.cuckoo import padded_size
from party_client.crypto.encoding import MAX_LOOKUP_BUCKETS, encode_to, lookup_buckets, lookup_words
from party_client.errors import PartyError
from party_client.matching.keys import QuerierKeys
from party_client.protocol.engines.interface import (CIPHERTEXTS_PER_RECORD, HolderContext, HolderData, Matches,
                                                     PreparedQuery, Progress, QueryOptions, ReceivedQuery, Results,
                                                     RoundPlan)
from party_client.protocol.engines.key_tables import table_matches
from proto import linkage_pb2 as pb

LOOKUP_DECLARED = 1 << 16


def prepare_lookup(keys: QuerierKeys, options: QueryOptions, length: int, secret: bytes,
                   progress: Progress) -> tuple[PreparedQuery, list[bytes | None]]:
    """Bucketed entries: each distinct key reveals ``PRF_s(X) mod B_L``; padded with dummies."""
    if len(keys.tables) != 1:
        raise PartyError("a lookup compares one identifier; fuzzy rules need join or dedup")
    table = keys.tables[0]
    if options.lookup_buckets > MAX_LOOKUP_BUCKETS:
        raise PartyError(f"a lookup uses at most {MAX_LOOKUP_BUCKETS} buckets")
    encodings = [encode_to(secret, table.name, v, length) for v in table.values]
    entries = padded_size(len(encodings)) if len(encodings) > 16 else 1 << max(0, (len(encodings) - 1).bit_length())
    buckets = [int(b) for b in lookup_buckets(secret, lookup_words(table.name, table.values), options.lookup_buckets)]
    buckets += [secrets.randbelow(options.lookup_buckets) for _ in range(entries - len(encodings))]
    slots = [(0, k) for k in range(len(encodings))] + [None] * (entries - len(encodings))
    header = pb.QueryHeader(session_secret=secret, key_spec=keys.spec, tables=[pb.TableSpec(name=table.name)],
                            lookup_buckets=options.lookup_buckets, entries=entries,
                            records_per_chunk=CIPHERTEXTS_PER_RECORD)
    return PreparedQuery(secret, header, slots, buckets), encodings + [None] * (entries - len(encodings))


def bucket_index(data: HolderData, secret: bytes, buckets: int) -> np.ndarray:
    """The lookup bucket of each of the holder's keyed rows (``data.rows``) under this session's
    secret: one vectorized pass over the digests computed once per table."""
    return lookup_buckets(secret, data.lookup_words(), buckets)


def bucket_rows(table_buckets: np.ndarray, rows: np.ndarray, queried: list[int]) -> list[np.ndarray]:
    """The holder rows in each queried bucket (vectorized: one membership pass and a sort of the hits)."""
    wanted = np.asarray(queried, dtype=np.uint32)
    hits = np.flatnonzero(np.isin(table_buckets, wanted))
    hit_buckets = table_buckets[hits]
    order = np.argsort(hit_buckets, kind="stable")
    hits, hit_buckets = rows[hits[order]], hit_buckets[order]
    starts = np.searchsorted(hit_buckets, wanted, side="left")
    ends = np.searchsorted(hit_buckets, wanted, side="right")
    return [hits[start:end] for start, end in zip(starts, ends)]


class LookupEngine:
    """Bucketed entries against the holder's rows of the same bucket."""

    def declared(self, keys: QuerierKeys, options: QueryOptions) -> int:
        """A lookup session is reused, so it declares at least ``LOOKUP_DECLARED``."""
        return max(LOOKUP_DECLARED, padded_size(len(keys.tables[0].values)))

    def prepare(self, keys: QuerierKeys, options: QueryOptions, length: int, lookup_secret: bytes | None,
                progress: Progress) -> tuple[PreparedQuery, list[bytes | None]]:
        return prepare_lookup(keys, options, length, lookup_secret, progress)

    def planned_from_header(self, header: pb.QueryHeader) -> int | None:
        return None             # the plan needs the buckets, which come with the ciphertexts

    def plan(self, context: HolderContext, query: ReceivedQuery) -> RoundPlan | str:
        header, buckets = query.header, query.buckets
        if header.lookup_buckets < 1 or query.ciphertexts != header.entries or len(buckets) != header.entries:
            return "lookup entries do not match the header"
        if any(b >= header.lookup_buckets for b in buckets):
            return "a lookup bucket is out of range"
        secret, length, data = header.session_secret, context.encoding_length, context.data
        if header.lookup_buckets > MAX_LOOKUP_BUCKETS:
            return f"a lookup uses at most {MAX_LOOKUP_BUCKETS} buckets"
        table_buckets = data.session_index(context.session_id, ("lookup", secret, header.lookup_buckets),
                                           lambda: bucket_index(data, secret, header.lookup_buckets),
                                           context.expires_at)
        per_entry = bucket_rows(table_buckets, data.rows, buckets)
        # Only the queried buckets' rows are encoded and compared: O(bucket) per lookup.
        name, values, rank = data.keys.names[0], data.keys.values[0], context.rank(context.session_id)
        encodings = {int(row): encode_to(secret, name, values[row], length)
                     for row in np.unique(np.concatenate(per_entry))} if per_entry else {}
        return RoundPlan([(row, [(entry, encodings[row])]) for entry, rows in enumerate(per_entry)
                          for row in sorted((int(r) for r in rows), key=rank)])

    def matches(self, prepared: PreparedQuery, results: Results, keys: QuerierKeys) -> Matches:
        return table_matches(prepared, results)

    def facts(self, keys: QuerierKeys, prepared: PreparedQuery, options: QueryOptions) -> dict:
        return {}
