"""Progress bars for long phases (tqdm on stderr; silent when stderr is not a terminal)."""
from __future__ import annotations

from tqdm import tqdm


def bar(total: int | None, description: str, enabled: bool | None = None, unit: str = "it") -> tqdm:
    """A tqdm bar; ``enabled=None`` shows it only on a terminal."""
    return tqdm(total=total, desc=description, unit=unit, disable=None if enabled is None else not enabled,
                leave=False, dynamic_ncols=True, mininterval=0.5, unit_scale=unit == "B")


def tqdm_rows(items, description: str, enabled: bool | None = None):
    """Iterate ``items`` with a bar (``enabled=None``: only on a terminal)."""
    return tqdm(items, desc=description, unit="row", disable=None if enabled is None else not enabled,
                leave=False, dynamic_ncols=True, mininterval=0.5)
