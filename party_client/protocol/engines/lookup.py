"""The lookup engine: a few identifiers against the holder's whole table.

docs/protocol.md, "Lookup": each distinct key reveals only its keyed bucket
``PRF_s(X) mod B_L`` to the holder (the querier pads its entries with dummies in
random buckets), and the holder compares each entry with the rows of that bucket
only, so a lookup costs O(bucket) comparisons.  A lookup session keeps its secret
across rounds, so the holder's bucket index is built once per session.
"""
from __future__ import annotations

import secrets
from collections import defaultdict

from party_client.crypto.cuckoo import padded_size
from party_client.crypto.encoding import bucket, encode_to
from party_client.errors import PartyError
from party_client.matching.keys import QuerierKeys
from party_client.progress import bar
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
    encodings = [encode_to(secret, table.name, v, length) for v in table.values]
    entries = padded_size(len(encodings)) if len(encodings) > 16 else 1 << max(0, (len(encodings) - 1).bit_length())
    buckets = [bucket(secret, x, options.lookup_buckets) for x in encodings]
    buckets += [secrets.randbelow(options.lookup_buckets) for _ in range(entries - len(encodings))]
    slots = [(0, k) for k in range(len(encodings))] + [None] * (entries - len(encodings))
    header = pb.QueryHeader(session_secret=secret, key_spec=keys.spec, tables=[pb.TableSpec(name=table.name)],
                            lookup_buckets=options.lookup_buckets, entries=entries,
                            request_fast_blinding=options.fast_blinding, records_per_chunk=CIPHERTEXTS_PER_RECORD)
    return PreparedQuery(secret, header, slots, buckets), encodings + [None] * (entries - len(encodings))


def bucket_index(data: HolderData, secret: bytes, buckets: int,
                 length: int) -> tuple[dict[int, list[int]], dict[int, bytes]]:
    """The holder's rows per lookup bucket under this session's secret, and each row's encoding."""
    index: dict[int, list[int]] = defaultdict(list)
    encodings = {}
    name, values = data.keys.names[0], data.keys.values[0]
    with bar(len(data.rows), "holder: build lookup index", data.progress, unit="row") as progress:
        for row in data.rows:
            x = encode_to(secret, name, values[row], length)
            encodings[int(row)] = x
            index[bucket(secret, x, buckets)].append(int(row))
            progress.update()
    return index, encodings


class LookupEngine:
    """Bucketed entries against the holder's rows of the same bucket."""

    def declared(self, keys: QuerierKeys, options: QueryOptions) -> int:
        """A lookup session is reused, so it declares at least ``LOOKUP_DECLARED``."""
        return max(LOOKUP_DECLARED, padded_size(len(keys.tables[0].values)))

    def prepare(self, keys: QuerierKeys, options: QueryOptions, length: int, lookup_secret: bytes | None,
                progress: Progress) -> tuple[PreparedQuery, list[bytes | None]]:
        return prepare_lookup(keys, options, length, lookup_secret, progress)

    def plan(self, context: HolderContext, query: ReceivedQuery) -> RoundPlan | str:
        header, buckets = query.header, query.buckets
        if header.lookup_buckets < 1 or query.ciphertexts != header.entries or len(buckets) != header.entries:
            return "lookup entries do not match the header"
        if any(b >= header.lookup_buckets for b in buckets):
            return "a lookup bucket is out of range"
        secret, length = header.session_secret, context.encoding_length
        index, encodings = context.data.session_index(
            context.session_id, (header.lookup_buckets, length),
            lambda: bucket_index(context.data, secret, header.lookup_buckets, length))
        rank = context.rank(context.session_id)     # only the queried buckets' rows: O(bucket) per lookup
        return RoundPlan([(row, [(entry, encodings[row])]) for entry, b in enumerate(buckets)
                          for row in sorted(index.get(b, []), key=rank)])

    def matches(self, prepared: PreparedQuery, results: Results, keys: QuerierKeys) -> Matches:
        return table_matches(prepared, results)

    def facts(self, keys: QuerierKeys, prepared: PreparedQuery, options: QueryOptions) -> dict:
        return {}
