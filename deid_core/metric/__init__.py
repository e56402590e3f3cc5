"""Information loss and utility — one implementation for reports and searches (El Emam & Arbuckle,
Anonymizing Health Data, ch. 2, "Information Loss Metrics"; ch. 13, "Degrees of Loss").

The DataFrame measures compare a table *before* and *after* a transformation (same rows, same
order); :class:`NodeLoss` measures full-domain lattice nodes from per-level tables with the same
formulas (:func:`entropy_terms`).

* :mod:`.missingness` — record and cell missingness, the suppression marker;
* :mod:`.entropy` — ARX's non-uniform entropy;
* :mod:`.geometric` — ARX's default "Loss";
* :mod:`.classes` — discernibility and average class size;
* :mod:`.precision` — Sweeney's precision;
* :mod:`.numeric` — mean, SD and correlations before/after;
* :mod:`.levels` — the loss of lattice nodes used by the searches.
"""
from .class_loss import average_class_size, discernibility
from .entropy import entropy_terms, frequencies, non_uniform_entropy
from .geometric import geometric_loss, leaf_shares
from .levels import LOSSES, NodeLoss
from .missingness import is_marker, missing_mask, missingness, missingness_change
from .numeric import numeric_utility, to_number
from .precision import precision

__all__ = [
    "average_class_size", "discernibility", "entropy_terms", "frequencies", "non_uniform_entropy", "geometric_loss",
    "leaf_shares", "LOSSES", "NodeLoss", "is_marker", "missing_mask", "missingness", "missingness_change",
    "numeric_utility", "to_number", "precision",
]
