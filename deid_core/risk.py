"""Re-identification risk: equivalence classes and the measures of docs/deid.md, "Measures".

Everything works on integer codes: each QI column is encoded once as leaf
indices of its hierarchy (:class:`EncodedTable`); generalizing to a level is a
fancy-index, and an equivalence class (EC) is a distinct tuple of level codes,
found by packing the codes into one int64 key and ``pd.factorize``. So a
lattice node (one level per QI) costs one pass over small int arrays
(the policy search can call :meth:`EncodedTable.evaluate` many times).

Missing values (explicit choice, never dropped):

* ``missing="own_class"`` (default): a missing value is one more value of
  that QI; records missing in the same QIs and equal elsewhere form an EC.
* ``missing="match_any"``: a missing value matches any value of that QI. The
  size of record r's class is then the number of records compatible with it
  (equal on every QI where both are non-missing). Compatibility is not
  transitive, so these are matching-set sizes, not a partition; they are
  computed per pair of missingness patterns (cost: patterns² passes).

Records whose QIs are all missing (e.g. suppressed records) carry no QI
information: they are excluded from the classes and reported as
``fully_missing_records`` (ARX likewise leaves suppressed records out).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import DeidInputError
from .io import require_records
from .hierarchy import Hierarchy, build_hierarchy, distinct_values, flat_hierarchy
from .spec import MISSING_CHOICES, ReleaseSpec, Spec

# ----------------------------------------------------------------- attack model

#: Pr(breach): ~27% of providers have a reportable breach per year (El Emam & Arbuckle, ch. 2, "T3: Data Breach").
PR_BREACH = 0.27
#: Threshold ranges and metric per attack (El Emam & Arbuckle, ch. 2, "Risk Thresholds", Table 2-1).
THRESHOLD_TABLE = {
    "T1": {"metric": "average", "range": (0.1, 0.05), "probability": "Pr(attempt)"},
    "T2": {"metric": "average", "range": (0.1, 0.05), "probability": "Pr(acquaintance)"},
    "T3": {"metric": "average", "range": (0.1, 0.05), "probability": "Pr(breach)"},
    "T4": {"metric": "max", "range": (0.09, 0.05), "probability": "1 (public)"},
}


def pr_acquaintance(prevalence: float, friends: float = 150.0, divisor: float = 2.0) -> float:
    """``1 − (1 − ρ)^(friends/divisor)`` (Dunbar number 150, El Emam & Arbuckle ch. 2, "T2: Inadvertent
    Attempt at Re-Identification"; 0.027 -> 0.8716, ch. 3, "Threat Modeling")."""
    if not 0 <= prevalence <= 1:
        raise DeidInputError(f"prevalence {prevalence} outside [0, 1]")
    return 1.0 - (1.0 - prevalence) ** (friends / divisor)


def overall_risk(pr_t: float, conditional: float) -> float:
    """``Pr(re-id, T) = Pr(T) × Pr(re-id | T)`` (El Emam & Arbuckle, ch. 2, "Measuring Risk Under Plausible Attacks")."""
    return pr_t * conditional


def conditional_threshold(threshold: float, pr_t: float) -> float:
    """Threshold on ``Pr(re-id | T)`` so that the overall risk meets ``threshold`` (El Emam & Arbuckle ch. 2, "Choosing Thresholds":
    0.1/0.3 = 0.33), capped at 1."""
    if pr_t <= 0:
        return 1.0
    return min(1.0, threshold / pr_t)


#: Relative tolerance of threshold comparisons (see :func:`meets`).
THRESHOLD_TOLERANCE = 0.015


def meets(risk: float, threshold: float) -> bool:
    """``risk ≤ threshold × (1 + 0.015)``.

    Thresholds are quoted to two digits and the book treats 1/11 = 0.0909 as
    meeting 0.09 and 1/3 as meeting 0.33 (El Emam & Arbuckle, ch. 2, "Probability Metrics" and "Risk Thresholds"); a 1.5 %
    relative tolerance encodes exactly that, while 1/19 = 0.0526 still fails
    0.05 (5 % over).
    """
    return risk <= threshold * (1.0 + THRESHOLD_TOLERANCE) + 1e-15


def k_for_threshold(threshold: float) -> int:
    """Smallest k with ``meets(1/k, threshold)`` = ⌈1/(1.015·t)⌉.

    0.5→2, 0.33→3, 0.2→5, 0.1→10, 0.09→11, 0.05→20 — i.e. ⌈1/t⌉ except that
    1/11 counts as meeting 0.09 and 1/3 as meeting 0.33.
    """
    if not 0 < threshold <= 1:
        raise DeidInputError(f"threshold {threshold} is outside (0, 1]")
    k = max(1, math.floor(1 / threshold) - 1)
    while not meets(1 / k, threshold):
        k += 1
    return k


def attack_probabilities(release: ReleaseSpec) -> dict[str, float]:
    """Pr(T) for the attacks that apply: T4 for public releases, else T1–T3 (those with parameters)."""
    if release.type == "public":
        return {"T4": 1.0}
    out: dict[str, float] = {"T3": PR_BREACH}
    if release.pr_attempt is not None:
        out["T1"] = release.pr_attempt
    if release.prevalence is not None:
        out["T2"] = pr_acquaintance(release.prevalence, release.friends, release.friends_divisor)
    return dict(sorted(out.items()))


# ------------------------------------------------------------- class sizes

def pack_keys(codes: Sequence[np.ndarray], cards: Sequence[int]) -> np.ndarray:
    """One int64 key per row from per-column codes (``-1`` = missing) by mixed radix.

    When the radix product would overflow int64 the running key is
    re-factorized to consecutive integers first.
    """
    n = len(codes[0]) if codes else 0
    key = np.zeros(n, dtype=np.int64)
    span = 1
    for c, card in zip(codes, cards):
        base = card + 1
        if span * base >= 2**62:
            key, uniq = pd.factorize(key)
            key = key.astype(np.int64)
            span = max(len(uniq), 1)
        key = key * base + (c.astype(np.int64) + 1)
        span *= base
    return key


def sizes_from_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(class index per row, class sizes)."""
    inv, uniq = pd.factorize(keys, sort=False)
    return inv, np.bincount(inv, minlength=len(uniq)).astype(np.int64)


def match_any_sizes(codes: Sequence[np.ndarray], cards: Sequence[int]) -> np.ndarray:
    """Per-record number of compatible records when a missing value matches anything."""
    q = len(codes)
    n = len(codes[0])
    miss = np.zeros(n, dtype=np.int64)
    for i, c in enumerate(codes):
        miss |= (c < 0).astype(np.int64) << i
    patterns = np.unique(miss)
    f = np.zeros(n, dtype=np.int64)
    rows = {p: np.flatnonzero(miss == p) for p in patterns}
    for p in patterns:
        for p2 in patterns:
            keep = [i for i in range(q) if not ((p >> i) & 1 or (p2 >> i) & 1)]
            if not keep:
                f[rows[p]] += len(rows[p2])
                continue
            k_src = pack_keys([codes[i][rows[p2]] for i in keep], [cards[i] for i in keep])
            k_dst = pack_keys([codes[i][rows[p]] for i in keep], [cards[i] for i in keep])
            vc = pd.Series(k_src).value_counts()
            f[rows[p]] += vc.reindex(k_dst).fillna(0).to_numpy(dtype=np.int64)
    return f


# ------------------------------------------------------------- encoded tables

@dataclass
class EncodedPopulation:
    """Aggregate population counts (Benitez, Loukides & Malin 2010 §2.3): leaf codes per QI + ``count``."""

    codes: dict[str, np.ndarray]
    counts: np.ndarray


@dataclass
class EncodedTable:
    """QI columns as hierarchy leaf codes; the fast entry point for risk of a generalized table."""

    qis: list[str]
    hierarchies: dict[str, Hierarchy]
    codes: dict[str, np.ndarray]
    missing: str = "own_class"
    population: EncodedPopulation | None = None
    gamma: float = 1.0

    @property
    def n(self) -> int:
        return len(next(iter(self.codes.values()))) if self.codes else 0

    def _map(self, q: str, level: "int | np.ndarray") -> tuple[np.ndarray, int]:
        """(leaf -> code map with trailing -1, cardinality) for an int level or a full-subtree map.

        A full-subtree policy (Benitez, Loukides & Malin 2010 §2.2) is given as an int array over the
        hierarchy's leaves (leaf index -> released-value code); see
        :meth:`subtree_map`.
        """
        h = self.hierarchies[q]
        if isinstance(level, (int, np.integer)):
            return h.level_map(int(level)), h.cardinality(int(level))
        arr = np.asarray(level, dtype=np.int32)
        if arr.shape != (len(h.leaves),):
            raise DeidInputError(f"full-subtree map of {q!r} must have one code per hierarchy value ({len(h.leaves)})")
        return np.append(arr, np.int32(-1)), int(arr.max()) + 1 if len(arr) else 0

    def subtree_map(self, q: str, mapping: Mapping[str, str]) -> np.ndarray:
        """Leaf-code map of a full-subtree policy {original value: released value} (others kept)."""
        h = self.hierarchies[q]
        released = [mapping.get(v, v) for v in h.leaves]
        codes, _ = pd.factorize(np.asarray(released, dtype=object))
        return codes.astype(np.int32)

    def level_codes(self, levels: Mapping[str, "int | np.ndarray"] | None = None) -> list[np.ndarray]:
        levels = levels or {}
        return [self._map(q, levels.get(q, 0))[0][self.codes[q]] for q in self.qis]

    def cards(self, levels: Mapping[str, "int | np.ndarray"] | None = None) -> list[int]:
        levels = levels or {}
        return [self._map(q, levels.get(q, 0))[1] for q in self.qis]

    def classes(self, levels: Mapping[str, int] | None = None, suppressed: np.ndarray | None = None) -> "Classes":
        """Equivalence classes of the table generalized to ``levels`` (missing per :attr:`missing`)."""
        codes = self.level_codes(levels)
        cards = self.cards(levels)
        n = self.n
        all_missing = np.ones(n, dtype=bool)
        for c in codes:
            all_missing &= c < 0
        if suppressed is not None:
            all_missing |= suppressed
        keep = ~all_missing
        if not keep.all():
            codes = [c[keep] for c in codes]
        keys = pack_keys(codes, cards)
        inv, sizes = sizes_from_keys(keys)
        if self.missing == "match_any" and any((c < 0).any() for c in codes):
            f = match_any_sizes(codes, cards)
        else:
            f = sizes[inv]
        F = None
        clamped = 0
        if self.population is not None:
            F, clamped = self._population_sizes(levels, keys, f)
        return Classes(keep=keep, ec=inv, ec_sizes=sizes, f=f, F=F, clamped=clamped)

    def _population_sizes(self, levels: Mapping[str, int] | None, data_keys: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, int]:
        """F per kept record: the population re-aggregated along the same levels (groupby-sum)."""
        pop = self.population
        assert pop is not None
        levels = levels or {}
        codes = [self._map(q, levels.get(q, 0))[0][pop.codes[q]] for q in self.qis]
        pkeys = pack_keys(codes, self.cards(levels))
        pinv, puniq = pd.factorize(pkeys)
        psum = np.bincount(pinv, weights=pop.counts, minlength=len(puniq))
        idx = pd.Index(puniq).get_indexer(data_keys)
        F = np.where(idx >= 0, psum[np.maximum(idx, 0)], 0.0)
        low = F < f  # absent from the population, or fewer people than records: inconsistent
        F = np.where(low, f, F).astype(float)
        return F, int(low.sum())

    def evaluate(self, levels: Mapping[str, int] | None = None, strict_cut: float = 0.33) -> dict:
        """Summary risk of one lattice node (prosecutor; population measures if a population is set)."""
        return summarize(self.classes(levels), strict_cut=strict_cut, gamma=self.gamma)


@dataclass
class Classes:
    """Result of a class computation over the kept (not fully missing) records."""

    keep: np.ndarray      # bool per input record
    ec: np.ndarray        # class index per kept record
    ec_sizes: np.ndarray  # size per class (own-class partition)
    f: np.ndarray         # class size per kept record (match_any: compatible records)
    F: np.ndarray | None  # population class size per kept record
    clamped: int = 0      # records whose population count was < f (or absent) and was raised to f


def _check_missing(missing: str) -> None:
    if missing not in MISSING_CHOICES:
        raise DeidInputError(f"missing must be one of {', '.join(MISSING_CHOICES)}, got {missing!r}")


def encode_table(df: pd.DataFrame, spec: Spec, population: pd.DataFrame | None = None) -> EncodedTable:
    """Encode the QI columns of ``df`` (and a population table) with the spec's hierarchies.

    Builders are applied to the distinct values of data and population
    together, so both share one code space. A QI without a declared hierarchy
    gets the flat hierarchy (value, ``*``).
    """
    require_records(df)
    _check_missing(spec.missing)
    spec.check_columns(df.columns)
    qis = spec.quasi
    if population is not None:
        population = validate_population(population, qis)
    hier: dict[str, Hierarchy] = {}
    codes: dict[str, np.ndarray] = {}
    for q in qis:
        vals = distinct_values(df[q])
        if population is not None:
            vals |= distinct_values(population[q])
        hs = spec.hierarchies.get(q)
        hier[q] = build_hierarchy(hs, vals, name=q) if hs is not None else flat_hierarchy(vals, name=q)
        codes[q] = hier[q].encode(df[q], q)
    pop = None
    if population is not None:
        pcodes = {}
        for q in qis:
            pcodes[q] = hier[q].encode(population[q], q)
            if (pcodes[q] < 0).any():
                raise DeidInputError(f"malformed population table: missing value in column {q!r}")
        pop = EncodedPopulation(pcodes, population["count"].to_numpy(dtype=float))
    return EncodedTable(qis, hier, codes, spec.missing, pop, spec.gamma)


def validate_population(pop: pd.DataFrame, qis: Sequence[str]) -> pd.DataFrame:
    """Check a population table: every QI column plus a non-negative numeric ``count``."""
    missing = [c for c in list(qis) + ["count"] if c not in pop.columns]
    if missing:
        raise DeidInputError(f"malformed population table: missing column(s) {', '.join(missing)}")
    raw = pop["count"].astype(object)
    cnt = pd.to_numeric(raw, errors="coerce")
    bad = cnt.isna() | (cnt < 0) | ~np.isfinite(cnt.astype(float))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise DeidInputError(f"malformed population table: count {raw.iloc[i]!r} on data row {i + 1} is not a non-negative number")
    out = pop[list(qis)].copy()
    out["count"] = cnt.astype(float).to_numpy()
    return out


# ------------------------------------------------------------- the measures

def prosecutor(f: np.ndarray, strict_cut: float = 0.33) -> dict:
    """Prosecutor risk from data class sizes f_j (El Emam & Arbuckle, ch. 2, "Probability Metrics",
    "Meeting Thresholds").

    * ``max`` = max_j 1/f_j — the book prints max(k_i) (ch. 2, "Meeting Thresholds"): erratum,
      fixed to max(1/k_i) (docs/deid.md, "Errata applied");
    * ``average`` = (1/N) Σ_records 1/f_j = #ECs/N under ``own_class``
      (the book prints average(k_i): same erratum);
    * ``strict_average`` = max if max > ``strict_cut`` (0.33, or 0.5) else average.
    """
    if len(f) == 0:
        return {"max": 0.0, "average": 0.0, "strict_average": 0.0}
    r = 1.0 / f
    mx, avg = float(r.max()), float(r.mean())
    return {"max": mx, "average": avg, "strict_average": mx if mx > strict_cut else avg}


def journalist(F: np.ndarray) -> dict:
    """Journalist risk from population class sizes F_j (docs/deid.md, "Measures" and "Errata applied"): max 1/F_j and record average of 1/F_j."""
    if len(F) == 0:
        return {"max": 0.0, "average": 0.0}
    r = 1.0 / F
    return {"max": float(r.max()), "average": float(r.mean())}


def marketer(ec_sizes: np.ndarray, F_classes: np.ndarray) -> float:
    """``(1/N) Σ_j f_j/F_j`` over classes j (El Emam & Arbuckle, ch. 2, "Probability Metrics").

    With a known population this equals the record-averaged journalist risk
    (each of the f_j records of class j contributes 1/F_j), so it is ≤ the
    journalist max; with F = f it is #ECs/N (the prosecutor average).
    """
    n = float(np.sum(ec_sizes))
    return float(np.sum(ec_sizes / F_classes) / n) if n else 0.0


def population_risk(F: np.ndarray, gamma: float = 1.0) -> dict:
    """Seed 000 eq. (1): ``risk(D,P) = Σ_{d∈D} (1/g(d))^γ`` and normalized by |D| (range (0,1])."""
    s = float(np.sum((1.0 / F) ** gamma)) if len(F) else 0.0
    return {"sum": s, "normalized": s / len(F) if len(F) else 0.0, "gamma": gamma}


def instance_disclosure(f: np.ndarray, F: np.ndarray) -> dict:
    """Seed 001 §3.2: ``r_i = n_i/N_i``, ``q_i = 1/N_i``, ``R = (1/|D|) Σ_i n_i r_i``, ``Q = (1/|D|) Σ_i n_i q_i``.

    Per record, R and Q are the means of r and q. Proposition 1: r_i ≥ q_i.
    """
    if len(f) == 0:
        return {"R": 0.0, "Q": 0.0, "max_r": 0.0, "max_q": 0.0}
    r, q = f / F, 1.0 / F
    return {"R": float(r.mean()), "Q": float(q.mean()), "max_r": float(r.max()), "max_q": float(q.max())}


def summarize(cl: Classes, strict_cut: float = 0.33, gamma: float = 1.0) -> dict:
    """All applicable summary measures of a class computation (the ``assess`` JSON core)."""
    f = cl.f
    out: dict = {
        "records": int(len(cl.keep)),
        "fully_missing_records": int((~cl.keep).sum()),
        "equivalence_classes": int(len(cl.ec_sizes)),
        "k_min": int(f.min()) if len(f) else 0,
        "prosecutor": prosecutor(f, strict_cut),
    }
    if cl.F is not None:
        out["journalist"] = journalist(cl.F)
        Fj = np.full(len(cl.ec_sizes), np.inf)
        np.minimum.at(Fj, cl.ec, cl.F)  # constant within a class under own_class; min under match_any
        out["marketer"] = marketer(cl.ec_sizes, Fj)
        out["population_risk"] = population_risk(cl.F, gamma)
        out["instance_disclosure"] = instance_disclosure(f, cl.F)
        out["population_inconsistent_records"] = cl.clamped
    return out


def per_record(cl: Classes) -> pd.DataFrame:
    """Per-record risks (NaN for fully missing records): prosecutor, and journalist r/q if a population is set."""
    n = len(cl.keep)
    cols = {"class_size": np.full(n, np.nan), "prosecutor": np.full(n, np.nan)}
    cols["class_size"][cl.keep] = cl.f
    cols["prosecutor"][cl.keep] = 1.0 / cl.f
    if cl.F is not None:
        for name, val in (("population_size", cl.F), ("journalist", 1.0 / cl.F), ("instance_disclosure", cl.f / cl.F)):
            cols[name] = np.full(n, np.nan)
            cols[name][cl.keep] = val
    return pd.DataFrame(cols)


def attack_assessment(summary: dict, release: ReleaseSpec) -> dict:
    """Overall risk under each applicable attack and whether it meets the threshold.

    T4 (public) uses the prosecutor max; T1–T3 use the strict average
    (El Emam & Arbuckle, ch. 2, "Probability Metrics") times Pr(T). Threshold semantics: :func:`meets`.
    """
    if not summary["records"]:
        raise DeidInputError("no records to assess: a table without records never meets a threshold")
    attacks = {}
    for t, pr in attack_probabilities(release).items():
        metric = "max" if t == "T4" else "strict_average"
        cond = summary["prosecutor"][metric]
        overall = overall_risk(pr, cond)
        attacks[t] = {
            "pr_t": pr, "metric": f"prosecutor.{metric}", "pr_reid_given_t": cond, "pr_reid": overall,
            "conditional_threshold": conditional_threshold(release.threshold, pr),
            "meets_threshold": meets(overall, release.threshold),
        }
    worst = max(attacks.values(), key=lambda a: a["pr_reid"])
    return {
        "release_type": release.type, "threshold": release.threshold,
        "k_equivalent": k_for_threshold(release.threshold), "attacks": attacks,
        "overall_risk": worst["pr_reid"], "meets_threshold": all(a["meets_threshold"] for a in attacks.values()),
    }
