"""Policy search on data: OLA over the full-domain lattice (issue 4, DEID.md §3).

Binds the data-free :mod:`deid_core.lattice` to a table encoded once with
:func:`deid_core.risk.encode_table`: every QI is pre-generalized to every
level as small int arrays, so one lattice node is one packed-key groupby
(:func:`deid_core.risk.pack_keys` / :func:`~deid_core.risk.sizes_from_keys`).

Acceptability (seed 003 OLA, with suppression): the records that violate the
criterion — in classes smaller than k (``--k``, or k(threshold) for a maximum
risk), or in the smallest classes that must go for the average risk of the
rest to meet the threshold — are suppressed, and the node is acceptable when
they fit within the suppression limit ``floor(P × N)``.

Losses, computed per (QI, level) once so that a node's loss is a few sums:

* ``nue``: ARX's non-uniform entropy, the formula of
  :func:`deid_core.metrics.non_uniform_entropy` (bits, summed over QIs; a
  suppressed cell counts as ``*``), on codes instead of DataFrames;
* ``geometric``: ARX's default "Loss" (``MetricMDNMLoss``, gs-factor 0.5):
  per QI ``x_q = (Σ_r share_r − N/|dom|) / (N − N/|dom|)`` with ``share`` the
  fraction of the hierarchy's leaves under the released value (1 for a
  suppressed record), aggregated as ``exp(mean(ln(1 + x_q))) − 1``.

Both are ≥ their suppression-free value, which is a lower bound used for an
exact branch-and-bound over the acceptable nodes when suppression makes the
loss non-monotone.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import DeidInputError
from .lattice import ACCEPTABLE, Lattice, Node, ola
from .metrics import missing_mask
from .risk import THRESHOLD_TOLERANCE, EncodedTable, k_for_threshold, meets, pack_keys, sizes_from_keys
from .spec import Spec
from .transform import Policy, ec_sizes_of, full_domain_policy

LOSSES = ("nue", "geometric")


@dataclass(frozen=True)
class Criterion:
    """What a node must meet: ``kind`` = ``k`` | ``max`` | ``average``, with a suppression limit in records."""

    kind: str
    k: int = 1
    threshold: float | None = None
    max_suppressed: int = 0

    @classmethod
    def build(cls, n: int, k: int | None = None, threshold: float | None = None, measure: str = "max",
              max_suppression: float = 0.0) -> "Criterion":
        if not 0 <= max_suppression <= 1:
            raise DeidInputError(f"--max-suppression {max_suppression} is outside [0, 1]")
        limit = int(math.floor(max_suppression * n + 1e-9))
        if k is not None:
            if k < 1:
                raise DeidInputError(f"--k must be a positive integer, got {k}")
            return cls("k", k=int(k), max_suppressed=limit)
        if threshold is None or not 0 < threshold <= 1:
            raise DeidInputError(f"threshold {threshold} is outside (0, 1]")
        if measure == "average":
            return cls("average", threshold=threshold, max_suppressed=limit)
        return cls("max", k=k_for_threshold(threshold), threshold=threshold, max_suppressed=limit)

    def cutoff(self, f: np.ndarray) -> tuple[int, int, float]:
        """(suppression k', suppressed records, risk of the rest) from per-record class sizes ``f``.

        k / max: k' = k. average: the smallest k' (a class size) such that the
        record-average risk ``mean(1/f)`` of the records in classes ≥ k' meets
        the threshold (:func:`deid_core.risk.meets`); suppressing whole size
        levels keeps the policy re-appliable as ``suppress_records k'``.
        """
        if self.kind != "average":
            kept = f[f >= self.k]
            return self.k, int(len(f) - len(kept)), (1.0 / kept.min()) if len(kept) else 0.0
        r = np.bincount(f)  # r[s] = records whose class has size s
        s = np.flatnonzero(r)
        recs = r[s]
        supp = np.concatenate([[0], np.cumsum(recs)[:-1]])
        inv_left = (recs / s)[::-1].cumsum()[::-1]  # Σ 1/f over records in classes of size ≥ s
        risk = inv_left / np.maximum(len(f) - supp, 1)
        ok = np.flatnonzero(risk <= self.threshold * (1 + THRESHOLD_TOLERANCE) + 1e-15)  # risk.meets
        if not len(ok):
            return int(s[-1]) + 1, int(len(f)), 0.0
        i = int(ok[0])
        return int(s[i]), int(supp[i]), float(risk[i])


@dataclass
class NodeResult:
    node: Node
    acceptable: bool
    suppress_k: int
    suppressed: int
    risk: float


class FullDomainProblem:
    """An encoded table pre-generalized to every level of every QI, with a criterion and a loss."""

    def __init__(self, table: EncodedTable, criterion: Criterion, loss: str = "nue") -> None:
        if loss not in LOSSES:
            raise DeidInputError(f"--loss must be one of {', '.join(LOSSES)}, got {loss!r}")
        self.t, self.criterion, self.loss_name = table, criterion, loss
        self.qis = list(table.qis)
        self.heights = [table.hierarchies[q].height for q in self.qis]
        self.n = table.n
        self.codes = [[table.hierarchies[q].level_map(l)[table.codes[q]] for l in range(h + 1)]
                      for q, h in zip(self.qis, self.heights)]
        self.cards = [[table.hierarchies[q].cardinality(l) for l in range(h + 1)] for q, h in zip(self.qis, self.heights)]
        self.fast = table.missing == "own_class" and not any((c[0] < 0).any() for c in self.codes)
        self.cache: dict[Node, NodeResult] = {}
        self._init_loss()

    # --------------------------------------------------------------- risk
    def class_sizes(self, node: Node) -> np.ndarray:
        """Class size per record (0 for records with every QI missing, which are never in a class)."""
        if self.fast:
            keys = pack_keys([self.codes[i][l] for i, l in enumerate(node)], [self.cards[i][l] for i, l in enumerate(node)])
            inv, sizes = sizes_from_keys(keys)
            return sizes[inv]
        cl = self.t.classes(dict(zip(self.qis, node)))
        f = np.zeros(self.n, dtype=np.int64)
        f[cl.keep] = cl.f
        return f

    def evaluate(self, node: Node) -> NodeResult:
        """Risk and suppression of one node (cached; ``nodes_evaluated`` counts the cache)."""
        if node not in self.cache:
            f = self.class_sizes(node)
            f = f[f > 0]
            k, supp, risk = self.criterion.cutoff(f)
            ok = supp <= self.criterion.max_suppressed and supp < len(f)
            self.cache[node] = NodeResult(node, ok, k, supp, risk)
        return self.cache[node]

    def acceptable(self, node: Node) -> bool:
        return self.evaluate(node).acceptable

    # --------------------------------------------------------------- loss
    def _init_loss(self) -> None:
        """Per (QI, level): per-record loss term and its sum; per QI: the term of a suppressed cell."""
        self.terms: list[list[np.ndarray]] = []
        self.top_terms: list[np.ndarray] = []
        for i, q in enumerate(self.qis):
            h = self.t.hierarchies[q]
            if self.loss_name == "nue":
                o = self.codes[i][0] + 1  # missing (-1) is one more value, as in metrics._codes
                orig = np.bincount(o)[o].astype(float)
                per = []
                for l in range(self.heights[i] + 1):
                    g = self.codes[i][l] + 1
                    per.append(np.log2(np.bincount(g)[g] / orig))
                self.top_terms.append(np.log2(self.n / orig))
            else:
                dom = len(h.leaves)
                per = []
                for l in range(self.heights[i] + 1):
                    under = np.bincount(h.level_map(l)[:-1], minlength=h.cardinality(l)).astype(float) / dom
                    c = self.codes[i][l]
                    per.append(np.where(c >= 0, under[np.maximum(c, 0)], 1.0))
                self.top_terms.append(np.ones(self.n))
            self.terms.append(per)
        self.sums = [np.array([p.sum() for p in per]) for per in self.terms]
        self.dom = np.array([len(self.t.hierarchies[q].leaves) for q in self.qis], dtype=float)

    def _aggregate(self, per_qi: np.ndarray) -> np.ndarray:
        """Per-QI totals (last axis) -> the loss value."""
        if self.loss_name == "nue":
            return per_qi.sum(axis=-1)
        lo = self.n / self.dom
        x = np.clip((per_qi - lo) / np.maximum(self.n - lo, 1e-300), 0, None)
        return np.expm1(np.log1p(x).mean(axis=-1))

    def lower_bounds(self, nodes: np.ndarray) -> np.ndarray:
        """Loss of each node (rows of levels) without suppression: a lower bound of its loss."""
        per = np.column_stack([self.sums[i][nodes[:, i]] for i in range(len(self.qis))])
        return self._aggregate(per)

    def loss(self, node: Node) -> float:
        """Exact loss of a node with its suppression (suppressed records count as fully generalized)."""
        res = self.evaluate(node)
        per = np.array([self.sums[i][l] for i, l in enumerate(node)], dtype=float)
        if res.suppressed:
            mask = self.class_sizes(node) < res.suppress_k
            per += np.array([(self.top_terms[i][mask] - self.terms[i][l][mask]).sum() for i, l in enumerate(node)])
        return float(self._aggregate(per))


@dataclass
class SearchResult:
    method: str
    policies: list[dict]
    nodes_evaluated: int
    seconds: float
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"method": self.method, "policies": self.policies, "nodes_evaluated": self.nodes_evaluated,
                "seconds": round(self.seconds, 4), **self.extra}


def search_ola(problem: FullDomainProblem, top: int = 10) -> SearchResult:
    """OLA + exact choice among acceptable nodes (seed 003; El Emam et al. 2009).

    OLA's predictive tagging leaves every acceptable node tagged. The loss
    optimum is found by branch-and-bound over the tagged nodes in order of
    their suppression-free loss (exact even when suppression makes the loss
    non-monotone); without suppression the bound is the loss and no node is
    evaluated beyond OLA's.
    """
    t0 = time.perf_counter()
    lat = Lattice(problem.heights)
    minimal = ola(lat, problem.acceptable)
    ola_nodes = len(problem.cache)
    cand = np.argwhere(lat.tags == ACCEPTABLE)
    best: list[tuple[float, Node]] = []
    if len(cand):
        lb = problem.lower_bounds(cand)
        order = np.argsort(lb, kind="stable")
        for j in order:
            if len(best) >= top and lb[j] >= best[-1][0]:
                break
            node = tuple(int(x) for x in cand[j])
            cached = problem.cache.get(node)
            exact = float(lb[j]) if (problem.criterion.max_suppressed == 0 or (cached and not cached.suppressed)) \
                else problem.loss(node)
            best.append((exact, node))
            best.sort(key=lambda x: (x[0], sum(x[1])))
            del best[top:]
    policies = []
    for loss, node in best:
        res = problem.evaluate(node)
        policies.append({"levels": dict(zip(problem.qis, node)), "risk": res.risk,
                         "information_loss": loss, "suppressed_records": res.suppressed,
                         "suppression_k": res.suppress_k})
    return SearchResult("ola", policies, len(problem.cache), time.perf_counter() - t0, {
        "loss": problem.loss_name, "criterion": criterion_dict(problem.criterion),
        "lattice_size": lat.size, "minimal_nodes": len(minimal), "nodes_evaluated_by_ola": ola_nodes,
        "acceptable_nodes": int(len(cand)),
    })


def criterion_dict(c: Criterion) -> dict:
    return {"kind": c.kind, "k": c.k if c.kind != "average" else None, "threshold": c.threshold,
            "max_suppressed_records": c.max_suppressed}


# ------------------------------------------------------------------- verification

def full_domain_release_policy(spec: Spec, qis: Sequence[str], levels: Mapping[str, int], suppress_k: int) -> Policy:
    """The re-appliable policy of a node: drop direct identifiers, generalize, suppress classes < k'."""
    return full_domain_policy(spec.hierarchies, levels, drop=spec.direct, suppress_k=suppress_k, qis=list(qis))


def reassess(out: pd.DataFrame, qis: Sequence[str], criterion: Criterion) -> dict:
    """Risk of a released table from scratch (its own values, no encoding reused) against ``criterion``.

    Records whose QIs are all missing or suppressed are the suppressed ones.
    """
    supp = missing_mask(out, list(qis)).all(axis=1)
    kept = out.loc[~supp, list(qis)]
    f = ec_sizes_of(kept, list(qis)) if len(kept) else np.zeros(0, dtype=np.int64)
    if criterion.kind == "average":
        risk = float(np.mean(1.0 / f)) if len(f) else 0.0
        ok = meets(risk, criterion.threshold)
    else:
        risk = float(1.0 / f.min()) if len(f) else 0.0
        ok = bool(len(f) == 0 or f.min() >= criterion.k)
    n_supp = int(supp.sum())
    return {"risk": risk, "suppressed_records": n_supp, "k_min": int(f.min()) if len(f) else 0,
            "meets": bool(ok and n_supp <= criterion.max_suppressed)}


# ------------------------------------------------------------------- CLI

def _criterion_from_args(args, spec: Spec, n: int) -> Criterion:
    """--k, or --threshold (default [release] threshold) on the max risk (public) or average risk (non-public)."""
    measure = "max" if spec.release.type == "public" else "average"
    if args.k is not None:
        return Criterion.build(n, k=args.k, max_suppression=args.max_suppression)
    thr = args.threshold if args.threshold is not None else spec.release.threshold
    return Criterion.build(n, threshold=thr, measure=measure, max_suppression=args.max_suppression)


def run_ola(args, spec: Spec, df: pd.DataFrame) -> tuple[dict, pd.DataFrame | None]:
    """``deid search --method ola``: result dict and (with ``--apply-best``) the verified release."""
    from .risk import encode_table

    if args.top < 1:
        raise DeidInputError(f"--top must be a positive integer, got {args.top}")
    crit = _criterion_from_args(args, spec, len(df))
    problem = FullDomainProblem(encode_table(df, spec), crit, args.loss)
    result = search_ola(problem, top=args.top).to_dict()
    out = None
    if result["policies"]:
        best = result["policies"][0]
        policy = full_domain_release_policy(spec, problem.qis, best["levels"], best["suppression_k"])
        result["best_policy"] = policy.to_dict()
        if args.apply_best:
            out, _ = policy.apply(df)
            check = reassess(out, problem.qis, crit)
            if not check["meets"]:  # pragma: no cover - guarded by tests
                raise RuntimeError(f"internal error: best policy fails re-assessment {check}")
            result["best_reassessed"] = check
    return result, out


def run_search_command(args) -> int:
    """Body of ``deid search``: validate, search, verify, then write (nothing written on bad input)."""
    import sys

    from .io import read_table, write_json, write_table
    from .spec import load_spec

    t0 = time.perf_counter()
    runners = {"ola": run_ola}
    if args.method not in runners:
        raise DeidInputError(f"--method {args.method}: not implemented yet")
    spec = load_spec(args.spec)
    df = read_table(args.input, spec.missing_values)
    spec.check_columns(df.columns)
    if not spec.quasi:
        raise DeidInputError("spec declares no quasi-identifier to search over")
    result, out = runners[args.method](args, spec, df)
    if args.apply_best and out is None:
        raise DeidInputError("no policy meets the threshold: nothing to apply (relax --k/--threshold or --max-suppression)")
    result["seconds_total"] = round(time.perf_counter() - t0, 4)
    write_json(result, args.out)
    if out is not None:
        write_table(out, args.apply_best)
    if not result["policies"]:
        print("deid: warning: no policy meets the threshold", file=sys.stderr)
    return 0
