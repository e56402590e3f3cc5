"""Release pages and summaries say what was measured: the k line and its text come from the verdict's own
criterion, ``deid search`` ends with its best node, the node's risk and suppression and every file written,
the workbench writes numbers one way, plot ticks never run into one another, tables scroll instead of being
cut off, and ``deid assess`` advises a longitudinal person column only for a column that identifies a person."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deid_core.cli import main
from deid_core.io import read_table
from deid_core.risk import release_k
from deid_core.spec import ReleaseSpec, load_spec
from test_one_verdict import COLUMNS, linked  # noqa: F401 - the linked FEBRL table fixture


def _text(html: str) -> str:
    import html as markup

    return markup.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)))


def test_the_k_line_and_its_text_come_from_the_criterion(linked, tmp_path, capsys, monkeypatch):
    """Non-public, 0.05, Pr(T) 0.27: the strict average lets classes of 4 stand (their risk 1/4 is under the
    cut 0.33, the average then counts) as long as the average stays at or under 0.185; the page said k = 20."""
    import matplotlib.axes

    spec = tmp_path / "release.toml"
    spec.write_text(COLUMNS + '\n[release]\ntype = "non-public"\nthreshold = 0.05\n')
    policy, page = tmp_path / "policy.json", tmp_path / "apply.html"
    assert main(["search", "--input", str(linked), "--spec", str(spec), "--method", "ola", "--max-suppression",
                 "0.05", "--policy-out", str(policy), "--report", str(tmp_path / "s.json")]) == 0
    lines: list[str] = []
    levels: list[str] = []
    vline, hline = matplotlib.axes.Axes.axvline, matplotlib.axes.Axes.axhline
    monkeypatch.setattr(matplotlib.axes.Axes, "axvline",
                        lambda self, x=0, *a, **kw: (lines.append(kw.get("label", "")), vline(self, x, *a, **kw))[1])
    monkeypatch.setattr(matplotlib.axes.Axes, "axhline",
                        lambda self, y=0, *a, **kw: (levels.append(kw.get("label", "")), hline(self, y, *a, **kw))[1])
    assert main(["apply", "--input", str(linked), "--policy", str(policy), "--spec", str(spec), "--html", str(page),
                 "--out", str(tmp_path / "release.csv")]) == 0
    text = _text(page.read_text())
    k = release_k(ReleaseSpec(type="non-public", threshold=0.05))
    assert k == 4
    assert "k = 20" not in text and lines == [f"k = {k}"], lines
    assert levels == ["threshold 0.05 / Pr(T) 0.27 = 0.1852"], levels  # a record's risk is Pr(re-id | T)
    assert f"every equivalence class must hold at least k = {k} records" in text
    assert "the average risk must stay at or under 0.1852" in text
    assert "The released data meet the threshold 0.05" in text


def test_a_public_release_keeps_k_of_its_threshold():
    assert release_k(ReleaseSpec(type="public", threshold=0.05)) == 20
    assert release_k(ReleaseSpec(type="public", threshold=0.09)) == 12


def test_search_ends_with_its_best_node_risk_suppression_and_files(linked, tmp_path, capsys):
    spec = tmp_path / "release.toml"
    spec.write_text(COLUMNS + '\n[release]\ntype = "non-public"\nthreshold = 0.05\n')
    out, html, policy = tmp_path / "s.json", tmp_path / "s.html", tmp_path / "policy.json"
    capsys.readouterr()
    assert main(["search", "--input", str(linked), "--spec", str(spec), "--method", "ola", "--max-suppression",
                 "0.05", "--report", str(out), "--html", str(html), "--policy-out", str(policy)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    last = lines[0]
    for f in (out, html, policy):
        assert str(f) in last, last
    assert re.search(r"best: postcode \d, state \d, date_of_birth \d, overall risk [\d.]+ meets the threshold 0.05",
                     last), last
    assert re.search(r"[\d,]+ of 2,000 records suppressed \([\d.]+ %\)", last), last
    assert "policy(ies)" not in last
    page = _text(html.read_text())
    assert "k: every class holds at least 4" in page and "k: every class holds at least 20" not in page


def test_workbench_numbers_are_written_one_way():
    from deid_core.ui.views import number, table

    assert number(80094.52) == "80,090" and number(100521) == "100,521" and number(5001.0) == "5,001"
    assert number(0.02179) == "0.02179"
    html = table(["loss", "records"], [[80094.52, 100521], [1234.5, 5001]])
    assert "e+" not in html and "80,090" in html and "1,234" in html
    assert html.startswith("<div class='wide'>")


def test_tables_scroll_rather_than_being_cut_off():
    from deid_core.report import CSS, Table, render, Document, Section

    assert "div.wide{overflow-x:auto" in CSS and "td:not(.num){overflow-wrap:anywhere}" in CSS
    page = render(Document("t", "", [Section("s", [Table(["a"], [["x" * 300]])])], []))
    assert "<div class='wide'><table>" in page
    css = (Path(__file__).resolve().parents[2] / "deid_core" / "ui" / "static" / "app.css").read_text()
    assert "div.wide{overflow-x:auto" in css


@pytest.mark.parametrize("top", [9, 120, 100_521])
def test_log_axis_tick_labels_never_overlap(top):
    """The risk-per-record plot of a large table labelled 500 and 1,000 side by side ("5001,000")."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from deid_core.report.figures import _plain_ticks

    fig, ax = plt.subplots(figsize=(6, 3.2))
    x = np.arange(1, top + 1)
    ax.plot(x, 1.0 / x)
    ax.set_xscale("log")
    _plain_ticks(ax.xaxis)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    labels = [t for t in ax.xaxis.get_ticklabels() if t.get_visible() and t.get_text()]
    assert len(labels) >= 2
    boxes = sorted((t.get_window_extent(renderer) for t in labels), key=lambda b: b.x0)
    for left, right in zip(boxes, boxes[1:]):
        assert left.x1 <= right.x0 + 0.5 or left.y1 <= right.y0 + 0.5, [t.get_text() for t in labels]
    assert all("e" not in t.get_text() and "×" not in t.get_text() for t in labels)
    plt.close(fig)


def test_assess_advises_a_person_column_only_for_a_person_id(linked, tmp_path, capsys):
    """Names and addresses repeat across different people: no [longitudinal] advice for them; a patient id
    whose rows share a date of birth gets it."""
    spec = tmp_path / "release.toml"
    spec.write_text(COLUMNS + '\n[release]\ntype = "non-public"\nthreshold = 0.05\n')
    capsys.readouterr()
    assert main(["assess", "--input", str(linked), "--spec", str(spec), "--report", str(tmp_path / "a.json")]) == 0
    err = capsys.readouterr().err
    assert "[longitudinal]" not in err, err
    rows = [(f"p{p:03d}", "FM"[p % 2], f"19{40 + p % 50}-0{1 + p % 9}-1{p % 10}", f"{250 + e % 6}")
            for p in range(80) for e in range(1 + p % 4)]
    claims = tmp_path / "claims.csv"
    pd.DataFrame(rows, columns=["pid", "sex", "dob", "dx"]).to_csv(claims, index=False)
    cspec = tmp_path / "claims.toml"
    cspec.write_text('[columns]\npid = "direct"\nsex = "quasi"\ndob = "quasi"\ndx = "quasi"\n')
    assert main(["assess", "--input", str(claims), "--spec", str(cspec), "--report", str(tmp_path / "c.json")]) == 0
    err = capsys.readouterr().err
    assert '[longitudinal] person = "pid"' in err and err.count("[longitudinal]") == 1, err


def test_the_workbench_states_the_verdict_deid_apply_will_give(linked, tmp_path):
    """The candidates of a search open with the best candidate's release verdict, the figure of deid search's last
    line and of deid apply's page; information loss is written out, never as 8.009e+04."""
    from deid_core.release_search import SearchOptions, search_release
    from deid_core.ui import views
    from deid_core.ui.workspace import SearchJob, Workspace

    spec = tmp_path / "release.toml"
    spec.write_text(COLUMNS + '\n[release]\ntype = "non-public"\nthreshold = 0.05\n')
    s = load_spec(spec)
    df = read_table(linked, s.missing_values)
    result = search_release(df, s, SearchOptions(method="ola", max_suppression=0.05)).summary
    job = SearchJob(method="ola", finished=True, result=result, command="deid search …")
    html = views.candidates_view(Workspace(id="a" * 32, folder=tmp_path, job=job), plot="")
    text = _text(html)
    rv = result["release_verdict"]
    assert rv["meets"] and f"overall risk {views.number(rv['overall_risk'])}" in text
    assert "The best candidate's release meets the threshold 0.05" in text
    assert "e+" not in text and re.search(r"\d{1,3},\d{3}", text)
