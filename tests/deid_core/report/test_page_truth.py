"""What the assessment page says is true: a release that fails its threshold is never offered for
re-application, and cells an earlier ``deid codes`` suppressed show as suppressed, not as "0"."""
from __future__ import annotations

import pandas as pd

from deid_core.cli import main
from deidspecs import write_claims


def test_a_failing_release_is_not_offered_for_reapplication(tmp_path, capsys):
    data, spec = write_claims(tmp_path)
    page = tmp_path / "r.html"
    assert main(["assess", "--input", str(data), "--spec", str(spec), "--report", str(tmp_path / "r.json"),
                 "--html", str(page)]) == 0
    text = page.read_text()
    assert "does NOT meet its threshold" in text and "can be released the same way" not in text
    assert "does NOT meet the threshold 0.2" in capsys.readouterr().out


def test_codes_suppressed_before_the_assessment_show_on_the_page(tmp_path, capsys):
    # the defect: after deid codes removed every dx code, the page said dx was generalized, "cells suppressed 0"
    data, spec = write_claims(tmp_path)
    coded, page = tmp_path / "c.csv", tmp_path / "c.html"
    assert main(["codes", "--input", str(data), "--spec", str(spec), "--suppress", "--code", "dx", "--k", "5",
                 "--out", str(coded), "--force"]) == 0
    gone = int((pd.read_csv(coded, dtype=str)["dx"] == "[suppressed]").sum())
    assert main(["assess", "--input", str(coded), "--spec", str(spec), "--levels", "dx=2", "--report",
                 str(tmp_path / "c.json"), "--html", str(page)]) == 0
    text = page.read_text().lower()
    assert gone == 240 and "nothing left to change: every cell was already missing or suppressed in the input" in text


def test_plot_axes_count_persons_for_longitudinal_data(tmp_path, monkeypatch):
    # the defect: the axes said "records" where the numbers were persons. The labels the real plots set are
    # recorded on their way to matplotlib.
    from matplotlib.axes import Axes

    from deid_core.assess import assess
    from deid_core.io import read_table
    from deid_core.report import plots
    from deid_core.spec import load_spec

    labels: list[str] = []
    for name in ("set_xlabel", "set_ylabel"):
        original = getattr(Axes, name)
        monkeypatch.setattr(Axes, name, lambda self, text, *a, _o=original, **k: (labels.append(text),
                                                                                  _o(self, text, *a, **k))[1])
    data, spec = write_claims(tmp_path)
    a = assess(read_table(data), load_spec(spec), levels={"dx": 2})
    plots(a)
    assert "persons" in labels and "persons (sorted by risk, highest first)" in labels and "risk per person" in labels
    assert not any("record" in label for label in labels), labels
