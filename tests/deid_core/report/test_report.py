"""Portable policies: a saved policy and its hierarchies re-apply after their folder is moved."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd

from deid_core.cli import main
from deid_core.hierarchy import portable
from deid_core.io import read_table
from deid_core.spec import HierarchySpec
from deid_core.transform import Policy

RACE = "White;Non-white;*\nBlack;Non-white;*\nAsian;Non-white;*\n"


def _folder(root: Path) -> Path:
    folder = root / "release-2026"
    (folder / "hierarchies").mkdir(parents=True)
    (folder / "hierarchies" / "race.csv").write_text(RACE)
    (folder / "spec.toml").write_text('[columns]\nname = "direct"\nrace = "quasi"\nage = "quasi"\n'
                                      '[hierarchies]\nrace = { csv = "hierarchies/race.csv" }\n'
                                      'age = { builder = "interval", widths = [10] }\n')
    pd.DataFrame({"name": ["a", "b", "c", "d"], "race": ["White", "Black", "Asian", "White"],
                  "age": ["34", "37", "52", "58"]}).to_csv(folder / "data.csv", index=False)
    return folder


def test_saved_policy_reapplies_after_its_folder_is_moved(tmp_path):
    folder = _folder(tmp_path)
    assert main(["assess", "--input", str(folder / "data.csv"), "--spec", str(folder / "spec.toml"), "--report",
                 str(folder / "r.json"), "--levels", "race=1,age=1", "--policy-out", str(folder / "policy.json"),
                 "--out", str(folder / "release.csv")]) == 0
    saved = json.loads((folder / "policy.json").read_text())
    race = next(s for s in saved["steps"] if s.get("column") == "race")["hierarchy"]
    assert race["rows"][0] == ["White", "Non-white", "*"] and str(tmp_path) not in json.dumps(saved)
    moved = tmp_path / "next-year" / "release-2026"
    shutil.move(folder, moved)
    assert main(["apply", "--input", str(moved / "data.csv"), "--policy", str(moved / "policy.json"),
                 "--out", str(moved / "again.csv")]) == 0
    assert (moved / "again.csv").read_text() == (moved / "release.csv").read_text()


def test_large_hierarchies_are_referenced_relative_to_the_policy(tmp_path):
    folder = _folder(tmp_path)
    csv = HierarchySpec.from_dict("race", {"csv": "hierarchies/race.csv"}, folder)
    assert portable(csv, max_rows=2) is csv                                # too large to embed: kept as a file
    policy = Policy([{"op": "generalize", "column": "race", "hierarchy": csv.to_dict(), "level": 1}])
    policy.save(folder / "policy.json")
    assert json.loads((folder / "policy.json").read_text())["steps"][0]["hierarchy"]["csv"] == "hierarchies/race.csv"
    data = read_table(folder / "data.csv")
    expected, _ = policy.apply(data)
    moved = tmp_path / "elsewhere"
    shutil.move(folder, moved)
    again, _ = Policy.load(moved / "policy.json").apply(data)
    pd.testing.assert_frame_equal(again, expected)


def test_older_policies_with_absolute_paths_still_load(tmp_path):
    folder = _folder(tmp_path)
    absolute = str((folder / "hierarchies" / "race.csv").resolve())
    (tmp_path / "old.json").write_text(json.dumps({"format": "deid_core.policy", "version": 1, "steps": [
        {"op": "generalize", "column": "race", "hierarchy": {"builder": "csv", "csv": absolute}, "level": 1}]}))
    out, _ = Policy.load(tmp_path / "old.json").apply(read_table(folder / "data.csv"))
    assert list(out["race"].astype(str)) == ["Non-white"] * 4
