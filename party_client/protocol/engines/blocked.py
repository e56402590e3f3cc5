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

import numpy as np
import pandas as pd

from party_client.crypto.encoding import encode_to
from party_client.errors import PartyError
from party_client.matching.blocking import candidate_pairs, holder_pass_blocks
from party_client.matching.keys import QuerierKeys
from party_client.matching.layout import PairLayout
from party_client.progress import bar
from party_client.protocol.engines.interface import (CIPHERTEXTS_PER_RECORD, HolderContext, Matches, PreparedQuery,
                                                     Progress, QueryOptions, ReceivedQuery, Results, RoundPlan, Unit)
from proto import linkage_pb2 as pb


def prepare_blocked(keys: QuerierKeys, options: QueryOptions, length: int,
                    progress: Progress) -> tuple[PreparedQuery, list[bytes | None]]:
    """Per pass, each record's block and one encoded key per comparison group of the pass.

    A record missing a group's key gets a random ciphertext there (it never agrees).
    """
    blocked = keys.blocked
    encodings, blocks, specs = [], [], []
    entry_records, entry_passes, offsets = [], [], [0]
    cache: dict[tuple[str, str], bytes] = {}       # keys repeat across records: each (domain, key) encoded once
    for index, (planned, layout) in enumerate(zip(blocked.passes, blocked.layouts)):
        specs.append(pb.BlockingPassSpec(name=planned.name, buckets=planned.buckets, records=len(planned.records)))
        domains = layout.slot_domains
        for record in progress(f"encode pass {planned.name}", len(planned.records))(planned.records.tolist()):
            for domain in domains:
                value = blocked.group_keys[domain][record]
                if value and (domain, value) not in cache:
                    cache[domain, value] = encode_to(blocked.secret, f"pair/{domain}", value, length)
                encodings.append(cache[domain, value] if value else None)
            entry_records.append(record)
            entry_passes.append(index)
            offsets.append(len(encodings))
        blocks.extend(planned.blocks)
    header = pb.QueryHeader(session_secret=blocked.secret, key_spec=keys.spec, passes=specs,
                            pair_layout=";".join(layout.name for layout in blocked.layouts),
                            records_per_chunk=CIPHERTEXTS_PER_RECORD)
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


def row_comparisons(group_keys: dict[str, list[list]], layout: PairLayout, rows: np.ndarray, secret: bytes,
                    length: int, progress: bool | None) -> tuple[np.ndarray, np.ndarray]:
    """Per holder row of ``rows`` (sorted), the layout's comparisons in group order: the querier slot each
    names (its offset within an entry) and our encoding of the key it is compared with (a fresh random
    value where we have no key).  Keys repeat across rows (a state, a missing level's marker), so each
    (domain, key) is encoded once."""
    positions = layout.slot_positions()
    offsets = np.zeros((len(rows), layout.comparisons), dtype=np.int64)
    encodings = np.empty((len(rows), layout.comparisons), dtype=object)
    cache: dict[tuple[str, str], bytes] = {}
    column = 0
    with bar(layout.comparisons * len(rows), "holder: encode keys of candidate rows", progress, "key") as shown:
        for g, group in enumerate(layout.groups):
            for variant in group_keys[group.label]:
                for i, row in enumerate(rows.tolist()):
                    value = variant[row]
                    slot, key = value if isinstance(value, tuple) else (0, value)
                    offsets[i, column] = positions[g][slot]
                    if not key:
                        encodings[i, column] = os.urandom(length)
                        continue
                    domain = group.domains[slot]
                    if (domain, key) not in cache:
                        cache[domain, key] = encode_to(secret, f"pair/{domain}", key, length)
                    encodings[i, column] = cache[domain, key]
                shown.update(len(rows))
                column += 1
    return offsets, encodings


def pass_units(entries: np.ndarray, rows: np.ndarray, row_index: np.ndarray, position: int, layout: PairLayout,
               offsets: np.ndarray, encodings: np.ndarray, mix: np.random.Generator) -> list[Unit]:
    """One pass's units, a candidate pair (querier entry, holder row) each, in the given order: every
    comparison of the layout, at query position ``position + entry * slots + offset``.  For a weighted
    layout each group's comparisons are shuffled per pair, so K learns whether a level agreed, not which
    variant did."""
    pairs, width = len(entries), layout.comparisons
    columns = np.broadcast_to(np.arange(width), (pairs, width)).copy()
    if layout.weighted:
        start = 0
        for size in layout.group_sizes:
            if size > 1:
                columns[:, start:start + size] = start + np.argsort(mix.random((pairs, size)), axis=1)
            start += size
    chosen = row_index[:, None]
    query_positions = offsets[chosen, columns] + (position + entries * layout.slots)[:, None]
    ours = encodings[chosen, columns]
    return [(row, list(zip(p, x))) for row, p, x in zip(rows.tolist(), query_positions.tolist(), ours.tolist())]


class BlockedEngine:
    """Candidate pairs per blocking pass, decided by the pass's pair rule at K."""

    def declared(self, keys: QuerierKeys, options: QueryOptions) -> int:
        return sum(len(p.records) * layout.slots for p, layout in zip(keys.blocked.passes, keys.blocked.layouts))

    def prepare(self, keys: QuerierKeys, options: QueryOptions, length: int, lookup_secret: bytes | None,
                progress: Progress) -> tuple[PreparedQuery, list[bytes | None]]:
        return prepare_blocked(keys, options, length, progress)

    def planned_from_header(self, header: pb.QueryHeader) -> int | None:
        return None             # the plan needs the blocks, which come with the ciphertexts

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
        passes = []
        entry = 0
        for index, spec in enumerate(header.passes):
            entries_blocks = pd.Series(blocks[entry:entry + spec.records], index=range(spec.records))
            pairs = candidate_pairs(entries_blocks, holder_pass_blocks(blocked, secret, index, spec.buckets))
            order = np.asarray(context.shuffle(f"{context.session_id}/{index}", np.arange(len(pairs))), dtype=np.int64)
            passes.append((pairs["entry"].to_numpy(dtype=np.int64)[order], pairs["row"].to_numpy(dtype=np.int64)[order]))
            entry += spec.records
        tables = {}              # per layout (passes over comparison levels share one): rows and their comparisons
        for layout in {id(layout): layout for layout in layouts}.values():
            compared = np.unique(np.concatenate([np.zeros(0, dtype=np.int64)] + [
                rows for (_, rows), other in zip(passes, layouts) if other is layout]))
            tables[id(layout)] = (compared, *row_comparisons(blocked.group_keys, layout, compared, secret, length,
                                                             context.progress))
        mix = np.random.default_rng(int.from_bytes(os.urandom(16), "big"))
        plan = RoundPlan([], segments=[])
        position = 0
        for index, (spec, layout, (entries, rows)) in enumerate(zip(header.passes, layouts, passes)):
            compared, offsets, encodings = tables[id(layout)]
            start = len(plan.units)
            plan.units += pass_units(entries, rows, np.searchsorted(compared, rows), position, layout, offsets,
                                     encodings, mix)
            if layout.weighted:
                fields, weights, otherwise, threshold = layout.weighted
                rule = pb.PairRule(group_sizes=layout.group_sizes, weighted=pb.WeightedRule(
                    group_fields=fields, group_weights=weights, field_else=otherwise, threshold=threshold))
            else:
                rule = pb.PairRule(group_sizes=layout.group_sizes,
                                   terms=[pb.Conjunction(groups=list(term)) for term in layout.terms])
            plan.segments.append((start, len(plan.units), rule))
            plan.pass_pairs.append(len(entries))
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
