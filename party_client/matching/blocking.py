"""Blocking passes for fuzzy rules, sent as padded bins (docs/protocol.md, "Blocking passes as padded
bins"; blocking after El Emam & Arbuckle, Anonymizing Health Data, ch. 12, and Christen, Data Matching,
2012, ch. 4; the table after Pagh & Rodler, "Cuckoo hashing", 2004).

With ``[[blocking]]`` in a rules file (or ``--preset``) the fuzzy join compares candidate pairs instead
of one padded cuckoo table per rule term.  The holder knows the session secret ``s``, so any block the
querier reveals, keyed or not, the holder can compute for each of its own rows: a revealed block that
holds one of its rows names that row as a member of the querier's table.  So nothing about blocks is
revealed.  Per pass the querier sends a table of ``B`` bins of ``capacity`` entries each, every entry
one record's ciphertexts or a dummy's (random ciphertexts, which never agree):

* a record whose pass key is ``k`` sits in one of the two bins ``PRF_s("block" || pass || k)`` picks
  (cuckoo placement over the ``2 * capacity`` entries of both bins);
* the holder compares each of its rows having a key with all ``2 * capacity`` entries of its key's two
  bins, whatever they hold, so its work and everything it sees are fixed by its own table and the
  public ``B`` and ``capacity``;
* each entry carries one more ciphertext, the pass key itself, and each pair one more comparison (the
  *gate*): K's pair rule accepts a pair only when the gate agrees, so the pairs compared are exactly
  the pairs sharing the pass key, as in the clear.

``B`` follows the padded count of the pass's records (the exact join's step of sqrt 2 and 2.4 entries
per record).  A key can hold at most ``2 * capacity`` of the querier's records (two bins): the records
after that many (in table order) are left out of the pass, and so is a record the cuckoo walk cannot
place (both its bins full of records that cannot move: keys of 2 * capacity records pin both their
bins; 40 of FEBRL 4's 5,000 records in its date-of-birth pass at capacity 1).  The querier's report
names them; the other passes may still find them.  Unless a rules file fixes it, ``capacity`` is the
smallest power of two that leaves at most ``LEFT_OUT_SHARE`` of the pass's records out (at most
``DEFAULT_CAPACITY_LIMIT``; a rules file up to ``MAX_CAPACITY``): the holder learns it, i.e. roughly how often the querier's commonest keys repeat,
never which keys.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from party_client.crypto.cuckoo import EMPTY, CuckooParams, place
from party_client.crypto.cuckoo import bin_count as cuckoo_entries
from party_client.crypto.encoding import block_prf, new_session_secret
from party_client.errors import PartyError
from party_client.matching.keys import BlockedHolder, PlannedPass

CHOICES = 2                      # bins per key: the holder compares 2 * capacity entries per row and pass
MAX_CAPACITY = 64                # bounds the holder's work per row: 2 * 64 entries per pass
# The default capacity leaves at most this share of a pass's records out: at 1 % FEBRL 4's date-of-birth
# pass left 40-47 records out at capacity 1 and one true pair of 5,000 was lost in some runs; at 0.5 % it
# takes capacity 2 and loses none (20 % more holder comparisons).
LEFT_OUT_SHARE = 0.005
# ... and grows to at most this: a key that more than 2 * 4 of the querier's records share (a common first
# and last name) is weak evidence of its own, and its records are left to the other passes rather than
# making every holder row compare 2 * 64 entries (the "slipped" set's first+last pass: 128 entries per row
# at 64, 8 at 4, and the same F1 with the records each left out; benchmarks/README.md, "Bins for common
# names").  A rules file's ``capacity`` may still be up to MAX_CAPACITY.
DEFAULT_CAPACITY_LIMIT = 4
GATE_DOMAIN = "#block"           # encoding domain of a pass's gate key (no field name starts with '#')


@dataclass(frozen=True)
class BlockingPass:
    """One ``[[blocking]]`` pass: its key's fields, and the bin capacity (None: chosen from the data)."""

    fields: tuple[str, ...]
    capacity: int | None = None

    @property
    def name(self) -> str:
        return "+".join(self.fields)


def refuse_risk_table(document: dict, where: str) -> None:
    """A rules file's ``[risk]`` rated the blocks a pass revealed; passes reveal none now, so it is
    refused rather than left to say something untrue."""
    if "risk" in document:
        raise PartyError(f"{where}: [risk] is no longer accepted: blocking passes are sent as padded bins that "
                         f"reveal no block to the holder, so there is no risk of theirs to rate (docs/protocol.md, "
                         f"\"Blocking passes as padded bins\"); remove the [risk] table")


def parse_pass_options(entry: dict, where: str) -> int | None:
    """A ``[[blocking]]`` entry's ``capacity`` (None: chosen from the data); ``buckets`` and ``clear``,
    which revealed the querier's blocks, are refused with what replaced them."""
    for gone in ("buckets", "clear"):
        if gone in entry:
            raise PartyError(f"{where}: [[blocking]] {gone} is no longer accepted: every pass is sent as padded "
                             f"bins that tell the holder nothing about the querier's blocks (docs/protocol.md, "
                             f"\"Blocking passes as padded bins\"); remove it (capacity = N fixes the bin capacity)")
    capacity = entry.get("capacity")
    if capacity is not None and (not isinstance(capacity, int) or isinstance(capacity, bool)
                                 or not 1 <= capacity <= MAX_CAPACITY):
        raise PartyError(f"{where}: [[blocking]] capacity must be an integer from 1 to {MAX_CAPACITY}")
    return capacity


def kept_in_pass(keys: pd.Series, capacity: int) -> pd.Series:
    """Whether each record takes part in a pass: it has a key, and is among the first ``2 * capacity``
    records (in table order) with that key."""
    keyed = keys != ""
    return keyed & (keys.groupby(keys).cumcount() < CHOICES * capacity)


def bin_count(records: int, capacity: int) -> int:
    """Bins of a pass holding ``records`` records: the exact join's cuckoo-table entries for as many keys
    (2.4 per padded record) in bins of ``capacity``, at least two bins."""
    return max(2, math.ceil(cuckoo_entries(records, CuckooParams()) / capacity))


def key_bins(secret: bytes, pass_index: int, keys: pd.Series, bins: int) -> np.ndarray:
    """The two distinct bins of each key (rows: one per key of ``keys``), from ``PRF_s`` computed once
    per distinct key."""
    codes, uniques = pd.factorize(keys)
    prf = np.array([block_prf(secret, pass_index, str(k)) for k in uniques], dtype=np.uint64).reshape(-1, 2)
    first = prf[:, 0] % np.uint64(bins)
    second = (first + np.uint64(1) + prf[:, 1] % np.uint64(bins - 1)) % np.uint64(bins)
    return np.stack([first, second], axis=1).astype(np.int64)[codes]


def bin_entries(bins_of: np.ndarray, capacity: int) -> np.ndarray:
    """The entries (bin * capacity + slot) of each row's two bins: shape (rows, 2 * capacity)."""
    slots = np.arange(capacity, dtype=np.int64)
    return (bins_of[:, :, None] * capacity + slots).reshape(len(bins_of), CHOICES * capacity)


def _placed_pass(secret: bytes, index: int, blocking: BlockingPass, keys: pd.Series) -> PlannedPass:
    """One pass placed in bins: at the rules' capacity, or at the smallest power of two that leaves at
    most ``LEFT_OUT_SHARE`` of the keyed records out (at most ``DEFAULT_CAPACITY_LIMIT``)."""
    keyed = int((keys != "").sum())
    capacity = blocking.capacity or 1
    while True:
        kept = kept_in_pass(keys, capacity)
        chosen = keys[kept]
        bins = bin_count(len(chosen), capacity)
        entries = bin_entries(key_bins(secret, index, chosen, bins), capacity)
        table, unplaced = place(entries.tolist(), bins * capacity, stash=len(entries))
        records = np.asarray(chosen.index, dtype=np.int64)
        left_out = np.union1d(np.flatnonzero(((keys != "") & ~kept).to_numpy()), records[unplaced])
        if blocking.capacity or capacity >= DEFAULT_CAPACITY_LIMIT or len(left_out) <= LEFT_OUT_SHARE * keyed:
            break
        capacity *= 2
    slots = np.asarray(table, dtype=np.int64)
    entry_records = np.where(slots == EMPTY, EMPTY, records[np.maximum(slots, 0)]) if len(records) else slots
    entry_keys = np.where(entry_records == EMPTY, "", keys.to_numpy(dtype=object)[np.maximum(entry_records, 0)])
    return PlannedPass(blocking.name, bins, capacity, entry_records, entry_keys.tolist(), left_out.astype(np.int64))


def plan_passes(passes: list[BlockingPass], block_keys: list[pd.Series],
                secret: bytes | None = None) -> tuple[bytes, list[PlannedPass]]:
    """The querier's passes (``block_keys``: each pass's clear key per record, '' missing) as padded
    bins under a fresh session secret (or ``secret``: a dry-run's fixed one, so that it repeats)."""
    secret = new_session_secret() if secret is None else secret
    return secret, [_placed_pass(secret, index, blocking, keys.reset_index(drop=True))
                    for index, (blocking, keys) in enumerate(zip(passes, block_keys))]


def holder_rows(block_keys: list[list[str | None]], rows: int) -> np.ndarray:
    """Whether each holder row has a block key in some pass (rows without one are never compared)."""
    present = np.zeros(rows, dtype=bool)
    for keys in block_keys:
        present |= np.array([k is not None for k in keys], dtype=bool)
    return present


def holder_pass_pairs(blocked: BlockedHolder, secret: bytes, pass_index: int, bins: int,
                      capacity: int) -> pd.DataFrame:
    """(entry, row) for each of our rows with a key in the pass and each entry of its key's two bins:
    ``2 * capacity`` per row, whatever the entries hold."""
    keys = pd.Series(blocked.block_keys[pass_index], dtype=object).dropna()
    entries = bin_entries(key_bins(secret, pass_index, keys.astype(str), bins), capacity)
    rows = np.repeat(np.asarray(keys.index, dtype=np.int64), entries.shape[1])
    return pd.DataFrame({"entry": entries.reshape(-1), "row": rows})
