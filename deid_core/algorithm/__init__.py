"""Policy searches (docs/deid_search.md).

* :mod:`.lattice` — the full-domain lattice with predictive tags;
* :mod:`.criterion` — what a node must meet (k, max or average risk, suppression limit), re-assessment;
* :mod:`.full_domain` — the full-domain problem: an encoded table, a criterion and a loss;
* :mod:`.ola` — OLA (El Emam et al. 2009) and the exact choice of the least-loss node;
* :mod:`.optimal` — :func:`optimal_release`, the public optimal full-domain release;
* :mod:`.lola` — LOLA, OLA with the longitudinal simulated-attack criterion (El Emam et al. 2012;
  imported on use: it loads the attack's scipy dependency);
* :mod:`.bitstring` — BPS and Directed over bit strings (Benitez, Loukides & Malin 2010 §2.4);
* :mod:`.subtree` — full-subtree policies on data with the population risk;
* :mod:`.baseline` — the Safe Harbor baseline of the searches;
* :mod:`.partition` — recursive partitioning (Liu et al. 2016; Mondrian, LeFevre et al. 2006);
* :mod:`.boxes` — k-anonymous interval boxes (Xiang et al. 2014);
* :mod:`.result` — the result of a search.
"""
from .baseline import safe_harbor_release, safe_harbor_risk
from .bitstring import bps, directed, halfway, non_dominated
from .boxes import Boxes, anonymize, interval_statistics, numeric_matrix, released, search_boxes
from .criterion import Criterion, criterion_dict, reassess
from .full_domain import FullDomainProblem, NodeResult, full_domain_release_policy
from .lattice import ACCEPTABLE, REJECTED, UNKNOWN, Lattice, Node, minimal_nodes, nodes_at
from .ola import ola, search_ola
from .optimal import OptimalRelease, optimal_release
from .partition import Partitioner, Subset, search_partition
from .result import SearchResult
from .subtree import SubtreeProblem, ordered_leaves, run_label, search_subtree, verify_subtree

__all__ = [
    "safe_harbor_release", "safe_harbor_risk", "bps", "directed", "halfway", "non_dominated", "Boxes", "anonymize",
    "interval_statistics", "numeric_matrix", "released", "search_boxes", "Criterion", "criterion_dict", "reassess",
    "FullDomainProblem", "NodeResult", "full_domain_release_policy", "ACCEPTABLE", "REJECTED", "UNKNOWN", "Lattice",
    "Node", "minimal_nodes", "nodes_at", "ola", "search_ola", "OptimalRelease", "optimal_release", "Partitioner",
    "Subset", "search_partition", "SearchResult", "SubtreeProblem", "ordered_leaves", "run_label", "search_subtree",
    "verify_subtree",
]
