"""Encoding a table into equivalence classes: hierarchy leaf codes per QI (docs/deid.md, "Measures").

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

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd

from ..errors import DeidInputError
from ..hierarchy import Hierarchy, build_hierarchy, distinct_values, flat_hierarchy
from ..io import require_records
from ..spec import MISSING_CHOICES, Spec
from .equivalence_classes import Classes, match_any_sizes, pack_keys, sizes_from_keys
from .population import EncodedPopulation, validate_population
from .summary import summarize


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
