"""De-identification core: risk, hierarchies, transformations, reports.

Friendly API::

    import deid_core as dc
    spec = dc.load_spec("spec.toml")
    df = dc.read_table("data.csv")
    a = dc.assess(df, spec, population=None, levels={"age": 2})
    a.summary["prosecutor"]["max"], a.loss["non_uniform_entropy"]["percent"]

    ra = dc.assess_release(df, spec, levels={"age": 2})   # everything the five-step report states
    html = dc.release_page(ra, dc.build_report(ra, input_name="data.csv"))
    out, policy, info = dc.safe_harbor(df, spec)

    best = dc.optimal_release(df, spec, threshold=0.09)   # OLA: least-loss release meeting the threshold
    release = best.apply(df)

For lattice searches, :func:`encode_table` once, then
``table.evaluate(levels)`` / ``table.classes(levels)`` per node.

Packages: :mod:`.risk` (attack model, equivalence classes, measures), :mod:`.metric` (information
loss), :mod:`.transform` (policy, Safe Harbor, dates, masking), :mod:`.algorithm` (lattice, OLA,
BPS / Directed, partitioning, boxes), :mod:`.cli` (the ``deid`` command); top-level modules are
shared by them (spec, io, hierarchy, detect, assess, report, errors).
"""
from .algorithm.optimal import OptimalRelease, optimal_release
from .assess import Assessment, assess
from .assessing import ReleaseAssessment, assess_release
from .errors import DeidInputError, DeidWarning
from .hierarchy import Hierarchy, build_hierarchy, from_csv
from .io import read_table, write_table
from .longitudinal.assessment import AttackOptions
from .metric import (discernibility, missingness, missingness_change, non_uniform_entropy, numeric_utility,
                     precision)
from .release_search import SearchOptions, SearchResult, search_release
from .releasing import apply_policy
from .report import build_report, release_page, render_html
from .risk import (PR_BREACH, EncodedTable, attack_assessment, conditional_threshold, encode_table,
                   instance_disclosure, journalist, k_for_threshold, marketer, meets, per_record,
                   population_risk, pr_acquaintance, prosecutor, summarize)
from .spec import SUPPRESSED, HierarchySpec, ReleaseSpec, Spec, load_spec, parse_spec
from .transform import (RESTRICTED_ZIP3_2000, Policy, frequency_check, full_domain_policy, generalize_intervals,
                        pseudonymize, randomize, safe_harbor, safe_harbor_policy)

__all__ = [
    "Assessment", "assess", "generalize_intervals", "DeidInputError", "DeidWarning", "Hierarchy",
    "build_hierarchy", "from_csv", "read_table", "write_table", "frequency_check", "pseudonymize", "randomize",
    "discernibility", "missingness", "missingness_change", "non_uniform_entropy", "numeric_utility", "precision",
    "build_report", "render_html", "PR_BREACH", "EncodedTable", "attack_assessment", "conditional_threshold",
    "encode_table", "instance_disclosure", "journalist", "k_for_threshold", "marketer", "meets", "per_record",
    "population_risk", "pr_acquaintance", "prosecutor", "summarize", "RESTRICTED_ZIP3_2000", "safe_harbor",
    "safe_harbor_policy", "SUPPRESSED", "HierarchySpec", "ReleaseSpec", "Spec", "load_spec", "parse_spec",
    "Policy", "full_domain_policy", "OptimalRelease", "optimal_release", "ReleaseAssessment", "assess_release",
    "AttackOptions", "release_page", "SearchOptions", "SearchResult", "search_release", "apply_policy",
]
