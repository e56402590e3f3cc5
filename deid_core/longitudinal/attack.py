"""Risk by simulated attack on longitudinal data (El Emam et al. 2012, "Empirical Evaluation", Attack 1).

The adversary picks a target person, knows their level-1 QIs and, for every
level-2 QI h, ``p_h`` of the target's distinct values (drawn without
replacement; ``p_h`` from :mod:`.power` or fixed), and not which values came
from the same claim (the paper's inexact-knowledge assumption). A released
person *matches* when they have the target's level-1 values and their
released values of each QI contain every known value. The adversary picks
one matching person at random: the success probability is ``1/m`` when the
target is among the m matching persons and 0 otherwise (e.g. their known
claims were truncated away). Rather than drawing the random pick (and the
paper's Bernoulli draw of "is the target in the data set" with probability
``sampling_fraction``), the expected success ``sampling_fraction / m`` is
averaged: same expectation, lower variance.

``background`` is the data the knowledge is drawn from (the paper's D1: all
claims, generalized exactly as the release; default: the release itself);
``released`` is what is matched against (D2, e.g. after truncation).
``background_values`` optionally names, per level-2 QI, a background column
holding the *original* values: the adversary then knows p distinct original
values and matches on their released (generalized) form, which is what makes
"generalizing never raises the risk" hold draw for draw (same seed).

Monte Carlo: ``iterations`` targets drawn uniformly with replacement, normal
95% interval of the mean; ``census=True`` takes every background person as
the target once instead (one draw of knowledge each: a per-person risk, e.g.
to choose whom to suppress). ``exact=True`` enumerates every combination of
``p_h`` values of every person (small data) and averages exactly.

Vectorized: every (person, value) pair of the release is one sorted int64 key
(membership = ``searchsorted``); the level-1 class is one more "value"; the
candidates of a query are the persons of its class holding its rarest known
value (a posting list), then filtered on all known values at once.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import DeidInputError
from .integer_codes import factorize, joint_codes, require_columns
from .persons import person_level1

#: Upper bound on candidate checks held in memory at once.
_CHUNK = 4_000_000
#: Largest persons x values bitset used for membership (bits); above it, binary search on sorted keys.
_BITSET_BITS = 2**31


@dataclass(frozen=True)
class AttackResult:
    """Outcome of :func:`simulate_attack`."""

    average_risk: float
    high_risk_proportion: float
    ci95: tuple[float, float]
    threshold: float
    persons: int
    iterations: int
    exact: bool
    per_target: pd.DataFrame  # MC: one row per iteration; exact: one row per person

    def summary(self) -> dict:
        return {"average_risk": self.average_risk, "high_risk_proportion": self.high_risk_proportion,
                "ci95": list(self.ci95), "threshold": self.threshold, "persons": self.persons,
                "iterations": self.iterations, "exact": self.exact}


@dataclass(frozen=True)
class _Release:
    keys: np.ndarray      # sorted unique person * V + vid
    bits: np.ndarray | None  # the same keys as a bitset (None when too large)
    post_key: np.ndarray  # sorted unique class * V + vid
    post_start: np.ndarray
    post_count: np.ndarray
    post_person: np.ndarray  # persons, grouped by post_key
    n_values: int


def _index_release(rperson: np.ndarray, vid: np.ndarray, rclass: np.ndarray, V: int) -> _Release:
    keys = np.sort(rperson * V + vid)
    keys = keys[np.append(True, keys[1:] != keys[:-1])]  # sort-based unique (faster than hashing here)
    bits = None
    if (int(rperson.max()) + 1) * V <= _BITSET_BITS:
        bits = np.zeros((int(rperson.max()) + 1) * V // 8 + 1, dtype=np.uint8)
        byte, first = np.unique(keys >> 3, return_index=True)  # keys are sorted: bytes are too
        bits[byte] = np.add.reduceat((1 << (keys & 7)).astype(np.uint8), first)
    person = keys // V
    value = keys % V
    ck = rclass[person] * V + value
    order = np.argsort(ck, kind="stable")
    ck_sorted = ck[order]
    post_key, post_start, post_count = np.unique(ck_sorted, return_index=True, return_counts=True)
    return _Release(keys, bits, post_key, post_start, post_count, person[order], V)


def _contains(rel: _Release, key: np.ndarray) -> np.ndarray:
    """Whether each (person * V + value) key is in the release."""
    if rel.bits is not None:
        return ((rel.bits[key >> 3] >> (key & 7).astype(np.uint8)) & 1).astype(bool)
    j = np.minimum(np.searchsorted(rel.keys, key), len(rel.keys) - 1)
    return rel.keys[j] == key


def _match(rel: _Release, q_of: np.ndarray, vid: np.ndarray, qclass: np.ndarray, qtarget: np.ndarray,
           limit: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For queries given as (query, value) pairs sorted by query: matching persons m and target-matched flag.

    ``limit``: candidates are checked in growing rounds and a query stops once ``limit`` matches are
    found (m is then ``limit``, a lower bound); without it every candidate is checked.
    """
    nq = len(qclass)
    V = rel.n_values
    m = np.zeros(nq, dtype=np.int64)
    qlen = np.bincount(q_of, minlength=nq)
    # the target matches when it holds every known value (its class is one of them)
    tq = qtarget[q_of]
    held = (tq >= 0) & _contains(rel, np.maximum(tq, 0) * V + vid)
    hit = (qtarget >= 0) & (np.bincount(q_of, weights=held, minlength=nq) == qlen)
    # posting-list length of each (query class, value); absent -> 0 (no person can match)
    pk = qclass[q_of] * V + vid
    pos = np.searchsorted(rel.post_key, pk)
    pos_c = np.minimum(pos, len(rel.post_key) - 1)
    found = rel.post_key[pos_c] == pk
    length = np.where(found, rel.post_count[pos_c], 0)
    # rarest value of each query (pairs are sorted by query)
    order = np.lexsort((length, q_of))
    first = np.ones(len(order), dtype=bool)
    first[1:] = q_of[order][1:] != q_of[order][:-1]
    best = order[first]
    bq = q_of[best]
    blen = length[best]
    bstart = np.where(found[best], rel.post_start[pos_c[best]], 0)
    qstart = np.searchsorted(q_of, np.arange(nq))
    done = np.zeros(len(bq), dtype=np.int64)
    active = np.flatnonzero(blen > 0)
    step = 2 * limit if limit else None
    while active.size:
        take = blen[active] - done[active]
        if step is not None:
            take = np.minimum(take, step)
        m += _count(rel, bq[active], bstart[active] + done[active], take, qlen, qstart, vid, nq)
        done[active] += take
        if limit is None:
            break
        active = active[(done[active] < blen[active]) & (m[bq[active]] < limit)]
        step *= 2
    if limit is not None:
        m = np.minimum(m, limit)
    return m, hit


def _count(rel: _Release, bq: np.ndarray, bstart: np.ndarray, blen: np.ndarray, qlen: np.ndarray,
           qstart: np.ndarray, vid: np.ndarray, nq: int) -> np.ndarray:
    """Per query: how many of the ``blen`` candidates from ``bstart`` in its posting list hold every known value."""
    V = rel.n_values
    m = np.zeros(nq, dtype=np.int64)
    # chunk queries so candidates x known values stays bounded
    cum = np.cumsum(blen * qlen[bq])
    lo = 0
    while lo < len(bq):
        done = int(cum[lo - 1]) if lo else 0
        hi = max(int(np.searchsorted(cum, done + _CHUNK, side="right")), lo + 1)
        cq, clen, cst = bq[lo:hi], blen[lo:hi], bstart[lo:hi]
        lo = hi
        tot = int(clen.sum())
        if tot == 0:
            continue
        cand_q = np.repeat(cq, clen)
        off = np.arange(tot) - np.repeat(np.cumsum(clen) - clen, clen)
        cand_p = rel.post_person[np.repeat(cst, clen) + off]
        # expand each candidate by its query's known values
        k = qlen[cand_q]
        ktot = int(k.sum())
        cid = np.repeat(np.arange(tot), k)
        koff = np.arange(ktot) - np.repeat(np.cumsum(k) - k, k)
        v = vid[qstart[cand_q][cid] + koff]
        present = _contains(rel, cand_p[cid] * V + v)
        ok = np.bincount(cid, weights=present, minlength=tot) == k
        m += np.bincount(cand_q[ok], minlength=nq)
    return m


def _units(bg: pd.DataFrame, bperson: np.ndarray, column: str, draw_column: str, vid: np.ndarray,
           n_persons: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct draw units per background person: (start, count) per person and each unit's released value id."""
    ucode, uniq = factorize(bg[draw_column])
    U = max(len(uniq), 1)
    keys, first = np.unique(bperson * U + ucode, return_index=True)
    owner = keys // U
    count = np.bincount(owner, minlength=n_persons)
    start = np.cumsum(count) - count
    return start, count, vid[first]


def _power_matrix(power: int | pd.DataFrame, pids: pd.Index, level2: Sequence[str]) -> np.ndarray:
    if isinstance(power, pd.DataFrame):
        missing = [h for h in level2 if h not in power.columns]
        if missing:
            raise DeidInputError(f"adversary power has no column for level-2 QI {missing[0]!r}")
        p = power.reindex(pids)[list(level2)]
        if p.isna().any().any():
            raise DeidInputError(f"adversary power is missing for person {p.index[p.isna().any(axis=1)][0]!r}")
        mat = p.to_numpy(dtype=np.int64)
    else:
        mat = np.full((len(pids), len(level2)), int(power), dtype=np.int64)
    if (mat < 1).any():
        raise DeidInputError(f"adversary power {int(mat.min())} is below 1")
    return mat


def simulate_attack(released: pd.DataFrame, *, person: str, level1: Sequence[str], level2: Sequence[str],
                    power: int | pd.DataFrame, background: pd.DataFrame | None = None,
                    background_values: Mapping[str, str] | None = None, iterations: int = 10_000, seed: int = 0,
                    threshold: float = 0.05, exact: bool = False, sampling_fraction: float = 1.0,
                    confidence: float = 0.95, max_combinations: int = 2_000_000, census: bool = False,
                    count_limit: int | None = None) -> AttackResult:
    """Average re-identification risk under a simulated attack (see module docstring).

    ``census=True``: every background person is the target once (``iterations`` is ignored), so
    ``per_target`` has one row per person in background order.

    ``count_limit``: matching persons are counted up to this many (Monte Carlo and census); a larger
    matching set counts as ``count_limit``, so its risk ``sampling_fraction / count_limit`` is an upper
    bound, and ``risk > threshold`` is still exact when ``count_limit > sampling_fraction / threshold``
    (LOLA's acceptance test needs only that flag; stopping early saves scanning huge matching sets).

    ``power``: one int for every person and QI, or a frame indexed by the
    background person ids with one column per level-2 QI (as returned by
    :func:`.power.adversary_power`).
    """
    bg = released if background is None else background
    draw = dict(background_values or {})
    if iterations < 1:
        raise DeidInputError(f"iterations {iterations} is below 1")
    if count_limit is not None and count_limit < 1:
        raise DeidInputError(f"count limit {count_limit} is below 1")
    if not 0 < sampling_fraction <= 1:
        raise DeidInputError(f"sampling fraction {sampling_fraction} is outside (0, 1]")
    for frame, role in ((released, "released"), (bg, "background")):
        require_columns(frame, [person], f"{role} person")
        require_columns(frame, list(level2), f"{role} level-2")
    require_columns(bg, list(draw.values()), "background original-value")
    unknown = set(draw) - set(level2)
    if unknown:
        raise DeidInputError(f"background_values names {sorted(unknown)[0]!r}, which is not a level-2 QI")
    same = background is None
    rtab, rperson = person_level1(released, person, level1)
    btab, bperson = (rtab, rperson) if same else person_level1(bg, person, level1)
    rpids, bpids = rtab.index, btab.index
    P, B = len(rpids), len(bpids)
    pmat = _power_matrix(power, bpids, level2)
    # level-1 classes coded jointly over both tables; each class is one more "value" known to the adversary
    both = rtab[list(level1)] if same else pd.concat([btab[list(level1)], rtab[list(level1)]], ignore_index=True)
    cls = joint_codes(both, list(level1))
    bclass, rclass = (cls, cls) if same else (cls[:B], cls[B:])
    n_class = int(cls.max()) + 1
    # level-2 values coded jointly; value ids after the class ids
    r_vids, b_vids, offset = [], [], n_class
    for h in level2:
        codes, uniq = factorize(released[h] if same else pd.concat([bg[h], released[h]], ignore_index=True))
        codes = codes + offset
        b_vids.append(codes if same else codes[: len(bg)])
        r_vids.append(codes if same else codes[len(bg):])
        offset += len(uniq)
    V = offset
    rel = _index_release(np.concatenate([rperson] * len(level2) + [np.arange(P)]),
                         np.concatenate(r_vids + [rclass]), rclass, V)
    target_r = np.arange(P) if same else pd.Index(rpids).get_indexer(bpids)  # -1: target not in the release
    units = [_units(bg, bperson, h, draw.get(h, h), b_vids[i], B) for i, h in enumerate(level2)]

    if exact:
        return _exact(units, pmat, bclass, target_r, rel, bpids, person, P, threshold, sampling_fraction,
                      max_combinations)

    rng = np.random.default_rng(seed)
    targets = np.arange(B) if census else rng.integers(0, B, size=iterations)
    iterations = len(targets)
    q_parts, v_parts = [np.arange(iterations)], [bclass[targets]]
    for i, (start, count, uvid) in enumerate(units):
        # p of each target's d distinct values without replacement: the p smallest of d uniform keys
        d = count[targets]
        p = np.minimum(pmat[targets, i], d)
        q = np.repeat(np.arange(iterations), d)
        within = np.arange(len(q)) - np.repeat(np.cumsum(d) - d, d)  # 0..d-1 inside each query
        pos = np.repeat(start[targets], d) + within
        order = np.lexsort((rng.random(len(q)), q))  # q stays sorted: `within` is the rank after sorting
        keep = order[within < p[q]]
        q_parts.append(q[keep])
        v_parts.append(uvid[pos[keep]])
    risk, above = _risks(np.concatenate(q_parts), np.concatenate(v_parts), bclass[targets], target_r[targets],
                         rel, threshold, sampling_fraction, count_limit)
    mean = float(risk.mean())
    half = float(NormalDist().inv_cdf(0.5 + confidence / 2) * risk.std(ddof=1) / math.sqrt(iterations)) if iterations > 1 else 0.0
    per = pd.DataFrame({person: np.asarray(bpids)[targets], "risk": risk})
    return AttackResult(mean, float(above.mean()), (max(0.0, mean - half), min(1.0, mean + half)), threshold,
                        P, iterations, False, per)


def _risks(q_of: np.ndarray, vid: np.ndarray, qclass: np.ndarray, qtarget: np.ndarray, rel: _Release,
           threshold: float, fraction: float, limit: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    key = np.unique(q_of * rel.n_values + vid)  # distinct known values, sorted by query
    m, hit = _match(rel, key // rel.n_values, key % rel.n_values, qclass, qtarget, limit)
    risk = np.where(hit & (m > 0), fraction / np.maximum(m, 1), 0.0)
    return risk, risk > threshold


def _exact(units, pmat, bclass, target_r, rel, bpids, person, P, threshold, fraction, max_combinations) -> AttackResult:
    """Every combination of p_h distinct values per QI for every person, each equally likely."""
    counts = np.stack([u[1] for u in units], axis=1) if units else np.zeros((len(bpids), 0), dtype=np.int64)
    p = np.minimum(pmat, counts)
    n_comb = [math.prod(math.comb(int(d), int(k)) for d, k in zip(counts[b], p[b])) for b in range(len(bpids))]
    total = sum(n_comb)
    if total > max_combinations:
        raise DeidInputError(f"the exact attack needs {total} combinations (limit {max_combinations}); "
                             "use the Monte-Carlo attack")
    q_parts, v_parts, owner = [], [], []
    q = 0
    for b in range(len(bpids)):  # enumeration is inherently per person
        per_qi = [itertools.combinations(u[2][u[0][b]:u[0][b] + u[1][b]].tolist(), int(p[b, i]))
                  for i, u in enumerate(units)]
        for combo in itertools.product(*per_qi):
            vals = [int(bclass[b])] + [v for part in combo for v in part]
            q_parts.append(np.full(len(vals), q))
            v_parts.append(vals)
            owner.append(b)
            q += 1
    owner_a = np.asarray(owner)
    risk, above = _risks(np.concatenate(q_parts), np.concatenate([np.asarray(v) for v in v_parts]),
                         bclass[owner_a], target_r[owner_a], rel, threshold, fraction)
    w = 1.0 / np.asarray(n_comb, dtype=float)[owner_a]
    person_risk = np.bincount(owner_a, weights=risk * w, minlength=len(bpids))
    person_above = np.bincount(owner_a, weights=above * w, minlength=len(bpids))
    avg = float(person_risk.mean())
    per = pd.DataFrame({"risk": person_risk, "high_risk_probability": person_above},
                       index=pd.Index(bpids, name=person))
    return AttackResult(avg, float(person_above.mean()), (avg, avg), threshold, P, len(bpids), True, per)
