"""The holder's batches: how a round's units are cut into batches."""
from __future__ import annotations

from party_client.protocol.batches import cut_batches
from party_client.protocol.engines.interface import RoundPlan
from proto import linkage_pb2 as pb


def test_batches_cover_every_unit_in_order_and_never_span_two_passes():
    units = [(row, [(row % 7, b"x")]) for row in range(1000)]
    rules = [pb.PairRule(group_sizes=[1]), pb.PairRule(group_sizes=[2])]
    plan = RoundPlan(units, segments=[(0, 300, rules[0]), (300, 1000, rules[1])])
    batches = cut_batches(plan, batch_rows=64)
    assert [seq for seq, _, _ in batches] == list(range(len(batches)))
    assert [unit for _, chunk, _ in batches for unit in chunk] == units
    assert all(len(chunk) <= 64 for _, chunk, _ in batches)
    first = [chunk for _, chunk, rule in batches if rule == rules[0]]
    assert sum(len(chunk) for chunk in first) == 300 and all(row < 300 for chunk in first for row, _ in chunk)
    unblocked = cut_batches(RoundPlan(units[:10]), batch_rows=64)
    assert [(seq, len(chunk), rule) for seq, chunk, rule in unblocked] == [(0, 10, None)]


def test_a_batch_holds_a_few_seconds_of_comparisons_whatever_a_row_compares():
    """Rows of a blocked pass compare hundreds of entries each: a batch of 256 of them under Paillier was
    minutes of one core's work, with no progress shown and no stop between batches."""
    from party_client.protocol.batches import BATCH_COMPARISONS
    units = [(row, [(p, b"x") for p in range(300 if row % 5 else 2000)]) for row in range(400)]
    batches = cut_batches(RoundPlan(units, segments=[(0, 400, pb.PairRule(group_sizes=[1]))]), 256, "paillier")
    assert [unit for _, chunk, _ in batches for unit in chunk] == units
    most = BATCH_COMPARISONS["paillier"]
    sizes = [sum(len(c) for _, c in chunk) for _, chunk, _ in batches]
    assert all(size <= most or len(chunk) == 1 for size, (_, chunk, _) in zip(sizes, batches))
    assert max(sizes) == 2000                              # a row above the bound is a batch of its own
    assert cut_batches(RoundPlan(units), 256, "paillier") == cut_batches(RoundPlan(units), 256, "paillier")
