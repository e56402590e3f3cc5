"""The result of a policy search, as ``deid search`` writes it (docs/deid_search.md)."""
from __future__ import annotations

import sys
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable

#: Where a search reports its progress instead of drawing a bar on stderr: ``sink(done, total)``. Unset (the
#: CLI), searches draw a tqdm bar after 2 s; the workbench (``deid ui``) sets it for the search it runs.
progress_sink: ContextVar[Callable[[int, int], None] | None] = ContextVar("progress_sink", default=None)


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


class _SinkBar:
    """The part of tqdm's interface the searches use, reporting to :data:`progress_sink`."""

    def __init__(self, total: int, sink: Callable[[int, int], None]) -> None:
        self.n, self.total, self._sink = 0, int(total), sink
        sink(0, self.total)

    def update(self, step: int = 1) -> None:
        self.n += step
        self._sink(self.n, self.total)

    def close(self) -> None:
        self._sink(self.n, self.total)

    def __enter__(self) -> "_SinkBar":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def progress_bar(total: int, desc: str, unit: str) -> Any:
    """A tqdm bar on stderr shown once a search has run for more than 2 s, or, when :data:`progress_sink`
    is set, an object with the same ``update``/``close`` that reports to it."""
    sink = progress_sink.get()
    if sink is not None:
        return _SinkBar(total, sink)
    from tqdm import tqdm
    return tqdm(total=total, delay=2, file=sys.stderr, desc=desc, unit=unit, leave=False)


def progress_printer(total: int) -> Callable[[int], None]:
    """A progress bar (:func:`progress_bar`) fed the number of policies done so far."""
    bar = progress_bar(total, "deid search", "policy")

    def report(done: int) -> None:
        bar.update(done - bar.n)
        if done >= total:
            bar.close()
    return report
