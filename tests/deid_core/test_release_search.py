"""The search as a library call: options checked for every caller (the method's options, ranges), errors
naming the parameters as the library spells them while ``deid search`` names its flags, and the same
search from the library and from the command line."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from deid_core.cli import main
from deid_core.errors import ParameterError
from deid_core.release_search import SearchOptions, search_release
from deid_core.spec import load_spec

SPEC = """[columns]
name = "direct"
age = "quasi"
zip = "quasi"
diagnosis = "other"

[hierarchies]
age = { builder = "interval", widths = [5, 10, 20] }
zip = { builder = "prefix", levels = 5 }
"""


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    folder = tmp_path_factory.mktemp("search")
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"name": [f"p{i}" for i in range(400)], "age": rng.integers(20, 80, 400).astype(str),
                          "zip": [f"0213{d}" for d in rng.integers(0, 10, 400)],
                          "diagnosis": rng.choice(["a", "b", "c"], 400)})
    frame.to_csv(folder / "t.csv", index=False)
    (folder / "spec.toml").write_text(SPEC)
    return folder, frame, load_spec(folder / "spec.toml")


def test_options_are_checked_for_every_caller_and_named_as_the_library_spells_them():
    with pytest.raises(ParameterError) as refused:
        SearchOptions(method="bps", top=3).resolved()
    assert str(refused.value) == "top applies to method ola, lola, not bps"
    assert refused.value.flagged() == "--top applies to --method ola, lola, not bps"
    for options, said in ((SearchOptions(k=0), "k must lie in [1, inf], got 0"),
                          (SearchOptions(threshold=1.5), "threshold must lie in (0, 1], got 1.5"),
                          (SearchOptions(k=2.5), "k must be a whole number, got 2.5"),
                          (SearchOptions(loss="bits"), "loss must be one of nue, geometric")):
        with pytest.raises(ParameterError, match=said.replace("(", r"\(").replace("[", r"\[")):
            options.resolved()
    resolved = SearchOptions(method="ola").resolved()
    assert (resolved.top, resolved.loss, resolved.sampling_fraction) == (10, "nue", None)
    assert resolved.resolved() == resolved                        # resolving twice changes nothing


def test_the_library_and_deid_search_find_the_same_policy(table, tmp_path, capsys):
    folder, frame, spec = table
    found = search_release(frame, spec, SearchOptions(method="ola", k=5, apply_best=True))
    assert found.best_policy is not None and found.summary["best_reassessed"]["k_min"] >= 5
    assert "name" not in found.release.columns and len(found.release) == len(frame)
    assert main(["search", "--input", str(folder / "t.csv"), "--spec", str(folder / "spec.toml"), "--method", "ola",
                 "--k", "5", "--report", str(tmp_path / "r.json")]) == 0
    written = json.loads((tmp_path / "r.json").read_text())
    assert written["best_policy"]["steps"] == found.summary["best_policy"]["steps"]
    capsys.readouterr()
    assert main(["search", "--input", str(folder / "t.csv"), "--spec", str(folder / "spec.toml"), "--method", "bps",
                 "--top", "3", "--report", str(tmp_path / "s.json")]) == 2
    assert capsys.readouterr().err.strip() == "deid: error: --top applies to --method ola, lola, not bps"
    assert not (tmp_path / "s.json").exists()
