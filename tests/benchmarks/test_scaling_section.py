"""docs/protocol.md's scaling figures are the benchmark's, not typed: the section between the
``dask_scaling`` markers is exactly what ``benchmarks.dask_scaling.render_markdown`` renders from the
results the benchmark kept (``benchmarks/dask_scaling.json``), and those results hold every stage of
both schemes on 1 and 2 workers and a simulated join whose wall is its first stage, its streamed query
(the slowest of the stages that overlap while the query comes in) and its round."""
from __future__ import annotations

import json

import pytest

from benchmarks import dask_scaling


@pytest.fixture(scope="module")
def results() -> dict:
    return json.loads(dask_scaling.RESULTS.read_text(encoding="utf-8"))


def test_the_docs_section_is_what_the_benchmark_renders(results):
    section = dask_scaling.doc_section(dask_scaling.DOC.read_text(encoding="utf-8"))
    assert section == dask_scaling.render_markdown(results)


def test_the_results_cover_every_stage_and_the_simulation_adds_up(results):
    measured = {(row["scheme"], row["stage"]) for row in results["scaling"]}
    assert measured == {(s, stage) for s in results["simulated"] for stage in dask_scaling.STAGES}
    assert {"paillier", "ristretto"} <= set(results["simulated"])
    for row in results["scaling"]:
        assert row["ratio"] == pytest.approx(row["one"] / row["two"])
    for name, simulated in results["simulated"].items():
        again = dask_scaling.simulate(results["costs"][name], **results["simulated_setup"])
        assert again["wall"] == pytest.approx(simulated["wall"]) and again["bottleneck"] == simulated["bottleneck"]
        stages = again["stages"]
        assert again["round"] == max(stages[k] for k in again["streamed"])
        assert again["query"] == max(stages[k] for k in again["query_stages"])      # the query streams
        assert again["wall"] == pytest.approx(sum(v for k, v in stages.items()
                                                  if k not in again["streamed"] + again["query_stages"])
                                              + again["query"] + again["round"])
        assert again["whole_query_wall"] == pytest.approx(sum(v for k, v in stages.items()
                                                              if k not in again["streamed"]) + again["round"])
        assert stages[again["bottleneck"]] == max(stages.values())
