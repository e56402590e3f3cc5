"""Policy search on data: OLA, BPS / Directed, and the ``deid search`` command.

Sections: OLA on the full-domain lattice (docs/deid_search.md, El Emam et al. 2012 (Heritage Health Prize)); full-subtree
bit-string policies with the population risk of Benitez, Loukides & Malin 2010 (BPS / Directed);
re-assessment of released tables from scratch; CLI glue for every method
(partitioning and boxes live in :mod:`deid_core.partition` and
:mod:`deid_core.boxes`).

Binds the data-free :mod:`deid_core.lattice` to a table encoded once with
:func:`deid_core.risk.encode_table`: every QI is pre-generalized to every
level as small int arrays, so one lattice node is one packed-key groupby
(:func:`deid_core.risk.pack_keys` / :func:`~deid_core.risk.sizes_from_keys`).

Acceptability (El Emam et al. 2012 (Heritage Health Prize) OLA, with suppression): the records that violate the
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

import argparse
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import DeidInputError
from .hierarchy import Hierarchy
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
    """One evaluated lattice node: acceptable?, suppression cut-off k', suppressed records, risk of the rest."""

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
        self.on_evaluate: Callable[[], None] | None = None  # e.g. a progress bar's tick
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
            if self.on_evaluate:
                self.on_evaluate()
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
    """OLA + exact choice among acceptable nodes (El Emam et al. 2012 (Heritage Health Prize); El Emam et al. 2009).

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


# ------------------------------------------------------------------- full-subtree (Benitez, Loukides & Malin 2010)

def ordered_leaves(h: Hierarchy) -> np.ndarray:
    """Leaf indices of a hierarchy in value order: numeric order when every value is a number, else hierarchy order."""
    nums = pd.to_numeric(pd.Series(h.leaves, dtype=object), errors="coerce")
    if nums.notna().all():
        return np.argsort(nums.to_numpy(dtype=float), kind="stable")
    return np.arange(len(h.leaves))


class SubtreeProblem:
    """Full-subtree policies as bit strings (Benitez, Loukides & Malin 2010 §2.2) and the population risk of eq. (1), normalized.

    Per QI the hierarchy's leaves (data ∪ population values) are put in value
    order; bit j sits between the j-th and (j+1)-th value: 1 keeps them
    apart, 0 merges them. A run of merged values is released as one value
    (``lo-hi`` for numbers, else the hierarchy node covering exactly the run,
    else ``a|b|…``). Risk ``Σ_d (1/g(d))^γ / |D|`` with ``g`` from the
    population re-aggregated along the same runs (:meth:`EncodedTable.classes`);
    without a population table ``g`` is the class size in the data.
    """

    def __init__(self, table: EncodedTable, threshold: float) -> None:
        self.t, self.threshold = table, threshold
        self.qis = list(table.qis)
        self.order = [ordered_leaves(table.hierarchies[q]) for q in self.qis]
        self.nbits = [max(len(o) - 1, 0) for o in self.order]
        self.offsets = np.concatenate([[0], np.cumsum(self.nbits)]).astype(int)
        #: w_sizeOfField(b_i) = |r(A_i)| − 1 for every bit of attribute i
        self.size_weight = np.concatenate([np.full(nb, nb, dtype=float) for nb in self.nbits]) if sum(self.nbits) else np.zeros(0)
        self.cache: dict[bytes, float] = {}

    @property
    def n_bits(self) -> int:
        return int(self.offsets[-1])

    def maps(self, bits: np.ndarray) -> dict[str, np.ndarray]:
        """Leaf index -> run code per QI."""
        out = {}
        for i, q in enumerate(self.qis):
            b = bits[self.offsets[i]:self.offsets[i + 1]]
            run = np.concatenate([[0], np.cumsum(b)]).astype(np.int32)  # run of the j-th value in order
            m = np.empty(len(self.order[i]), dtype=np.int32)
            m[self.order[i]] = run
            out[q] = m
        return out

    def risk(self, bits: np.ndarray) -> float:
        """Normalized population risk of a policy (cached by bit string)."""
        key = np.packbits(bits).tobytes()
        if key not in self.cache:
            cl = self.t.classes(self.maps(bits))
            g = cl.F if cl.F is not None else cl.f.astype(float)
            self.cache[key] = float(np.sum((1.0 / g) ** self.t.gamma) / len(g)) if len(g) else 0.0
        return self.cache[key]

    def acceptable(self, bits: np.ndarray) -> bool:
        return self.risk(bits) <= self.threshold + 1e-12

    def mapping(self, bits: np.ndarray) -> dict[str, dict[str, str]]:
        """{QI: {original: released}} for the values that are merged with others."""
        out: dict[str, dict[str, str]] = {}
        for q, m in self.maps(bits).items():
            h = self.t.hierarchies[q]
            runs = pd.Series(np.arange(len(m))).groupby(m).agg(list)
            qmap = {}
            for leaves in runs:
                if len(leaves) > 1:
                    label = run_label(h, leaves)
                    qmap.update({str(h.leaves[j]): label for j in leaves})
            out[q] = qmap
        return out

    def policy(self, spec: Spec, bits: np.ndarray) -> Policy:
        """Re-appliable policy: drop direct identifiers, then one ``map`` step per QI."""
        steps: list[dict] = [{"op": "drop", "columns": spec.direct}] if spec.direct else []
        steps += [{"op": "map", "column": q, "mapping": m} for q, m in self.mapping(bits).items() if m]
        return Policy(steps, description="full-subtree policy (Benitez, Loukides & Malin 2010 §2.2)")


def run_label(h: Hierarchy, leaves: Sequence[int]) -> str:
    """Released value of a run of leaves: ``lo-hi`` for numbers, the hierarchy node covering exactly them, or ``a|b``."""
    vals = [str(h.leaves[j]) for j in leaves]
    nums = pd.to_numeric(pd.Series(vals, dtype=object), errors="coerce")
    if nums.notna().all():
        return f"{vals[int(np.argmin(nums))]}-{vals[int(np.argmax(nums))]}"
    for lvl in range(1, h.height + 1):
        codes = h.level_map(lvl)[:-1]
        c = codes[leaves]
        if (c == c[0]).all() and int((codes == c[0]).sum()) == len(leaves):
            return str(h.labels(lvl)[c[0]])
    return "|".join(vals)


def release_class_sizes(out: pd.DataFrame, pop_out: pd.DataFrame | None, qis: Sequence[str]) -> tuple[np.ndarray, np.ndarray, int]:
    """From scratch on released values: per record its class size f in the data and g in the released
    population (grouped on the same values; raised to f when smaller, as in risk.py), and the number of classes."""
    qis = list(qis)
    key = out[qis].astype(str)
    grp = key.groupby(qis, sort=False, observed=True)[qis[0]]
    f = grp.transform("size").to_numpy(dtype=float)
    if pop_out is None:
        return f, f, int(grp.ngroups)
    pc = pop_out[qis].astype(str).assign(count=pop_out["count"].to_numpy(dtype=float))
    agg = pc.groupby(qis, sort=False, observed=True)["count"].sum().rename("g").reset_index()
    g = key.merge(agg, on=qis, how="left")["g"].fillna(0).to_numpy(dtype=float)
    return f, np.maximum(g, f), int(grp.ngroups)


def population_risk_of_release(out: pd.DataFrame, pop_out: pd.DataFrame | None, qis: Sequence[str],
                               gamma: float = 1.0) -> float:
    """Normalized ``Σ (1/g(d))^γ / |D|`` (Benitez, Loukides & Malin 2010 eq. 1) of a released table, from scratch."""
    _, g, _ = release_class_sizes(out, pop_out, qis)
    return float(np.sum((1.0 / g) ** gamma) / len(g)) if len(g) else 0.0


def safe_harbor_release(df: pd.DataFrame, pop: pd.DataFrame | None, spec: Spec) -> tuple[pd.DataFrame, pd.DataFrame | None, list[str]]:
    """Safe Harbor applied to the QIs of the data and of the population table; the QIs that remain."""
    from .safe_harbor import safe_harbor_policy

    qis = spec.quasi
    policy, _ = safe_harbor_policy(spec, qis)
    out, _ = policy.apply(df[qis])
    pop_out = policy.apply(pop[qis + ["count"]])[0] if pop is not None else None
    return out, pop_out, [q for q in qis if q in out.columns]


def safe_harbor_risk(df: pd.DataFrame, pop: pd.DataFrame | None, spec: Spec) -> float:
    """Seed 000 §2.1: the threshold = the normalized population risk of the Safe Harbor release of the same data."""
    out, pop_out, kept = safe_harbor_release(df, pop, spec)
    if not kept:
        total = float(pop["count"].sum()) if pop is not None else float(len(df))
        return 1.0 / max(total, len(df))
    return population_risk_of_release(out, pop_out, kept, spec.gamma)


def search_subtree(problem: SubtreeProblem, method: str, iterations: int, seed: int = 0,
                   progress: bool = False) -> SearchResult:
    """BPS or Directed (Benitez, Loukides & Malin 2010 §2.4) for ``iterations`` boundary policies; reports the non-dominated ones.

    Policies are listed best first by information loss, here the share of
    the bits that are generalized (0 = the data as is, 1 = everything ``*``).
    """
    from .lattice import bps, directed, non_dominated

    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    report = _progress_printer(iterations, t0) if progress else None
    if method == "bps":
        sols = bps(problem.n_bits, problem.acceptable, iterations, problem.size_weight, rng, report)
    else:
        sols = directed(problem.n_bits, problem.acceptable, iterations, rng, report)
    nd = non_dominated(sols)
    nbits = max(problem.n_bits, 1)
    policies = [{"risk": problem.risk(b), "information_loss": float((~b).sum() / nbits), "suppressed_records": 0,
                 "bits": "".join("1" if x else "0" for x in b), "mapping": problem.mapping(b)} for b in nd]
    policies.sort(key=lambda p: (p["information_loss"], p["risk"]))
    return SearchResult(method, policies, len(problem.cache), time.perf_counter() - t0, {
        "threshold": problem.threshold, "iterations": iterations, "boundary_policies_found": len(sols),
        "distinct_policies": len({b.tobytes() for b in sols}), "non_dominated": len(nd), "bits": problem.n_bits,
        "loss": "share of generalized bits",
    })


def _progress_printer(total: int, t0: float) -> "Callable[[int], None]":
    """A tqdm bar on stderr that only appears once a search has run for more than 2 s."""
    import sys

    from tqdm import tqdm

    bar = tqdm(total=total, delay=2, file=sys.stderr, desc="deid search", unit="policy", leave=False)

    def report(done: int) -> None:
        bar.update(done - bar.n)
        if done >= total:
            bar.close()
    return report


# ------------------------------------------------------------------- CLI

def _criterion_from_args(args: argparse.Namespace, spec: Spec, n: int) -> Criterion:
    """--k, or --threshold (default [release] threshold) on the max risk (public) or average risk (non-public)."""
    measure = "max" if spec.release.type == "public" else "average"
    if args.k is not None:
        return Criterion.build(n, k=args.k, max_suppression=args.max_suppression)
    thr = args.threshold if args.threshold is not None else spec.release.threshold
    return Criterion.build(n, threshold=thr, measure=measure, max_suppression=args.max_suppression)


def run_ola(args: argparse.Namespace, spec: Spec, df: pd.DataFrame) -> tuple[dict, pd.DataFrame | None]:
    """``deid search --method ola``: result dict and (with ``--apply-best``) the verified release."""
    from .risk import encode_table

    if args.top < 1:
        raise DeidInputError(f"--top must be a positive integer, got {args.top}")
    crit = _criterion_from_args(args, spec, len(df))
    problem = FullDomainProblem(encode_table(df, spec), crit, args.loss)
    from tqdm import tqdm
    with tqdm(total=int(np.prod([h + 1 for h in problem.heights])), delay=2, desc="deid search (nodes)",
              unit="node", leave=False) as bar:  # shows only if the search runs > 2 s
        problem.on_evaluate = bar.update
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


def verify_subtree(problem: SubtreeProblem, spec: Spec, df: pd.DataFrame, pop: pd.DataFrame | None,
                   bits: np.ndarray) -> tuple[float, pd.DataFrame]:
    """Apply a full-subtree policy to the data and the population and re-measure the risk from scratch."""
    policy = problem.policy(spec, bits)
    out, _ = policy.apply(df)
    pop_out = policy.apply(pop)[0] if pop is not None else None
    return population_risk_of_release(out, pop_out, problem.qis, spec.gamma), out


def run_subtree(args: argparse.Namespace, spec: Spec, df: pd.DataFrame, pop: pd.DataFrame | None) -> tuple[dict, pd.DataFrame | None]:
    """``deid search --method bps|directed``: every reported policy is re-assessed from scratch."""
    from .risk import encode_table

    if args.k is not None:
        raise DeidInputError("--k applies to --method ola only (bps/directed take --threshold, a normalized population risk)")
    if args.max_suppression:
        raise DeidInputError("--max-suppression applies to --method ola only")
    if args.iterations < 1:
        raise DeidInputError(f"--iterations must be a positive integer, got {args.iterations}")
    table = encode_table(df, spec, pop)
    pop = table_population_frame(table, pop)
    if args.threshold is not None:
        if not 0 < args.threshold <= 1:
            raise DeidInputError(f"threshold {args.threshold} is outside (0, 1]")
        thr, source = args.threshold, "--threshold"
    else:
        thr, source = safe_harbor_risk(df, pop, spec), "safe harbor"
    problem = SubtreeProblem(table, thr)
    result = search_subtree(problem, args.method, args.iterations, args.seed, progress=True).to_dict()
    result["threshold_source"] = source
    best_out = None
    for i, pol in enumerate(result["policies"]):
        bits = np.array([c == "1" for c in pol["bits"]], dtype=bool)
        risk, out = verify_subtree(problem, spec, df, pop, bits)
        if risk > thr + 1e-12:  # pragma: no cover - guarded by tests
            raise RuntimeError(f"internal error: policy {i} has risk {risk} > {thr} when applied")
        pol["reassessed_risk"] = risk
        if i == 0:
            best_out = out
            result["best_policy"] = problem.policy(spec, bits).to_dict()
    return result, (best_out if args.apply_best else None)


def table_population_frame(table: EncodedTable, pop: pd.DataFrame | None) -> pd.DataFrame | None:
    """The validated population frame (QI columns + numeric count) or None."""
    if pop is None:
        return None
    from .risk import validate_population
    return validate_population(pop, table.qis)


def run_partition(args: argparse.Namespace, spec: Spec, df: pd.DataFrame, pop: pd.DataFrame | None) -> tuple[dict, pd.DataFrame]:
    """``deid search --method partition`` (Liu et al. 2016 §3.3): minimum subset size ``--k``; Safe Harbor alongside."""
    from .metrics import non_uniform_entropy
    from .partition import Partitioner, release, summary
    from .risk import encode_table

    if args.k is None:
        raise DeidInputError("--method partition needs --k, the minimum subset size")
    if pop is None:
        raise DeidInputError("--method partition needs --population (instance-disclosure risk uses N_i)")
    t0 = time.perf_counter()
    table = encode_table(df, spec, pop)
    pop = table_population_frame(table, pop)
    part = Partitioner(table, args.k, getattr(args, "min_population", 0.0))
    subsets = part.run()
    out = release(df, part.qis, subsets)
    summ = summary(subsets)
    sh_out, sh_pop, kept = safe_harbor_release(df, pop, spec)
    f, g, n_ec = release_class_sizes(sh_out, sh_pop, kept)
    policy = {"risk": summ["max_r"], "information_loss": non_uniform_entropy(df, out, part.qis)["bits"],
              "suppressed_records": 0, "summary": summ, "subsets": [
                  {"size": s.n, "population": s.population, "r": s.r, "levels": s.levels, "values": s.values}
                  for s in subsets]}
    result = SearchResult("partition", [policy], part.splits_tried, time.perf_counter() - t0, {
        "min_size": args.k, "risk_measure": "instance disclosure max r_i (Liu et al. 2016 §3.2)",
        "loss": "non-uniform entropy (bits)",
        "safe_harbor": {"equivalence_classes": n_ec, "max_r": float((f / g).max()), "R": float((f / g).mean())},
    }).to_dict()
    return result, out


def run_boxes(args: argparse.Namespace, spec: Spec, df: pd.DataFrame, pop: pd.DataFrame | None) -> tuple[dict, pd.DataFrame]:
    """``deid search --method boxes`` (Xiang et al. 2014): k-anonymous interval boxes over the numeric QIs."""
    from .boxes import anonymize, interval_statistics, numeric_matrix, released

    if args.k is None:
        raise DeidInputError("--method boxes needs --k")
    t0 = time.perf_counter()
    qis = spec.quasi
    x = numeric_matrix(df, qis)
    b = anonymize(x, args.k)
    out = released(df, qis, b)
    width = (b.hi - b.lo)[b.box] / np.where(np.ptp(x, axis=0) > 0, np.ptp(x, axis=0), 1.0)
    f = ec_sizes_of(out, qis)
    policy = {"risk": float(1.0 / f.min()), "information_loss": float(width.mean()), "suppressed_records": 0,
              "boxes": int(len(b.lo)), "min_box_size": int(b.sizes.min()),
              "statistics": {q: interval_statistics(b.lo[b.box, i], b.hi[b.box, i], x[:, i]) for i, q in enumerate(qis)}}
    result = SearchResult("boxes", [policy], int(len(x)), time.perf_counter() - t0, {
        "k": args.k, "loss": "mean box width per attribute on the unit scale", "weights": "1/range (global)",
    }).to_dict()
    return result, out


def run_search_command(args: argparse.Namespace) -> int:
    """Body of ``deid search``: validate, search, verify, then write (nothing written on bad input)."""
    import sys

    from .io import read_table, require_records, write_json, write_table
    from .spec import load_spec

    t0 = time.perf_counter()
    spec = load_spec(args.spec)
    df = read_table(args.input, spec.missing_values)
    require_records(df, repr(args.input))
    spec.check_columns(df.columns)
    from .detect import parse_accepted
    accepted = parse_accepted(getattr(args, "accept_column", None), args.out or None)
    fates = spec.fates(df.columns) if args.apply_best or spec.rest is not None else None
    spec = spec.resolve(df.columns) if fates is not None else spec
    if not spec.quasi:
        raise DeidInputError("spec declares no quasi-identifier to search over")
    if args.method == "ola":
        result, out = run_ola(args, spec, df)
    else:
        pop = read_table(args.population, spec.missing_values, categorical=False) if args.population else None
        run = {"partition": run_partition, "boxes": run_boxes}.get(args.method, run_subtree)
        result, out = run(args, spec, df, pop)
        out = out if args.apply_best else None
    if args.apply_best and out is None:
        raise DeidInputError("no policy meets the threshold: nothing to apply (relax --k/--threshold or --max-suppression)")
    if out is not None:  # every column has a fate; identifiers are refused before anything is written
        from .detect import check_release
        out = out.drop(columns=[c for c in spec.direct if c in out.columns])
        result["identifier_check"] = check_release(out, fates, safe_harbor=False, accepted=accepted)
        result["accepted_columns"] = result["identifier_check"]["accepted_columns"]
    if fates is not None and "best_policy" in result:
        result["best_policy"] = Policy.from_dict(result["best_policy"]).with_fates(fates, spec.rest, False).to_dict()
    result["seconds_total"] = round(time.perf_counter() - t0, 4)
    page = None
    if getattr(args, "html", None):
        from .report import render_search_html
        page = render_search_html(result)
    write_json(result, args.out)
    if page is not None:
        from .io import write_text
        write_text(page, args.html)
    if out is not None:
        write_table(out, args.apply_best)
    if not result["policies"]:
        print("deid: warning: no policy meets the threshold", file=sys.stderr)
    return 0
