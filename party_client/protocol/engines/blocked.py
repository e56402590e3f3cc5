"""The blocked engine: fuzzy rules with blocking passes compare candidate pairs.

docs/protocol.md, "Fuzzy, multi-field matching" and "Blocking passes as padded bins"
(blocking after Christen, Data Matching, 2012, ch. 4; the per-pair rule after El Emam &
Arbuckle, Anonymizing Health Data, ch. 12): per pass, the querier sends padded bins
(:mod:`party_client.matching.blocking`), each entry a record's ciphertexts, one per
comparison slot of the pass plus its pass key (the gate), or a dummy's; the holder pairs
each of its rows with every entry of its key's two bins, in a keyed order, and compares
each group with every variant of its own key (a random value where it has none), so K
sees the same number of comparisons for every pair of a pass and the holder's view is
fixed by its own table; K applies the pass's pair rule, gated on the pass key, and
forwards only pairs the rule accepts.
"""
from __future__ import annotations

import bisect
import json
import os

import numpy as np
import pandas as pd

from party_client.crypto.encoding import encode_to
from party_client.errors import PartyError
from party_client.matching.blocking import GATE_DOMAIN, MAX_CAPACITY, holder_pass_pairs
from party_client.matching.keys import QuerierKeys
from party_client.matching.layout import PairLayout
from party_client.progress import bar
from party_client.protocol.engines.interface import (CIPHERTEXTS_PER_RECORD, HolderContext, Matches, PreparedQuery,
                                                     Progress, QueryOptions, ReceivedQuery, Results, RoundPlan, Unit)
from proto import linkage_pb2 as pb


GATE_ELSE = -(1 << 39)          # a pair whose gate disagrees can never reach a weighted threshold


def entry_domains(layout: PairLayout, pass_index: int) -> list[str]:
    """An entry's ciphertexts by encoding domain: the layout's slots, then the pass's gate key."""
    return layout.slot_domains + [f"{GATE_DOMAIN}{pass_index}"]


def prepare_blocked(keys: QuerierKeys, options: QueryOptions, length: int,
                    progress: Progress) -> tuple[PreparedQuery, list[bytes | None]]:
    """Per pass, its bins' entries in order: a record's encoded key per slot of the layout and its pass
    key (the gate), or for a dummy entry nothing (random ciphertexts, which never agree).

    A record missing a group's key gets a random ciphertext there (it never agrees).
    """
    blocked = keys.blocked
    encodings, specs = [], []
    entry_records, entry_passes, offsets = [], [], [0]
    cache: dict[tuple[str, str], bytes] = {}       # keys repeat across records: each (domain, key) encoded once
    for index, (planned, layout) in enumerate(zip(blocked.passes, blocked.layouts)):
        specs.append(pb.BlockingPassSpec(name=planned.name, buckets=planned.buckets, records=len(planned.records)))
        domains = layout.slot_domains
        gate = entry_domains(layout, index)[-1]
        entries = zip(planned.records.tolist(), planned.keys)
        for record, pass_key in progress(f"encode pass {planned.name}", len(planned.records))(entries):
            values = ([blocked.group_keys[domain][record] for domain in domains] if record >= 0 else
                      [""] * len(domains)) + [pass_key]
            for domain, value in zip(domains + [gate], values):
                if value and (domain, value) not in cache:
                    cache[domain, value] = encode_to(blocked.secret, f"pair/{domain}", value, length)
                encodings.append(cache[domain, value] if value else None)
            entry_records.append(record)
            entry_passes.append(index)
            offsets.append(len(encodings))
    header = pb.QueryHeader(session_secret=blocked.secret, key_spec=keys.spec, passes=specs,
                            pair_layout=";".join(layout.name for layout in blocked.layouts),
                            records_per_chunk=CIPHERTEXTS_PER_RECORD)
    return PreparedQuery(blocked.secret, header, [], [], [], entry_records, entry_passes, offsets), encodings


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
        if layout.weighted:            # the gate (the last group) agreed for every forwarded pair
            fired = [g for g in fired if g != len(layout.groups)]
        if not fired or max(fired) >= (len(layout.groups) if layout.weighted else len(term_ids)):
            raise PartyError("a result does not fit its attachment")
        record = prepared.entry_records[entry]
        if record < 0:
            raise PartyError("a result names a dummy entry")
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
               offsets: np.ndarray, encodings: np.ndarray, gates: dict[int, bytes], mix: np.random.Generator
               ) -> list[Unit]:
    """One pass's units, a pair (querier entry, holder row) each, in the given order: every comparison
    of the layout, at query position ``position + entry * width + offset``, then the gate (the row's
    pass key against the entry's last ciphertext).  For a weighted layout each group's comparisons are
    shuffled per pair, so K learns whether a level agreed, not which variant did."""
    pairs, width = len(entries), layout.comparisons
    columns = np.broadcast_to(np.arange(width), (pairs, width)).copy()
    if layout.weighted:
        start = 0
        for size in layout.group_sizes:
            if size > 1:
                columns[:, start:start + size] = start + np.argsort(mix.random((pairs, size)), axis=1)
            start += size
    chosen = row_index[:, None]
    base = position + entries * (layout.slots + 1)
    query_positions = np.concatenate([offsets[chosen, columns] + base[:, None], (base + layout.slots)[:, None]], axis=1)
    ours = np.concatenate([encodings[chosen, columns], np.array([gates[r] for r in rows.tolist()],
                                                                  dtype=object).reshape(pairs, 1)], axis=1)
    return [(row, list(zip(p, x))) for row, p, x in zip(rows.tolist(), query_positions.tolist(), ours.tolist())]


def gated_rule(layout: PairLayout) -> pb.PairRule:
    """K's rule for a pass: the layout's rule, and the gate (one more group, the last) must agree."""
    gate = len(layout.groups)
    sizes = layout.group_sizes + [1]
    if layout.weighted:
        fields, weights, otherwise, threshold = layout.weighted
        return pb.PairRule(group_sizes=sizes, weighted=pb.WeightedRule(
            group_fields=[*fields, len(otherwise)], group_weights=[*weights, 0], field_else=[*otherwise, GATE_ELSE],
            threshold=threshold))
    return pb.PairRule(group_sizes=sizes, terms=[pb.Conjunction(groups=[*term, gate]) for term in layout.terms])


class BlockedEngine:
    """Pairs per blocking pass (each holder row against its key's two bins), decided by the pass's
    gated pair rule at K."""

    def declared(self, keys: QuerierKeys, options: QueryOptions) -> int:
        return sum(len(p.records) * (layout.slots + 1) for p, layout in zip(keys.blocked.passes, keys.blocked.layouts))

    def prepare(self, keys: QuerierKeys, options: QueryOptions, length: int, lookup_secret: bytes | None,
                progress: Progress) -> tuple[PreparedQuery, list[bytes | None]]:
        return prepare_blocked(keys, options, length, progress)

    def planned_from_header(self, header: pb.QueryHeader) -> int | None:
        return None             # the plan needs the layouts, which are the holder's rules

    def plan(self, context: HolderContext, query: ReceivedQuery) -> RoundPlan | str:
        """Per pass, every row with a key against the ``2 * capacity`` entries of its key's two bins, in
        a keyed order: the pairs depend on our table and the header's public sizes alone."""
        header = query.header
        blocked = context.data.keys.blocked
        if blocked is None:
            return "the querier uses blocking passes, the holder's rules have none"
        layouts = blocked.layouts
        if header.pair_layout != ";".join(layout.name for layout in layouts) or len(header.passes) != len(layouts):
            return "the parties' blocking passes or comparison layouts differ"
        if query.blocks:
            return "a blocked query reveals no blocks: its passes are padded bins"
        if any(p.buckets < 2 or p.records % p.buckets or not 1 <= p.records // p.buckets <= MAX_CAPACITY
               for p in header.passes):
            return f"a blocking pass must have at least 2 bins of 1 to {MAX_CAPACITY} entries"
        if query.ciphertexts != sum(p.records * (layout.slots + 1) for p, layout in zip(header.passes, layouts)):
            return "the blocked entries do not match their header"
        secret, length = header.session_secret, context.encoding_length
        passes = []
        for index, spec in enumerate(header.passes):
            pairs = holder_pass_pairs(blocked, secret, index, spec.buckets, spec.records // spec.buckets)
            order = np.asarray(context.shuffle(f"{context.session_id}/{index}", np.arange(len(pairs))), dtype=np.int64)
            passes.append((pairs["entry"].to_numpy(dtype=np.int64)[order], pairs["row"].to_numpy(dtype=np.int64)[order]))
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
            domain = entry_domains(layout, index)[-1]
            pass_keys = {row: blocked.block_keys[index][row] for row in np.unique(rows).tolist()}
            encoded = {key: encode_to(secret, f"pair/{domain}", key, length) for key in set(pass_keys.values())}
            gates = {row: encoded[key] for row, key in pass_keys.items()}     # each distinct key encoded once
            start = len(plan.units)
            plan.units += pass_units(entries, rows, np.searchsorted(compared, rows), position, layout, offsets,
                                     encodings, gates, mix)
            plan.segments.append((start, len(plan.units), gated_rule(layout)))
            plan.pass_pairs.append(len(entries))
            position += spec.records * (layout.slots + 1)
        return plan

    def matches(self, prepared: PreparedQuery, results: Results, keys: QuerierKeys) -> Matches:
        return blocked_matches(prepared, results, keys)

    def facts(self, keys: QuerierKeys, prepared: PreparedQuery, options: QueryOptions) -> dict:
        """Per pass its bins and what they hold (the querier's own; the holder's pair count is never told)."""
        passes = [{"fields": p.name, "bins": p.buckets, "capacity": p.capacity, "records": p.placed,
                   "left_out": p.left_out, "left_out_records": p.left_out_records.tolist(), "terms": [keys.tables[t].name for t in layout.term_ids],
                   "layout": layout.kind, "comparisons_per_pair": layout.comparisons + 1}
                  for p, layout in zip(keys.blocked.passes, keys.blocked.layouts)]
        return {"passes": passes, "encryptions": prepared.encryptions}
