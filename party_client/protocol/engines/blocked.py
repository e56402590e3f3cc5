"""The blocked engine: fuzzy rules with blocking passes compare candidate pairs.

docs/protocol.md, "Fuzzy, multi-field matching" (blocking after Christen, Data
Matching, 2012, ch. 4; the per-pair rule after El Emam & Arbuckle, Anonymizing
Health Data, ch. 12): per pass, the querier sends each record's block with one
ciphertext per comparison group of the pass (a random ciphertext where it has no
key); the holder pairs every entry with its rows of the same block, in a keyed
order, and compares each group with every variant of its own key (a random value
where it has none), so K sees the same number of comparisons for every pair of a
pass; K applies the pass's pair rule and forwards only pairs the rule accepts.
"""
from __future__ import annotations

import bisect
import json
import os
import random

import numpy as np
import pandas as pd

from party_client.crypto.encoding import encode_to
from party_client.errors import PartyError
from party_client.matching.blocking import candidate_pairs, holder_pass_blocks
from party_client.matching.keys import QuerierKeys
from party_client.progress import tqdm_rows
from party_client.protocol.engines.interface import (CIPHERTEXTS_PER_RECORD, HolderContext, Matches, PreparedQuery,
                                                     Progress, QueryOptions, ReceivedQuery, Results, RoundPlan)
from proto import linkage_pb2 as pb


def prepare_blocked(keys: QuerierKeys, options: QueryOptions, length: int,
                    progress: Progress) -> tuple[PreparedQuery, list[bytes | None]]:
    """Per pass, each record's block and one encoded key per comparison group of the pass.

    A record missing a group's key gets a random ciphertext there (it never agrees).
    """
    blocked = keys.blocked
    encodings, blocks, specs = [], [], []
    entry_records, entry_passes, offsets = [], [], [0]
    cache: dict[tuple[str, int], bytes | None] = {}
    for index, (planned, layout) in enumerate(zip(blocked.passes, blocked.layouts)):
        specs.append(pb.BlockingPassSpec(name=planned.name, buckets=planned.buckets, records=len(planned.records)))
        domains = layout.slot_domains
        for record in progress(f"encode pass {planned.name}", len(planned.records))(planned.records.tolist()):
            for domain in domains:
                if (domain, record) not in cache:
                    value = blocked.group_keys[domain][record]
                    cache[domain, record] = (encode_to(blocked.secret, f"pair/{domain}", value, length)
                                             if value else None)
                encodings.append(cache[domain, record])
            entry_records.append(record)
            entry_passes.append(index)
            offsets.append(len(encodings))
        blocks.extend(planned.blocks)
    header = pb.QueryHeader(session_secret=blocked.secret, key_spec=keys.spec, passes=specs,
                            pair_layout=";".join(layout.name for layout in blocked.layouts),
                            request_fast_blinding=options.fast_blinding, records_per_chunk=CIPHERTEXTS_PER_RECORD)
    return PreparedQuery(blocked.secret, header, [], [], blocks, entry_records, entry_passes, offsets), encodings


def blocked_matches(prepared: PreparedQuery, results: Results, keys: QuerierKeys) -> Matches:
    """Each result is a pair (its first position names our entry) and its pass's terms that held.

    The same holder row found in several passes (same row tag) is one match.
    """
    layouts = keys.blocked.layouts
    by_row: dict[bytes, tuple[set, list]] = {}
    offsets = prepared.entry_offsets
    for attachment, fired in results:
        position = attachment.positions[0] if attachment.positions else offsets[-1]
        entry = bisect.bisect_right(offsets, position) - 1
        if not 0 <= entry < len(prepared.entry_records):
            raise PartyError("a result does not fit its attachment")
        layout = layouts[prepared.entry_passes[entry]]
        term_ids = layout.term_ids
        if not fired or max(fired) >= (len(layout.groups) if layout.weighted else len(term_ids)):
            raise PartyError("a result does not fit its attachment")
        record = prepared.entry_records[entry]
        hits, _ = by_row.setdefault(attachment.row_tag, (set(), [json.loads(v) for v in attachment.values]))
        if layout.weighted:          # one table; the fired groups are the pair's levels
            hits.add((term_ids[0], record))
            prepared.decided[attachment.row_tag, record] = [layout.groups[g].label for g in fired]
        else:
            hits.update((term_ids[t], record) for t in fired)
    position = {tag: i for i, tag in enumerate(by_row)}
    prepared.decided = {(position[tag], record): labels for (tag, record), labels in prepared.decided.items()}
    return [(sorted(hits), values) for hits, values in by_row.values()]


class BlockedEngine:
    """Candidate pairs per blocking pass, decided by the pass's pair rule at K."""

    def declared(self, keys: QuerierKeys, options: QueryOptions) -> int:
        return sum(len(p.records) * layout.slots for p, layout in zip(keys.blocked.passes, keys.blocked.layouts))

    def prepare(self, keys: QuerierKeys, options: QueryOptions, length: int, lookup_secret: bytes | None,
                progress: Progress) -> tuple[PreparedQuery, list[bytes | None]]:
        return prepare_blocked(keys, options, length, progress)

    def plan(self, context: HolderContext, query: ReceivedQuery) -> RoundPlan | str:
        """Per pass, the candidate pairs (our rows in each querier entry's block), in a keyed order."""
        header, blocks = query.header, query.blocks
        blocked = context.data.keys.blocked
        if blocked is None:
            return "the querier uses blocking passes, the holder's rules have none"
        layouts = blocked.layouts
        if header.pair_layout != ";".join(layout.name for layout in layouts) or len(header.passes) != len(layouts):
            return "the parties' blocking passes or comparison layouts differ"
        widths = [layout.slots for layout in layouts]
        if len(blocks) != sum(p.records for p in header.passes) or \
                query.ciphertexts != sum(p.records * w for p, w in zip(header.passes, widths)):
            return "the blocked entries do not match their header"
        if any((p.buckets == 0) != clear for p, clear in zip(header.passes, blocked.clear)):
            return "a blocking pass is bucketed on one side and clear on the other"
        secret, length = header.session_secret, context.encoding_length
        encoded: dict[tuple[str, int], list[tuple[int, bytes]]] = {}

        def variants(group, row: int) -> list[tuple[int, bytes]]:
            """Our (querier slot, encoding) of one group for one row: every variant (random where we have
            no key; a level group's variants name the querier slot they are compared with, and are
            encoded in that slot's domain)."""
            if (group.label, row) not in encoded:
                pairs = [v[row] if isinstance(v[row], tuple) else (0, v[row]) for v in blocked.group_keys[group.label]]
                encoded[group.label, row] = [(slot, encode_to(secret, f"pair/{group.domains[slot]}", key, length)
                                              if key else os.urandom(length)) for slot, key in pairs]
            return encoded[group.label, row]
        mix = random.Random(os.urandom(16))
        plan = RoundPlan([], segments=[])
        entry, position = 0, 0
        for index, (spec, layout) in enumerate(zip(header.passes, layouts)):
            entries_blocks = pd.Series(blocks[entry:entry + spec.records], index=range(spec.records))
            pairs = candidate_pairs(entries_blocks, holder_pass_blocks(blocked, secret, index, spec.buckets))
            order = context.shuffle(f"{context.session_id}/{index}", np.arange(len(pairs)))
            entries, rows = pairs["entry"].to_numpy(), pairs["row"].to_numpy()
            positions = layout.slot_positions()
            start = len(plan.units)
            for i in tqdm_rows(order, f"holder: encode pairs of pass {index + 1}", context.progress):
                row, base = int(rows[i]), position + int(entries[i]) * layout.slots
                comparisons = []
                for g, group_spec in enumerate(layout.groups):
                    group = [(base + positions[g][slot], x) for slot, x in variants(group_spec, row)]
                    if layout.weighted:           # K sees which groups agree, not which variant did
                        mix.shuffle(group)
                    comparisons += group
                plan.units.append((row, comparisons))
            if layout.weighted:
                fields, weights, otherwise, threshold = layout.weighted
                rule = pb.PairRule(group_sizes=layout.group_sizes, weighted=pb.WeightedRule(
                    group_fields=fields, group_weights=weights, field_else=otherwise, threshold=threshold))
            else:
                rule = pb.PairRule(group_sizes=layout.group_sizes,
                                   terms=[pb.Conjunction(groups=list(term)) for term in layout.terms])
            plan.segments.append((start, len(plan.units), rule))
            plan.pass_pairs.append(len(pairs))
            entry += spec.records
            position += spec.records * layout.slots
        return plan

    def matches(self, prepared: PreparedQuery, results: Results, keys: QuerierKeys) -> Matches:
        return blocked_matches(prepared, results, keys)

    def facts(self, keys: QuerierKeys, prepared: PreparedQuery, options: QueryOptions) -> dict:
        """Candidate pairs: the holder's count, never told to the querier."""
        passes = [{"fields": p.name, "buckets": p.buckets or "clear", "records": len(p.records), "risk": p.risk,
                   "terms": [keys.tables[t].name for t in layout.term_ids], "layout": layout.kind,
                   "comparisons_per_pair": layout.comparisons}
                  for p, layout in zip(keys.blocked.passes, keys.blocked.layouts)]
        return {"passes": passes, "encryptions": prepared.encryptions}
