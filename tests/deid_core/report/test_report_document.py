"""The report package: one document model rendered by one renderer (escaped text, numbers at most 4
significant digits, every block kind), a caller's own sections through ``preface``, and the five-step
page drawn from a real assessment."""
from __future__ import annotations

import datetime as dt

import pandas as pd

from deid_core import assess_release
from deid_core.report import (Change, Document, Figure, Mark, Paragraph, Preformatted, Section, Strong, Table,
                              Verdict, assessment_document, build_report, fmt, pct, release_page, render)
from deid_core.spec import parse_spec


def test_every_block_renders_escaped_with_numbers_rounded():
    doc = Document("A <page>", "meta: Arbuckle's & co", [
        Section("One & two", [
            Paragraph("x < y"), Paragraph("small print", style="small"),
            Table(["name", "value"], [[Strong("a<b"), 0.123456789], ["big", 123456.789], ["none", None],
                                      ["flag", True], ["change", Change("02139", "021")], ["ok", Mark(False)]],
                  numeric=(1,)),
            Table([], [["setting", 12345]], row_header=True),
            Figure("AAAA", "a 'plot'"), Preformatted("deid apply --x", style="cmd"), Preformatted('{"a": 1}'),
            Verdict(True, "meets"),
            Section("Sub", [Paragraph("inside")]),
        ])], sources=["Book & author"])
    page = render(doc)
    assert page.startswith("<!doctype html><html lang='en'>") and page.endswith("</body></html>")
    assert page.count("<style>") == 1 and "<title>A &lt;page&gt;</title>" in page and "<h1>A &lt;page&gt;</h1>" in page
    assert "<p class='meta'>meta: Arbuckle's &amp; co</p>" in page
    assert "<h2>One &amp; two</h2>" in page and "<h3>Sub</h3>" in page and "<p>x &lt; y</p>" in page
    assert "<p class='small'>small print</p>" in page
    assert "<td><b>a&lt;b</b></td><td class='num'>0.1235</td>" in page
    assert "<td class='num'>123,500</td>" in page and "<td class='num'>—</td>" in page
    assert "<td class='num'>yes</td>" in page
    assert "<code>02139</code> → <code>021</code>" in page and "<span class='fail'>does not meet</span>" in page
    assert "<table><tbody><tr><th>setting</th><td>12,345</td></tr></tbody></table>" in page
    assert "<img alt='a &#x27;plot&#x27;' src='data:image/png;base64,AAAA'>" in page
    assert "<pre class='cmd'>deid apply --x</pre>" in page and "<pre>{&quot;a&quot;: 1}</pre>" in page
    assert "<div class='verdict pass'>meets</div>" in page
    assert "<h2>Sources</h2>" in page and "<li>Book &amp; author</li>" in page
    assert (fmt(0.047619047619047616), fmt(30162), pct(0.0123456), pct(None)) == ("0.04762", "30,162", "1.23 %", "—")


def _assessed():
    df = pd.DataFrame({"name": [f"n{i}" for i in range(40)], "zip": ["02139", "02140"] * 20,
                       "age": [str(30 + i % 4) for i in range(40)]})
    spec = parse_spec({"columns": {"name": "direct", "zip": "quasi", "age": "quasi"},
                           "release": {"type": "non-public", "threshold": 0.2}})
    return df, assess_release(df, spec)


def test_the_five_step_page_takes_a_callers_sections_first_and_knows_nothing_of_them():
    df, ra = _assessed()
    report = build_report(ra, input_name="t.csv", today=dt.date(2026, 1, 2))
    report["linkage"] = {"table": {"holder": "h"}}      # a caller's own key: kept in the JSON, not drawn
    plain = release_page(ra, report)
    assert "Linkage" not in plain and plain.count("<figure>") == 2
    extra = Section("Where the data came from", [Paragraph("linked first")])
    page = release_page(ra, report, preface=[extra])
    assert (page.index("<h2>Verdict</h2>") < page.index("Where the data came from") < page.index("1. Direct identifiers")
            < page.index("5. Re-assessment"))
    titles = [s.title for s in assessment_document(report).sections]
    assert titles == ["Verdict", "1. Direct identifiers and quasi-identifiers", "2. The threshold",
                      "3. The risk, measured under the plausible attacks", "4. What was done",
                      "5. Re-assessment of the release", "The policy to re-apply"]
    assert "Re-assess between 2027-07-02 and 2028-01-02" in page


def test_utility_page_explains_a_missing_cramers_v_and_opens_with_a_verdict():
    from deid_core.report import render_utility_html

    tab = {"columns": ["sex", "zip"], "tvd": 1.0, "tvd_released_categories": 0.125, "cramers_v_before": 0.2,
           "cramers_v_after": None, "cells_before": 40, "cells_after": 2}
    page = render_utility_html({"original": "o.csv", "released": "r.csv", "records": {"original": 10, "released": 10},
                                "crosstabs": [tab]})
    assert page.index("<h2>Verdict</h2>") < page.index("Cross-tabulations")
    assert "verdict neutral" in page and "not judged against a threshold" in page
    assert "fewer than two categories left" in page and "on the released categories each original value" in page
