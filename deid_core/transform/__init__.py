"""Transformations and the re-appliable policy (docs/deid.md; El Emam & Arbuckle, Anonymizing Health
Data, ch. 5 and ch. 11; HIPAA Safe Harbor as in Benitez, Loukides & Malin 2010, Appendix A).

* :mod:`.ops` — the policy steps (drop, generalize, map, suppression) and the op registry;
* :mod:`.policy` — :class:`Policy` (apply, save, load) and the full-domain policy of a lattice node;
* :mod:`.safe_harbor` — HIPAA Safe Harbor as a policy;
* :mod:`.dates` — dates generalized as intervals that keep their order;
* :mod:`.masking` — pseudonyms and keyed randomization of direct identifiers.
"""
from .dates import generalize_intervals, interval_bins
from .masking import frequency_check, pseudonymize, randomize
from .ops import OPS, map_categories, set_marker
from .policy import Policy, full_domain_policy
from .safe_harbor import RESTRICTED_ZIP3_2000, SAFE_HARBOR_KINDS, restricted_zip3, safe_harbor, safe_harbor_policy, zip3

__all__ = [
    "generalize_intervals", "interval_bins", "frequency_check", "pseudonymize", "randomize", "OPS", "map_categories",
    "set_marker", "Policy", "full_domain_policy", "RESTRICTED_ZIP3_2000", "SAFE_HARBOR_KINDS", "restricted_zip3",
    "safe_harbor", "safe_harbor_policy", "zip3",
]
