"""OLA, the optimal lattice anonymization (El Emam et al. 2009; its release use in El Emam et al. 2012,
Heritage Health Prize; docs/deid_search.md), and the exact choice of the least-loss acceptable node.

OLA bisects the sub-lattice between a bottom node B and a top node T on the
middle height; each evaluated node tags a cone (:class:`~deid_core.algorithm.lattice.Lattice`),
so most nodes are never evaluated.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from .criterion import criterion_dict
from .full_domain import FullDomainProblem
from .lattice import ACCEPTABLE, UNKNOWN, Lattice, Node, minimal_nodes, nodes_at
from .result import SearchResult


def ola(lattice: Lattice, is_acceptable: Callable[[Node], bool]) -> list[Node]:
    """El Emam's OLA ``Kmin(B, T)``: the minimal acceptable nodes (empty if the top is not acceptable).

    ``is_acceptable`` is called only on untagged nodes; each call tags a
    cone. Returns the acceptable nodes with no acceptable specialization
    ("k-minimal" nodes); with a monotone loss the optimum is among them, and
    every acceptable node of the lattice ends up tagged ``ACCEPTABLE``.
    """
    def check(node: Node) -> bool:
        t = lattice.tag(node)
        if t != UNKNOWN:
            return t == ACCEPTABLE
        ok = bool(is_acceptable(node))
        (lattice.tag_up if ok else lattice.tag_down)(node)
        return ok

    if not check(lattice.top):
        return []
    done: set[tuple[Node, Node]] = set()

    def kmin(b: Node, t: Node) -> None:
        if (b, t) in done:  # tags only grow, so a repeated sub-lattice adds nothing new
            return
        done.add((b, t))
        if (lattice.tags[tuple(slice(lo, hi + 1) for lo, hi in zip(b, t))] != UNKNOWN).all():
            return  # nothing left to evaluate here; the minimal nodes are read off the tags below
        height = sum(t) - sum(b)
        if height > 1:
            for n in nodes_at(b, t, height // 2):
                if check(n):
                    kmin(b, n)
                else:
                    kmin(n, t)
        else:
            check(b)

    kmin(lattice.bottom, lattice.top)
    return minimal_nodes(lattice)


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
