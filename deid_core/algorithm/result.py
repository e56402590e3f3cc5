"""The result of a policy search, as ``deid search`` writes it (docs/deid_search.md)."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Callable


@dataclass
class SearchResult:
    """One search: its policies best first, the nodes (or policies) evaluated, the time, method extras."""

    method: str
    policies: list[dict]
    nodes_evaluated: int
    seconds: float
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"method": self.method, "policies": self.policies, "nodes_evaluated": self.nodes_evaluated,
                "seconds": round(self.seconds, 4), **self.extra}


def progress_printer(total: int) -> Callable[[int], None]:
    """A tqdm bar on stderr that only appears once a search has run for more than 2 s."""
    from tqdm import tqdm

    bar = tqdm(total=total, delay=2, file=sys.stderr, desc="deid search", unit="policy", leave=False)

    def report(done: int) -> None:
        bar.update(done - bar.n)
        if done >= total:
            bar.close()
    return report
