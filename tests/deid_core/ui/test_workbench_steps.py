"""The workbench's steps without a browser: progress reported by the search, another OLA node picked and
released (re-assessed, its policy re-appliable), workspaces kept apart and removed."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from deid_core.algorithm.result import progress_sink
from deid_core.cli.search import search_arguments, search_release
from deid_core.io import read_table
from deid_core.transform.policy import Policy
from deid_core.ui.workflow import SearchCommand, load_table, pick_node, start_search, update_form, upload_hierarchy
from deid_core.ui.workspace import Workspaces

QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]


def adult() -> Path:
    for candidate in (Path(__file__).resolve().parents[4] / "shared", Path("/work/shared")):
        if (candidate / "data" / "adult").is_dir():
            return candidate / "data" / "adult"
    pytest.skip("the Adult data set (shared/data/adult) is absent")


@pytest.fixture
def workspaces():
    spaces = Workspaces()
    yield spaces
    spaces.close()
    assert not spaces.root.exists()


def declared(workspaces, folder: Path, name: str = "a" * 32):
    ws = workspaces.get(name)
    load_table(ws, folder / "adult.csv", "adult.csv")
    update_form(ws, {**{f"role:{q}": "quasi" for q in QIS}, "role:salary-class": "sensitive"})
    for q in QIS:
        upload_hierarchy(ws, q, folder / f"adult_hierarchy_{q}.csv", f"adult_hierarchy_{q}.csv")
    return ws


def finished(ws):
    deadline = time.monotonic() + 60
    while not ws.job.finished:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert ws.job.error is None, ws.job.error
    return ws.job


def test_search_reports_progress_and_another_node_can_be_released(workspaces):
    folder = adult()
    ws = declared(workspaces, folder)
    start_search(ws, {"method": "ola", "criterion": "k", "value": "5", "top": "5"},
                 SearchCommand(search_arguments, search_release))
    job = finished(ws)
    assert job.total == 2 * 5 * 2 * 3 * 4 * 3 * 3 * 3 and 0 < job.done <= job.total  # nodes of Adult's lattice
    assert progress_sink.get() is None  # set in the search's own thread only
    second = job.result["policies"][1]
    node = pick_node(ws, 1)
    assert node["report"]["steps"]["5_evidence"]["risk_after"]["k_min"] >= 5
    policy = Policy.load(ws.path("policy.json"))
    levels = {s["column"]: s["level"] for s in policy.steps if s["op"] == "generalize"}
    assert levels == {q: lvl for q, lvl in second["levels"].items() if lvl}
    again, _ = policy.apply(read_table(folder / "adult.csv"))
    assert again.to_csv(index=False) == read_table(ws.path("release.csv")).to_csv(index=False)


def test_workspaces_are_apart_and_capped():
    spaces = Workspaces(limit=2)
    try:
        a, b = spaces.get("a" * 32), spaces.get("b" * 32)
        assert a is not b and a.folder != b.folder and spaces.get("a" * 32) is a
        spaces.get("c" * 32)
        assert len(spaces) == 2 and not b.folder.exists()  # the least recently used went, with its files
        with pytest.raises(ValueError, match="workspace id"):
            spaces.get("../etc")
    finally:
        spaces.close()
