"""The page of ``deid search --html``: the search's settings, its policies plotted as risk against
information loss, and the best policy."""
from __future__ import annotations

import json
from typing import Any, Mapping

from .document import Document, Figure, Preformatted, Section, Table
from .figures import search_plot
from .render import render


def search_document(result: Mapping[str, Any]) -> Document:
    """The page of a ``deid search`` result dict."""
    settings = [[str(k), v] for k, v in result.items() if k not in ("policies", "best_policy")]
    best = result["policies"][0] if result.get("policies") else {}
    return Document("De-identification policy search", sections=[
        Section("Settings and result", [Table([], settings, row_header=True),
                                        Figure(search_plot(dict(result)), "risk vs information loss")]),
        Section("Best policy", [Preformatted(json.dumps(best, indent=2, default=float)[:20000])]),
    ])


def render_search_html(result: Mapping[str, Any]) -> str:
    """A self-contained page: the search's settings, the policies plot and the best policy."""
    return render(search_document(result))
