"""Blocking passes for fuzzy rules (docs/protocol.md, "Fuzzy, multi-field matching";
El Emam & Arbuckle, Anonymizing Health Data, ch. 12; Christen, Data Matching, 2012, ch. 4).

With ``[[blocking]]`` in a rules file the fuzzy join compares candidate pairs
instead of padded cuckoo tables: per pass, the querier sends each record's
block (the key itself, or ``PRF_s(key) mod B``) with one ciphertext per
comparison group, the holder pairs them with its rows of the same block and
K evaluates the rule per pair.  Candidate pairs are the union over passes, so
a typo in one key or the NDI +-1-year rule does not lose a match that another
pass catches.  A pass compares only the rule terms that force its block key
to agree (any pair such a term accepts is in that pass's block), plus terms
that no pass covers, so the union over passes finds exactly the rule's
matches among the candidates while each pair costs only the comparisons of
its pass's terms.

What travels in the clear is the querier's blocks, seen by the holder (who
also knows ``s``, so a keyed bucket protects only by merging keys).  Before
anything is sent, each pass's blocks are measured with
:func:`deid_core.risk.buckets.disclosed_key_risk` (population-based when the rules
give a population size, otherwise from the data; keyed buckets with
:func:`deid_core.risk.buckets.keyed_bucket_risk`) and a pass above
``[risk] max`` is refused; without ``buckets`` the pass takes the most keyed
buckets whose risk meets the threshold.  Passes are unlinkable for the holder:
each has its own shuffle and fresh ciphertexts, so each pass's risk is that of
its own key.
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass

import numpy as np
import pandas as pd

from deid_core.risk.buckets import disclosed_key_risk, keyed_bucket_risk
from party_client.crypto.encoding import block_prf, new_session_secret
from party_client.errors import PartyError
from party_client.matching.keys import BlockedHolder, PlannedPass

BUCKET_STEP = 2 ** 0.25          # the default bucket search tries B, B / 2^(1/4), ...


@dataclass(frozen=True)
class BlockingPass:
    """One ``[[blocking]]`` pass: its key's fields; keyed buckets (given, or the most the risk allows) or clear."""

    fields: tuple[str, ...]
    buckets: int | None = None
    clear: bool = False

    @property
    def name(self) -> str:
        return "+".join(self.fields)


@dataclass(frozen=True)
class RiskPolicy:
    """``[risk]``: the threshold for what travels in the clear, and the population behind the data."""

    max: float = 0.05
    population: int | None = None


def _bucket_values(secret: bytes, pass_index: int, keys: pd.Series) -> np.ndarray:
    """``PRF_s(key)`` (64 bits) per record, computed once per distinct key."""
    codes, uniques = pd.factorize(keys)
    prf = np.array([block_prf(secret, pass_index, str(k)) for k in uniques], dtype=np.uint64)
    return prf[codes]


def choose_buckets(prf: np.ndarray, policy: RiskPolicy) -> tuple[int, dict]:
    """The most keyed buckets whose blocks meet ``policy.max`` (and that risk); 1 bucket always does."""
    size = max(len(prf), policy.population or 0, 1)
    candidate = float(1 << int(size - 1).bit_length())
    while True:
        buckets = max(1, int(candidate))
        risk = keyed_bucket_risk(prf % np.uint64(buckets), buckets, policy.population)
        if risk["max"] <= policy.max or buckets == 1:
            return buckets, risk
        candidate /= BUCKET_STEP


def plan_passes(passes: list[BlockingPass], block_keys: list[pd.Series], policy: RiskPolicy,
                records: int) -> tuple[bytes, list[PlannedPass]]:
    """The querier's passes (``block_keys``: each pass's clear key per record, '' missing) under a fresh
    session secret, each risk-checked before anything is sent."""
    secret = new_session_secret()
    if policy.population is not None and policy.population < records:
        raise PartyError(f"[risk] population {policy.population} is smaller than the input's {records} records")
    planned = []
    for index, (blocking, keys) in enumerate(zip(passes, block_keys)):
        keys = keys[keys != ""]
        if blocking.clear:
            buckets, blocks = 0, keys.astype(str)
            risk = disclosed_key_risk(blocks.tolist(), policy.population)
            advice = "block on coarser fields or drop clear = true to hash the key into keyed buckets"
        else:
            prf = _bucket_values(secret, index, keys)
            if blocking.buckets is None:
                buckets, risk = choose_buckets(prf, policy)
            else:
                buckets = blocking.buckets
                risk = keyed_bucket_risk(prf % np.uint64(buckets), buckets, policy.population)
            blocks = pd.Series((prf % np.uint64(buckets)).astype(str), index=keys.index)
            advice = "use fewer buckets (or omit buckets to take the most the threshold allows)"
        if risk["max"] > policy.max:
            basis = (f"population {policy.population}" if policy.population else "the data as population")
            raise PartyError(f"blocking pass {index + 1} ({blocking.name}) refused: re-identification risk "
                             f"{risk['max']:.4f} of its {'clear keys' if blocking.clear else f'{buckets} buckets'} "
                             f"exceeds [risk] max {policy.max} ({basis}); {advice}")
        order = np.asarray(blocks.index)[np.argsort([secrets.randbits(64) for _ in range(len(blocks))])]
        planned.append(PlannedPass(blocking.name, buckets, order, blocks.loc[order].tolist(),
                                   {k: (round(v, 6) if isinstance(v, float) else v) for k, v in risk.items()}))
    return secret, planned


def holder_rows(block_keys: list[list[str | None]], rows: int) -> np.ndarray:
    """Whether each holder row has a block key in some pass (rows without one are never compared)."""
    present = np.zeros(rows, dtype=bool)
    for keys in block_keys:
        present |= np.array([k is not None for k in keys], dtype=bool)
    return present


def holder_pass_blocks(blocked: BlockedHolder, secret: bytes, pass_index: int, buckets: int) -> pd.Series:
    """The holder's block per row for one pass (clear key, or keyed bucket), rows without a key dropped."""
    keys = pd.Series(blocked.block_keys[pass_index], dtype=object).dropna()
    if buckets == 0:
        return keys.astype(str)
    prf = _bucket_values(secret, pass_index, keys)
    return pd.Series((prf % np.uint64(buckets)).astype(str), index=keys.index)


def candidate_pairs(query_blocks: pd.Series, holder_blocks: pd.Series) -> pd.DataFrame:
    """(entry, row) for every querier entry and holder row in the same block (a vectorized join)."""
    left = pd.DataFrame({"block": query_blocks.to_numpy(), "entry": query_blocks.index.to_numpy()})
    right = pd.DataFrame({"block": holder_blocks.to_numpy(), "row": holder_blocks.index.to_numpy()})
    return left.merge(right, on="block")[["entry", "row"]]

