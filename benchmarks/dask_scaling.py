"""Measured scaling of the three roles' heavy stages on Dask, and a simulated n × n exact join from
per-item costs measured in the same run (docs/protocol.md, "Scaling out").

    python -m benchmarks.dask_scaling [--seconds 4] [--json OUT.json] [--write-docs]

Per comparison scheme (Paillier at ``--paillier-bits`` for the scaling runs), each role's stage runs
through the product's own cluster path, on a ``distributed.LocalCluster`` of 1 and then 2
single-threaded worker processes:

* the querier's encryption: :func:`party_client.protocol.querier.encrypt_on_cluster`
  (``party join --dask``);
* the holder's comparisons: ``compare_units`` tasks, query scattered once, two tasks per worker
  thread in flight (``party hold --dask``);
* K's zero tests: :func:`keyholder.cluster.cluster_zero_test` called by ``SUBMIT_WINDOW`` threads at
  once, as K's server threads do for the holder's calls in flight (``keyholder serve --dask``).

Each stage gets about ``--seconds`` of work on one worker; printed: both times, the ratio and the
machine's busy cores meanwhile (the machine may be shared; its load average is printed too).

Then, serially in this process at full size (Paillier 2048 bits): the per-item costs of
every stage of a round (the querier's encoding and cuckoo placement, encryption, the holder's
validation of the query, its plan, its comparisons and sealed attachments, K's zero tests) and
Dask's CPU per task, from which :func:`simulate` models a 10M × 10M join on clusters of 64 cores
per role: the stages in order, the round's streamed stages pipelined with the holder's window of
calls to K.  ``--write-docs`` puts the tables (:func:`render_markdown`) into docs/protocol.md
between its ``dask_scaling`` markers, and ``benchmarks/dask_scaling.json`` keeps the results the
docs were written from.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.exact_join import busy_cpu_seconds, cpu_seconds
from common.distributed import Cluster
from common.schemes import all_schemes, get_scheme
from keyholder.cluster import MIN_PIECE, cluster_zero_test, piece_size
from party_client.crypto.cuckoo import EXPANSION, HASH_FUNCTIONS, padded_size
from party_client.crypto.encoding import new_session_secret
from party_client.matching.keys import exact_holder_keys, exact_querier_keys
from party_client.protocol.batches import BatchBuilder, compare_units
from party_client.protocol.engines.choice import engine_for
from party_client.protocol.engines.interface import HolderContext, HolderData, QueryOptions, ReceivedQuery
from party_client.protocol.encryption import CLUSTER_PIECE, encrypt_on_cluster
from party_client.protocol.scheduling import VALIDATION_PIECE_BYTES
from party_client.protocol.submitting import SUBMIT_WINDOW
from party_client.protocol.wire import attachment_cipher
from proto import linkage_pb2 as pb

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "protocol.md"
RESULTS = ROOT / "benchmarks" / "dask_scaling.json"
BEGIN, END = "<!-- dask_scaling: begin (written by python -m benchmarks.dask_scaling --write-docs) -->", \
    "<!-- dask_scaling: end -->"
STAGES = ("querier_encrypt", "holder_compare", "k_zero_test")
STAGE_TITLES = {"querier_encrypt": "querier: encryption", "holder_compare": "holder: comparisons",
                "k_zero_test": "K: zero tests"}
BATCH_ROWS = 256                 # the holder's rows per batch (HolderOptions.batch_rows)
WIDE_WINDOW = 32                 # the simulation's other window (party hold --submit-window 32)
SIMULATED = dict(rows=10_000_000, cores=64, link_gbit=1.0, window=SUBMIT_WINDOW)


def no_progress(phase: str, total: int):
    return lambda items: items


# -- the three stages on a cluster ------------------------------------------------------------------
def _timed(run, pids: list[int] = ()) -> tuple[float, float]:
    """Wall seconds of ``run()`` and the machine's busy cores meanwhile (ours and others')."""
    machine, started = busy_cpu_seconds(), time.perf_counter()
    run()
    wall = time.perf_counter() - started
    return wall, (busy_cpu_seconds() - machine) / wall


class Material:
    """One scheme's key pair and inputs for the three stages, sized for about ``seconds`` per stage on
    one worker (from serial per-item costs measured first)."""

    def __init__(self, name: str, bits: int, seconds: float) -> None:
        self.scheme = scheme = get_scheme(name)
        self.pair = scheme.generate_key(bits)
        public = self.pair.public
        size = scheme.encoding_bytes(public)
        probe = [os.urandom(size) for _ in range(64)]
        scheme.encrypt(public, probe[:2])
        encrypt = _per_item(lambda: scheme.encrypt(public, probe), 64)
        query = scheme.encrypt(public, probe)
        compare = _per_item(lambda: scheme.compare(public, query, list(range(64)), probe), 64)
        out = scheme.compare(public, query, list(range(64)), probe)
        zero = _per_item(lambda: scheme.zero_test(public, self.pair.private, out), 64)
        self.encodings = [None if i % 3 == 0 else os.urandom(size) for i in range(int(seconds / encrypt))]
        self.query = scheme.encrypt(public, [os.urandom(size) for _ in range(256)])
        comparisons = 2 * BATCH_ROWS * max(4, round(seconds / compare / (2 * BATCH_ROWS)))
        self.positions = [i % 256 for i in range(comparisons)]
        self.holder = [os.urandom(size) for _ in range(comparisons)]
        tests = 2 * BATCH_ROWS * max(4, round(seconds / zero / (2 * BATCH_ROWS)))
        block = scheme.compare(public, self.query, self.positions[:2 * BATCH_ROWS], self.holder[:2 * BATCH_ROWS])
        self.zero_batches = [block] * (tests // (2 * BATCH_ROWS))

    def counts(self) -> dict:
        return {"querier_encrypt": len(self.encodings), "holder_compare": len(self.holder),
                "k_zero_test": len(self.zero_batches) * 2 * BATCH_ROWS}


def _per_item(run, count: int) -> float:
    """CPU seconds of this process per item (Paillier's zero test of 64 runs on the local pool's threads)."""
    started = time.process_time()
    run()
    return (time.process_time() - started) / count


def run_stage(stage: str, cluster: Cluster, material: Material) -> None:
    scheme, public = material.scheme, material.pair.public
    if stage == "querier_encrypt":
        encrypt_on_cluster(cluster, scheme, public, material.encodings, no_progress)
    elif stage == "holder_compare":
        shared, depth = cluster.scatter(material.query), 2 * cluster.threads()
        window: deque = deque()
        step = 2 * BATCH_ROWS
        for at in range(0, len(material.holder), step):
            window.append(cluster.submit(compare_units, scheme.name, public, shared, material.positions[at:at + step],
                                         material.holder[at:at + step]))
            if len(window) >= depth:
                window.popleft().result()
        while window:
            window.popleft().result()
    else:
        test = cluster_zero_test(cluster, MIN_PIECE)
        with ThreadPoolExecutor(SUBMIT_WINDOW) as calls:
            list(calls.map(lambda batch: test(scheme, public, material.pair.private, batch), material.zero_batches))


def scaling(materials: dict[str, Material]) -> list[dict]:
    """Every stage of every scheme on 1, then 2 single-threaded workers (one LocalCluster each)."""
    from distributed import LocalCluster
    times: dict[tuple[str, str, int], tuple[float, float]] = {}
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as local:
            cluster = Cluster(local.get_client())
            pids = list(cluster.client.run(os.getpid).values())
            for name, material in materials.items():
                for stage in STAGES:
                    run_stage(stage, cluster, _warm(material))            # workers import the code first
                    times[name, stage, workers] = _timed(lambda: run_stage(stage, cluster, material), pids)
                    print(f"{name:8} {stage:16} {workers} worker(s): {times[name, stage, workers][0]:6.2f} s "
                          f"(machine busy {times[name, stage, workers][1]:.2f} cores)", flush=True)
            cluster.close()
    return [{"scheme": name, "stage": stage, "items": material.counts()[stage],
             "one": times[name, stage, 1][0], "two": times[name, stage, 2][0],
             "busy_one": times[name, stage, 1][1], "busy_two": times[name, stage, 2][1],
             "ratio": times[name, stage, 1][0] / times[name, stage, 2][0]}
            for name, material in materials.items() for stage in STAGES]


def _warm(material: Material) -> Material:
    """A tiny copy of ``material`` (the first run on a fresh cluster imports the code on the workers)."""
    warm = object.__new__(Material)
    warm.__dict__.update(material.__dict__, encodings=material.encodings[:300], holder=material.holder[:512],
                         positions=material.positions[:512], zero_batches=material.zero_batches[:1])
    return warm


# -- per-item costs at full size --------------------------------------------------------------------
def task_overhead(cluster: Cluster, name: str, tasks: int = 300) -> dict:
    """Per empty task: wall seconds, and CPU seconds of this process (the client and, in a
    LocalCluster, the scheduler: what a role's scheduler spends per task, counted high) and of the worker."""
    pids = list(cluster.client.run(os.getpid).values())
    [t.result() for t in [cluster.submit(compare_units, name, b"", b"", [], []) for _ in range(10)]]
    mine, workers, started = time.process_time(), sum(cpu_seconds(pid) for pid in pids), time.perf_counter()
    window: deque = deque()
    for _ in range(tasks):
        window.append(cluster.submit(compare_units, name, b"", b"", [], []))
        if len(window) >= 2:
            window.popleft().result()
    while window:
        window.popleft().result()
    return {"task_wall": (time.perf_counter() - started) / tasks,
            "task_scheduler_cpu": (time.process_time() - mine) / tasks,
            "task_worker_cpu": (sum(cpu_seconds(pid) for pid in pids) - workers) / tasks}


def per_item_costs(name: str, bits: int, count: int = 1024, rows: int = 20_000) -> dict:
    """Seconds of CPU (this thread's: the work itself, whatever else shares the machine) per item of
    every stage of an exact round at ``bits``."""
    scheme = get_scheme(name)
    pair = scheme.generate_key(bits)
    public = pair.public
    size = scheme.encoding_bytes(public)
    encodings = [os.urandom(size) for _ in range(count)]
    scheme.encrypt(public, encodings[:2])                # the per-key table is built once per session
    costs = {"width": scheme.ciphertext_width(public)}
    started = time.thread_time()
    query = scheme.encrypt(public, encodings)
    costs["encrypt"] = (time.thread_time() - started) / count
    started = time.thread_time()
    scheme.validate(public, query)
    costs["validate"] = (time.thread_time() - started) / count
    started = time.thread_time()
    out = scheme.compare(public, query, list(range(count)), encodings)
    costs["compare"] = (time.thread_time() - started) / count
    width = costs["width"]
    started = time.thread_time()                        # one thread: pieces under the local pool's threshold
    for at in range(0, count, 32):
        scheme.zero_test(public, pair.private, out[at * width:(at + 32) * width])
    costs["zero_test"] = (time.thread_time() - started) / count
    costs.update(_round_costs(scheme, public, rows))
    return costs


def _round_costs(scheme, public: bytes, rows: int) -> dict:
    """Per key and per row, the work the parties' own processes do around the heavy stages: the
    querier's encoding and cuckoo placement, the holder's plan (encoding, bin positions) and sealed
    attachments (with one released column)."""
    ids = pd.Series([f"{v:010d}" for v in np.random.default_rng(1).choice(10 ** 10, rows, replace=False)])
    length = scheme.encoding_bytes(public)
    engine = engine_for(pb.JOIN, False)
    started = time.thread_time()
    keys = exact_querier_keys(ids, "identifier")
    prepared, slots = engine.prepare(keys, QueryOptions(scheme=scheme), length, None, no_progress)
    prepare = (time.thread_time() - started) / rows
    frame = pd.DataFrame({"id": ids, "diagnosis": "I10"})
    data = HolderData(frame, exact_holder_keys(frame["id"], "identifier"), ["diagnosis"], False)   # once per table
    started = time.thread_time()
    context = HolderContext("bench", data, scheme, length, lambda _, found: [int(r) for r in found],
                            lambda _: (lambda row: b""), False)
    plan = engine.plan(context, ReceivedQuery(prepared.header, len(slots), [], []))
    holder_plan = (time.thread_time() - started) / rows
    builder = BatchBuilder("bench", 1, scheme, public, b"", attachment_cipher(new_session_secret(), "bench", 1),
                           plan.units, payloads=data.payloads, longest_payload=data.longest_payload)
    dummy = bytes(scheme.ciphertext_width(public) * 2 * BATCH_ROWS)
    started = time.thread_time()
    messages = [builder.build(seq, plan.units[at:at + BATCH_ROWS], None, out=dummy)
                for seq, at in enumerate(range(0, rows, BATCH_ROWS))]
    attach = (time.thread_time() - started) / rows
    attachment_bytes = len(messages[0].attachments[0])
    return {"querier_prepare": prepare, "holder_plan": holder_plan, "holder_attach": attach,
            "attachment_bytes": attachment_bytes}


# -- the simulated join -----------------------------------------------------------------------------
def simulate(costs: dict, rows: int, cores: int, link_gbit: float, window: int) -> dict:
    """Seconds per stage of an exact ``rows`` × ``rows`` join, and its wall time.

    First the querier encodes and places its keys (one thread).  Then the query streams (the slowest
    of four overlapping stages): the querier encrypts its B = 2.4 · padded bins on its cluster of
    ``cores`` (tasks of 4,096) while the query is relayed to K and on to the holder (two transfers at
    ``link_gbit``), and the holder validates it on its cluster (pieces of 1 MiB) and plans its rows
    (one thread) as it comes in.  Then the round streams: h·m comparisons on the holder's cluster
    (one task per batch of 256 rows), the attachments sealed by the holder's round thread, the
    batches sent to K, zero-tested on K's cluster of ``cores`` (pieces of
    :func:`keyholder.cluster.piece_size`); each role's scheduler spends its CPU per task on its own tasks and
    each task costs its worker some CPU too; at most ``window`` calls are in flight, each lasting K's
    latency for one batch.  The round lasts as long as its slowest streamed stage."""
    bins = int(EXPANSION * padded_size(rows))
    comparisons = HASH_FUNCTIONS * rows
    per_batch = HASH_FUNCTIONS * BATCH_ROWS
    batches = -(-rows // BATCH_ROWS)
    piece = piece_size(per_batch, costs["width"], cores)
    link = link_gbit * 1e9 / 8
    batch_bytes = per_batch * costs["width"] + BATCH_ROWS * costs["attachment_bytes"]
    k_latency = piece * costs["zero_test"] + costs["task_wall"] + batch_bytes / link
    worker_cpu = costs["task_worker_cpu"]
    k_tasks = batches * -(-per_batch // piece)
    serial = {"querier_prepare": rows * costs["querier_prepare"],
              "querier_encrypt": (bins * costs["encrypt"] + -(-bins // CLUSTER_PIECE) * worker_cpu) / cores,
              "query_relay": 2 * bins * costs["width"] / link,
              "holder_validate": (bins * costs["validate"]
                                  + -(-bins * costs["width"] // VALIDATION_PIECE_BYTES) * worker_cpu) / cores,
              "holder_plan": rows * costs["holder_plan"]}
    streamed = {"holder_compare": (comparisons * costs["compare"] + batches * worker_cpu) / cores,
                "holder_attach": rows * costs["holder_attach"],
                "network_to_k": batches * batch_bytes / link,
                "k_zero_test": (comparisons * costs["zero_test"] + k_tasks * worker_cpu) / cores,
                "holder_scheduler": batches * costs["task_scheduler_cpu"],
                "k_scheduler": k_tasks * costs["task_scheduler_cpu"],
                "calls_in_flight": batches * k_latency / window}
    round_ = max(streamed.values())
    query = max(serial[k] for k in QUERY_STAGES)          # streamed: the query's stages overlap
    stages = {**serial, **streamed}
    bottleneck = max(stages, key=stages.get)
    return {"stages": stages, "streamed": list(streamed), "query_stages": list(QUERY_STAGES), "query": query,
            "round": round_, "wall": serial["querier_prepare"] + query + round_, "bottleneck": bottleneck,
            "whole_query_wall": sum(serial.values()) + round_}


#: The stages of a streamed query (docs/protocol.md, "Streaming the query"): the querier encrypts while
#: the query is relayed, and the holder validates it and plans its rows (exact joins) as it comes in.
QUERY_STAGES = ("querier_encrypt", "query_relay", "holder_validate", "holder_plan")


STAGE_NAMES = {"querier_prepare": "querier: encode and place keys (1 thread)",
               "querier_encrypt": "querier: encryption (its cluster)",
               "query_relay": "query relayed through K (2 transfers)",
               "holder_validate": "holder: query validated (its cluster)",
               "holder_plan": "holder: plan rows (1 thread)",
               "holder_compare": "holder: comparisons (its cluster)",
               "holder_attach": "holder: sealed attachments (1 thread)",
               "network_to_k": "batches sent to K",
               "k_zero_test": "K: zero tests (its cluster)",
               "holder_scheduler": "holder's Dask scheduler (CPU per task)",
               "k_scheduler": "K's Dask scheduler (CPU per task)",
               "calls_in_flight": "calls in flight (window x K's latency)"}


# -- the docs' section ------------------------------------------------------------------------------
def render_markdown(results: dict) -> str:
    """The measured and simulated tables as docs/protocol.md holds them (between the markers)."""
    machine = results["machine"]
    lines = [f"Measured by `python -m benchmarks.dask_scaling` on {machine['cores']} cores (load average "
             f"{machine['load_before']} before, {machine['load_after']} after; the machine was shared), "
             f"Paillier at {results['paillier_bits']} bits for the scaling runs; each stage through the "
             "product's own cluster path on 1, then 2 single-threaded Dask workers:", "",
             "| scheme | stage | items | 1 worker (s) | 2 workers (s) | ratio | machine busy, cores (1w / 2w) |",
             "|---|---|---|---|---|---|---|"]
    for row in results["scaling"]:
        lines.append(f"| {row['scheme']} | {STAGE_TITLES[row['stage']]} | {row['items']:,} | {row['one']:.2f} | "
                     f"{row['two']:.2f} | {row['ratio']:.2f} | {row['busy_one']:.2f} / {row['busy_two']:.2f} |")
    setup = results["simulated_setup"]
    schemes = list(results["simulated"])
    lines += ["", f"Simulated {setup['rows']:,} × {setup['rows']:,} exact join, minutes per stage (per-item "
              f"costs measured in the same run as CPU time of one thread, Paillier at 2048 bits; {setup['cores']}-core "
              f"cluster per role, {setup['link_gbit']:g} Gbit/s "
              f"links, {setup['window']} calls in flight; the first stage runs alone, the next four overlap while the query "
              "streams, "
              "the others stream together during the round):", "",
              "| stage | " + " | ".join(schemes) + " |", "|---|" + "---|" * len(schemes)]
    for stage, title in STAGE_NAMES.items():
        lines.append(f"| {title} | " + " | ".join(f"{results['simulated'][s]['stages'][stage] / 60:.1f}"
                                                  for s in schemes) + " |")
    for key, title in (("query", "**query (slowest of its four overlapping stages)**"),
                       ("round", "**round (slowest streamed stage)**"), ("wall", "**wall**"),
                       ("wide_window_wall", f"wall with `--submit-window {WIDE_WINDOW}`"),
                       ("whole_query_wall", "wall if the query were relayed whole (before streaming)")):
        lines.append(f"| {title} | " + " | ".join(f"{results['simulated'][s][key] / 60:.1f}" for s in schemes) + " |")
    lines.append("| bottleneck | " + " | ".join(STAGE_NAMES[results["simulated"][s]["bottleneck"]]
                                                for s in schemes) + " |")
    costs = ", ".join(f"{s}: compare {1e3 * results['costs'][s]['compare']:.3f} ms, zero test "
                      f"{1e3 * results['costs'][s]['zero_test']:.3f} ms, encryption "
                      f"{1e3 * results['costs'][s]['encrypt']:.3f} ms, Dask per task {1e3 * results['costs'][s]['task_scheduler_cpu']:.1f} "
                      f"ms CPU at the scheduler and client, {1e3 * results['costs'][s]['task_worker_cpu']:.1f} ms at the worker"
                      for s in schemes)
    lines += ["", f"Per item, CPU of one thread: {costs}; a task's wall latency (used for K's latency per "
              "batch): " + ", ".join(f"{s} {1e3 * results['costs'][s]['task_wall']:.1f} ms" for s in schemes) + "."]
    return "\n".join(lines)


def doc_section(text: str) -> str:
    """What docs/protocol.md holds between the markers."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[start:end].strip("\n")


def write_docs(results: dict) -> None:
    text = DOC.read_text(encoding="utf-8")
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    DOC.write_text(text[:start] + "\n" + render_markdown(results) + "\n" + text[end:], encoding="utf-8")
    RESULTS.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paillier-bits", type=int, default=1024, help="key size of the scaling runs")
    parser.add_argument("--seconds", type=float, default=4.0, help="work per stage on one worker")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--write-docs", action="store_true",
                        help="write the tables into docs/protocol.md and the results to benchmarks/dask_scaling.json")
    args = parser.parse_args()
    load_before = " / ".join(f"{v:.1f}" for v in os.getloadavg())
    results: dict = {"machine": {"cores": os.cpu_count(), "load_before": load_before},
                     "paillier_bits": args.paillier_bits, "simulated_setup": SIMULATED}
    materials = {scheme.name: Material(scheme.name, scheme.fixed_key_bits or args.paillier_bits, args.seconds)
                 for scheme in all_schemes()}
    results["scaling"] = scaling(materials)
    from distributed import LocalCluster
    results["costs"], results["simulated"] = {}, {}
    for name in materials:
        costs = per_item_costs(name, materials[name].scheme.fixed_key_bits or 2048)
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as local:
            cluster = Cluster(local.get_client())
            costs.update(task_overhead(cluster, name))
            cluster.close()
        results["costs"][name] = costs
        results["simulated"][name] = simulate(costs, **SIMULATED)
        results["simulated"][name]["wide_window_wall"] = simulate(costs, **{**SIMULATED, "window": WIDE_WINDOW})["wall"]
        print(f"{name:8} per item: " + ", ".join(f"{k} {1e3 * v:.4f} ms" for k, v in costs.items()
                                                  if k not in ("width", "attachment_bytes")), flush=True)
    results["machine"]["load_after"] = " / ".join(f"{v:.1f}" for v in os.getloadavg())
    print(render_markdown(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    if args.write_docs:
        write_docs(results)


if __name__ == "__main__":
    main()
