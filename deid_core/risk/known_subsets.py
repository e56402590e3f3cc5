"""Risk when the adversary knows only m of the n quasi-identifiers, measured on the blocks of a covering
design (El Emam & Arbuckle, *Anonymizing Health Data*, ch. 7, "Many Quasi-Identifiers" and "Covering
Designs"; docs/subsampling.md, "Adversaries who know m of n quasi-identifiers").

Any m of the n QIs are plausible background knowledge, so the risk to meet is the largest over all
C(n, m) subsets. Each block of a C(n, k, m) covering design holds k ≥ m QIs and every m-subset lies in a
block; a block's classes are unions of the classes of its m-subsets, so the maximum over the blocks is
at least the maximum over the m-subsets (exact when k = m, conservative when k > m: fewer blocks to
measure, at the price of some over-estimation). "The rotten apple spoils the barrel": the data set's
risk is the largest risk of any block.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Sequence

from ..errors import ParameterError
from .equivalence_classes import Classes
from .covering import CoveringDesign, covering_design
from .encoding import EncodedTable
from .population import EncodedPopulation

#: Summary keys combined by their minimum over the blocks (every other number: the maximum, the worst).
MIN_KEYS = frozenset({"k_min", "equivalence_classes"})


@dataclass(frozen=True)
class KnownQIs:
    """The adversary knows ``m`` of ``qis``; risk is checked on the blocks of ``design`` (C(n, k, m))."""

    m: int
    qis: tuple[str, ...]
    design: CoveringDesign

    @property
    def blocks(self) -> list[list[str]]:
        """Each block as QI names (in the spec's order)."""
        return [[self.qis[i] for i in b] for b in self.design.blocks]

    def summary(self) -> dict:
        """JSON-ready: m, n, the block size and the design (its size next to the Schönheim bound and C(n, m))."""
        return {"m": self.m, "n": len(self.qis), "block_size": self.design.k, "design": self.design.summary()}


def known_qis(qis: Sequence[str], m: int, block: int | None = None, improve_seconds: float = 0.0,
              seed: int = 0) -> KnownQIs:
    """The m-of-n adversary over ``qis`` with blocks of ``block`` QIs (default m: every m-subset, exact);
    ``improve_seconds`` of local search shrink the design (:func:`~deid_core.risk.covering.improve`)."""
    n = len(qis)
    if not n:
        raise ParameterError("{known} needs quasi-identifiers in the spec", "known")
    if not 1 <= m <= n:
        raise ParameterError(f"{{known}} {m} must lie in 1..{n} (the spec's number of quasi-identifiers)", "known")
    k = m if block is None else block
    if not m <= k <= n:
        raise ParameterError(f"{{block}} {k} must lie in {m}..{n} (at least {{known}}, at most the number of "
                             "quasi-identifiers)", "block", "known")
    return KnownQIs(m, tuple(qis), covering_design(n, k, m, improve_seconds=improve_seconds, seed=seed))


def restrict(table: EncodedTable, qis: Sequence[str]) -> EncodedTable:
    """``table`` seen through ``qis`` only (population counts are re-aggregated over the other QIs when
    classes are computed)."""
    pop = table.population
    if pop is not None:
        pop = EncodedPopulation({q: pop.codes[q] for q in qis}, pop.counts)
    return replace(table, qis=list(qis), hierarchies={q: table.hierarchies[q] for q in qis},
                   codes={q: table.codes[q] for q in qis}, population=pop)


def worst(summaries: Sequence[dict]) -> dict:
    """One summary of the same shape holding, per measure, the worst value over the blocks (the
    maximum; the minimum for :data:`MIN_KEYS`)."""
    first = summaries[0]
    out: dict = {}
    for key, val in first.items():
        vals = [s[key] for s in summaries if key in s]
        if isinstance(val, dict):
            out[key] = worst(vals)
        elif isinstance(val, (int, float)) and not isinstance(val, bool):
            out[key] = min(vals) if key in MIN_KEYS else max(vals)
        else:
            out[key] = val
    return out


def block_summaries(table: EncodedTable, known: KnownQIs, summarize_block: Callable[[Classes], dict],
                    levels: dict | None = None, suppressed=None, progress: bool = False) -> list[dict]:
    """``summarize_block`` of every block's classes (``table`` generalized to ``levels``, ``suppressed``
    records left out), each with its ``qis``; a bar on stderr after 2 s when ``progress``."""
    blocks = known.blocks
    it = blocks
    if progress:
        from tqdm import tqdm
        it = tqdm(blocks, delay=2, desc="deid: risk per block", unit="block", leave=False)
    out = []
    for b in it:
        sub_levels = {q: lvl for q, lvl in (levels or {}).items() if q in b}
        s = summarize_block(restrict(table, b).classes(sub_levels, suppressed=suppressed))
        out.append({"qis": list(b), **s})
    return out
