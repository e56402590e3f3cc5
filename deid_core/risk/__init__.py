"""Re-identification risk (docs/deid.md, "Measures"; El Emam & Arbuckle, Anonymizing Health Data, ch. 2).

* :mod:`.attack` — the attack model (T1–T4), thresholds and the one release verdict (:func:`release_verdict`);
* :mod:`.classes` — equivalence classes on integer codes (packed keys, class sizes);
* :mod:`.encoding` — a table encoded once as hierarchy leaf codes (:class:`EncodedTable`);
* :mod:`.population` — population tables and class sizes re-counted in a released population;
* :mod:`.measures` — prosecutor, journalist, marketer, population risk, instance disclosure;
* :mod:`.summary` — every applicable measure of one class computation, summarized and per record;
* :mod:`.covering` — covering designs C(v, k, t) and the Schönheim bound; :mod:`.known` — the risk when the
  adversary knows m of the n QIs, the largest over a design's blocks (imported on use).
"""
from .attack import (PR_BREACH, THRESHOLD_TABLE, attack_assessment, attack_probabilities,
                     conditional_risk, conditional_threshold, k_for_threshold, release_average_cap, release_conditional_threshold,
                     release_k, release_measure, release_verdict, meets, overall_risk, pr_acquaintance)
from .equivalence_classes import Classes, ec_sizes_of, match_any_sizes, pack_keys, sizes_from_keys
from .encoding import EncodedTable, encode_table
from .measures import instance_disclosure, journalist, marketer, population_risk, prosecutor
from .population import EncodedPopulation, population_risk_of_release, release_class_sizes, validate_population
from .summary import per_record, summarize

__all__ = [
    "PR_BREACH", "THRESHOLD_TABLE", "attack_assessment", "attack_probabilities",
    "conditional_risk", "conditional_threshold", "k_for_threshold", "release_average_cap", "release_conditional_threshold",
    "release_k", "release_measure", "release_verdict", "meets", "overall_risk", "pr_acquaintance", "Classes", "ec_sizes_of",
    "match_any_sizes", "pack_keys", "sizes_from_keys", "EncodedTable", "encode_table", "instance_disclosure",
    "journalist", "marketer", "population_risk", "prosecutor", "EncodedPopulation", "population_risk_of_release",
    "release_class_sizes", "validate_population", "per_record", "summarize",
]
