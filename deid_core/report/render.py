"""The one HTML renderer of report pages: a :class:`~deid_core.report.document.Document` as a
self-contained, offline page (one stylesheet, plots inlined as PNG data URIs), and the one way numbers
are written on a page (:func:`fmt`, :func:`pct`)."""
from __future__ import annotations

import html
from typing import Any, Sequence

from .document import Block, Change, Document, Figure, Mark, Paragraph, Preformatted, Section, Strong, Table, Verdict

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;max-width:62em;margin:2em auto;
padding:0 1em;line-height:1.45}
h1{font-size:1.7em;margin-bottom:.2em}h2{border-bottom:2px solid #4472c4;padding-bottom:.15em;margin-top:1.8em}
h3{margin-top:1.3em}.meta{color:#555}
table{border-collapse:collapse;margin:.6em 0 1em;font-size:.95em}div.wide{overflow-x:auto;max-width:100%}
th,td{border:1px solid #ccd;padding:4px 8px;text-align:left;vertical-align:top}td:not(.num){overflow-wrap:anywhere}
thead th{background:#eef2fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#176d2c;font-weight:600}.fail{color:#b00020;font-weight:600}
.verdict{padding:.7em 1em;border-radius:6px;margin:1em 0;border:1px solid}
.verdict.pass{background:#eaf6ec;border-color:#9ccaa5}.verdict.fail{background:#fdecee;border-color:#e6a1aa}
.verdict.neutral{background:#f4f4f4;border-color:#bbb;font-weight:600}
p.flag{background:#fff4e0;border-left:4px solid #e69500;padding:.4em .8em;font-weight:600}
pre{background:#f6f6f6;padding:1em;overflow:auto;font-size:.85em;max-height:30em}
pre.cmd{white-space:pre-wrap;overflow-wrap:anywhere;max-height:none}code{background:#f2f2f2;padding:0 .2em}.small{font-size:.85em;color:#555}
figure{display:inline-block;margin:.5em 1em .5em 0}figcaption{font-size:.85em;color:#555}
ol.sources li{margin-bottom:.3em}
@media print{body{max-width:none;margin:0}figure,tr,.verdict,p.flag{break-inside:avoid}h2,h3{break-after:avoid}}
"""

_esc = html.escape


def fmt(v: Any) -> str:
    """A value as a page shows it: at most 4 significant digits, thousands separated, yes/no, — for none."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if 1e3 <= abs(v) < 1e15:  # 4 significant digits, written out: 42,560 rather than 4.256e+04, as counts are
            return f"{float(f'{v:.4g}'):,.0f}"
        return f"{v:.4g}"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, (list, tuple)):
        return ", ".join(fmt(x) for x in v) or "—"
    if isinstance(v, dict):
        return "; ".join(f"{k}: {fmt(x)}" for k, x in v.items()) or "—"
    return str(v)


def pct(x: float | None) -> str:
    """A share as a percentage with two decimals, at most 4 significant digits (100 %; — for none)."""
    if x is None:
        return "—"
    return f"{100 * x:.2f} %" if abs(x) < 1 else f"{100 * x:.4g} %"


def _inline(v: Any) -> str:
    if isinstance(v, Strong):
        return f"<b>{_esc(v.text)}</b>"
    if isinstance(v, Change):
        return f"<code>{_esc(v.before)}</code> → <code>{_esc(v.after)}</code>"
    if isinstance(v, Mark):
        return "<span class='pass'>meets</span>" if v.ok else "<span class='fail'>does not meet</span>"
    return _esc(fmt(v))


def _table(t: Table) -> str:
    def cell(i: int, v: Any) -> str:
        if i == 0 and t.row_header:
            return f"<th>{_inline(v)}</th>"
        return f"<td class='num'>{_inline(v)}</td>" if i in t.numeric else f"<td>{_inline(v)}</td>"
    head = "".join(f"<th>{_esc(h)}</th>" for h in t.header)
    body = "".join("<tr>" + "".join(cell(i, v) for i, v in enumerate(r)) + "</tr>" for r in t.rows)
    return ("<div class='wide'>" + (f"<table><thead><tr>{head}</tr></thead>" if t.header else "<table>")
            + f"<tbody>{body}</tbody></table></div>")


def _block(block: Block, depth: int) -> list[str]:
    if isinstance(block, Section):
        return _section(block, depth + 1)
    if isinstance(block, Paragraph):
        return [f"<p class='{block.style}'>{_esc(block.text)}</p>" if block.style else f"<p>{_esc(block.text)}</p>"]
    if isinstance(block, Table):
        return [_table(block)]
    if isinstance(block, Figure):
        cap = _esc(block.caption)
        return [f"<figure><img alt='{cap}' src='data:image/png;base64,{_esc(block.png_base64)}'>"
                f"<figcaption>{cap}</figcaption></figure>"]
    if isinstance(block, Preformatted):
        return [f"<pre class='{block.style}'>{_esc(block.text)}</pre>" if block.style else f"<pre>{_esc(block.text)}</pre>"]
    if isinstance(block, Verdict):
        kind = "neutral" if block.ok is None else ("pass" if block.ok else "fail")
        return [f"<div class='verdict {kind}'>{_esc(block.text)}</div>"]
    raise TypeError(f"not a report block: {type(block).__name__}")


def _section(section: Section, depth: int = 2) -> list[str]:
    parts = [f"<h{depth}>{_esc(section.title)}</h{depth}>"]
    for block in section.blocks:
        parts += _block(block, depth)
    return parts


def render(document: Document) -> str:
    """The page: one stylesheet, the title, the line under it, the sections, the numbered sources."""
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{_esc(document.title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{_esc(document.title)}</h1>",
    ]
    if document.meta:  # text content: quotes need no escaping outside attributes
        parts.append(f"<p class='meta'>{_esc(document.meta, quote=False)}</p>")
    for section in document.sections:
        parts += _section(section)
    if document.sources:
        items = "".join(f"<li>{_esc(s)}</li>" for s in document.sources)
        parts += ["<h2>Sources</h2>", f"<ol class='sources'>{items}</ol>"]
    parts.append("</body></html>")
    return "\n".join(parts)


def names(columns: Sequence[str]) -> str:
    """Column names in a sentence ("none" for none)."""
    return ", ".join(columns) if columns else "none"


__all__ = ["CSS", "fmt", "names", "pct", "render"]
