"""Medical codes in longitudinal data (El Emam & Arbuckle, ch. 10, "Medical Codes: A Hackathon").

* :func:`suppress_codes` — within each equivalence class of the generalized
  level-1 QIs plus level-2 nesting QIs (e.g. place of care), count the
  *distinct persons* holding each code group; where fewer than k, the code is
  suppressed in every row of those persons in that class (and in connected
  fields such as the description) (ch. 10, "Suppression").
* :func:`shuffle_codes` — within each (class + nesting QIs + generalized code
  group), deal the original codes out again in a uniformly random order
  (ch. 10, "Shuffling": the codes and their frequencies are kept, the link
  code-person is broken). Connected fields move with their code.
* :func:`atc_rows` — ATC drug-code levels (7 → 5 → 4 → 3 → 1 characters → ``*``), the ``atc``
  hierarchy builder of :mod:`deid_core.hierarchy`, re-exported here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import DeidInputError
from ..hierarchy import atc_rows
from ..spec import SUPPRESSED
from .integer_codes import factorize, joint_codes, require_columns
from .persons import person_codes

__all__ = ["CodeSuppression", "atc_rows", "shuffle_codes", "suppress_codes"]


@dataclass(frozen=True)
class CodeSuppression:
    """Outcome of :func:`suppress_codes`."""

    frame: pd.DataFrame
    suppressed_rows: int
    suppressed_persons: int  # distinct persons who lost at least one code
    groups: int              # (class, code group) cells below k

    def summary(self) -> dict:
        return {"suppressed_rows": self.suppressed_rows, "suppressed_persons": self.suppressed_persons,
                "groups_below_k": self.groups}


def suppress_codes(df: pd.DataFrame, *, person: str, code: str, classes: Sequence[str], k: int,
                   group: str | None = None, connected: Sequence[str] = (), marker: str = SUPPRESSED,
                   ) -> CodeSuppression:
    """Suppress codes whose group is held by fewer than ``k`` distinct persons within their class.

    ``classes``: generalized level-1 QIs plus any level-2 nesting QIs.
    ``group``: column with the generalized code group (default: the code itself).
    ``connected``: further columns suppressed together with the code (descriptions).
    Missing codes are not counted and not suppressed.
    """
    if k < 1:
        raise DeidInputError(f"k {k} is below 1")
    pcode, _ = person_codes(df, person)
    group = group or code
    require_columns(df, [code, group, *connected], "code")
    require_columns(df, classes, "class")
    present = df[code].notna().to_numpy()
    cell = joint_codes(pd.DataFrame({"c": joint_codes(df, list(classes)), "g": factorize(df[group])[0]}), ["c", "g"])
    n_cells = int(cell.max()) + 1
    pairs = np.unique(cell[present] * (int(pcode.max()) + 1) + pcode[present])
    persons_per_cell = np.bincount(pairs // (int(pcode.max()) + 1), minlength=n_cells)
    low = present & (persons_per_cell[cell] < k)
    out = df.copy()
    for c in dict.fromkeys([code, *connected]):
        col = out[c].astype(object)
        col[low] = marker
        out[c] = col
    return CodeSuppression(out, int(low.sum()), int(np.unique(pcode[low]).size),
                           int(np.unique(cell[low]).size))


def shuffle_codes(df: pd.DataFrame, *, code: str, keys: Sequence[str], connected: Sequence[str] = (),
                  seed: int = 0) -> pd.DataFrame:
    """Uniformly permute ``code`` (and ``connected`` columns with it) among the rows of each ``keys`` group.

    ``keys``: the swapping keys — generalized level-1 QIs, nesting QIs and the
    generalized code group. Each group gets an independent uniformly random
    permutation, drawn for all groups at once: rows are ordered by (group,
    independent uniform key), which is a uniform shuffle of every group, like
    a Fisher–Yates shuffle per group, without a Python loop over groups.
    """
    require_columns(df, [code, *connected], "code")
    require_columns(df, keys, "swapping key")
    g = joint_codes(df, list(keys))
    rng = np.random.default_rng(seed)
    rows = np.argsort(g, kind="stable")              # slots of each group, in row order
    dealt = np.lexsort((rng.random(len(df)), g))     # the same group's rows, shuffled
    out = df.copy()
    for c in dict.fromkeys([code, *connected]):
        vals = df[c].to_numpy(copy=True)
        new = vals.copy()
        new[rows] = vals[dealt]
        out[c] = pd.Series(new, index=df.index, dtype=df[c].dtype)
    return out
