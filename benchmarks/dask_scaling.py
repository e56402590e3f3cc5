"""How the holder's comparisons scale on a Dask cluster, and what Dask costs per task.

    python -m benchmarks.dask_scaling [--paillier-bits 1024] [--json OUT.json]

For each scheme (Paillier, ``ec``) and each batch size, the same comparison batches
(``compare_units``, the function ``party hold`` runs locally and on a worker) are run

* serially in this process (one thread): the pure comparison time;
* on a local cluster (``distributed.LocalCluster``: separate worker processes, one thread each)
  with 1 and then 2 workers, through :class:`common.distributed.Cluster` exactly as the holder
  submits them (query block scattered once, in-flight work bounded to 2 tasks per thread);
* on the process's local thread pool (one thread per core), the path without ``--dask``.

Printed: the scaling ratio (1 worker / 2 workers), Dask's overhead per batch size, in wall time
((1-worker time - serial time) / serial time) and in CPU (the CPU seconds of this process, which
holds the scheduler, and of the 2 workers, over the serial run's: what Dask costs whatever else
runs on the machine) and, from the serial per-item costs of the
comparison, the zero test and the encryption at full size, the projected wall time of exact joins
(docs/protocol.md, "Scaling out").  The machine's busy CPU during each run is printed, because a
shared machine's other work lowers the ratio.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from collections import deque

from benchmarks.exact_join import busy_cpu_seconds, cpu_seconds
from common.distributed import Cluster
from common.schemes import get_scheme
from common.schemes.pool import worker_pool
from party_client.crypto.cuckoo import EXPANSION, HASH_FUNCTIONS, padded_size
from party_client.protocol.batches import compare_units

# (scheme, key bits, total comparisons, batch sizes): batches span ~10 ms to ~1 s of work
PLANS = {"paillier": (1536, (16, 64, 256)), "ec": (8192, (64, 256, 1024, 2048))}


def _workload(name: str, bits: int, total: int):
    scheme = get_scheme(name)
    pair = scheme.generate_key(bits)
    size = scheme.encoding_bytes(pair.public)
    encodings = [os.urandom(size) for _ in range(total)]
    query = scheme.encrypt(pair.public, encodings[:256])
    positions = [i % 256 for i in range(total)]
    return pair, query, positions, encodings


def _batches(positions, encodings, size):
    return [(positions[i:i + size], encodings[i:i + size]) for i in range(0, len(positions), size)]


def _timed(run, pids: list[int] = ()) -> tuple[float, float, float]:
    """Wall seconds, the machine's busy cores meanwhile (ours and others'), and our CPU seconds
    (this process: client and, for a LocalCluster, the scheduler; plus the ``pids``: the workers)."""
    def ours() -> float:
        return time.process_time() + sum(cpu_seconds(pid) for pid in pids)
    machine, own, started = busy_cpu_seconds(), ours(), time.perf_counter()
    run()
    wall = time.perf_counter() - started
    return wall, (busy_cpu_seconds() - machine) / wall, ours() - own


def serial(name, public, query, batches) -> tuple[float, float, float]:
    return _timed(lambda: [compare_units(name, public, query, p, e, False) for p, e in batches])


def pooled(name, public, query, batches) -> float:
    pool = worker_pool()
    return _timed(lambda: list(pool.map(lambda b: compare_units(name, public, query, b[0], b[1], False),
                                        batches)))[0]


def on_cluster(cluster: Cluster, name, public, query, batches) -> tuple[float, float, float]:
    def run() -> None:
        shared, depth = cluster.scatter(query), 2 * cluster.threads()
        window: deque = deque()
        for p, e in batches:
            window.append(cluster.submit(compare_units, name, public, shared, p, e, False))
            if len(window) >= depth:
                window.popleft().result()
        while window:
            window.popleft().result()
    return _timed(run, list(cluster.client.run(os.getpid).values()))


def task_overhead(cluster: Cluster, name: str, public: bytes, query: bytes, tasks: int = 400) -> dict:
    """Wall and CPU seconds per empty task (``compare_units`` of no comparisons) through the holder's
    submission path: what Dask adds to every batch, whatever its size."""
    empty = [([], [])] * tasks
    on_cluster(cluster, name, public, query, empty[:10])
    wall, _, cpu = on_cluster(cluster, name, public, query, empty)
    return {"wall": wall / tasks, "cpu": cpu / tasks}


def per_item_costs(name: str, bits: int, count: int = 512) -> dict:
    """Serial seconds per comparison (H), zero test (K) and encryption (Q) at ``bits``."""
    scheme = get_scheme(name)
    pair = scheme.generate_key(bits)
    encodings = [os.urandom(scheme.encoding_bytes(pair.public)) for _ in range(count)]
    scheme.encrypt(pair.public, encodings[:2])           # the per-key table is built once per session
    started = time.perf_counter()
    query = scheme.encrypt(pair.public, encodings)
    encrypt = (time.perf_counter() - started) / count
    started = time.perf_counter()
    out = scheme.compare(pair.public, query, list(range(count)), encodings)
    compare = (time.perf_counter() - started) / count
    width = scheme.ciphertext_width(pair.public)
    started = time.perf_counter()                        # one thread: pieces under the local pool's threshold
    for at in range(0, count, 32):
        scheme.zero_test(pair.public, pair.private, out[at * width:(at + 32) * width])
    zero = (time.perf_counter() - started) / count
    return {"compare": compare, "zero_test": zero, "encrypt": encrypt,
            "width": scheme.ciphertext_width(pair.public)}


def projection(costs: dict, rows: int, cores: int, link_gbit: float = 1.0, k_cores: int = 2,
               q_cores: int = 2) -> dict:
    """Projected seconds of an exact ``rows`` × ``rows`` join (docs/protocol.md, "Scaling out").

    Q encrypts every bin (B = 2.4 · padded rows) on its ``q_cores``; then H's h·m comparisons on
    ``cores``, streamed to K (h·m zero tests on K's ``k_cores``, or on ``cores`` with K's cluster)
    over a ``link_gbit`` link, pipelined: the round takes as long as its slowest stage."""
    comparisons = HASH_FUNCTIONS * rows
    bins = int(EXPANSION * padded_size(rows))
    stages = {"querier_encrypt": bins * costs["encrypt"] / q_cores,
              "holder_compare": comparisons * costs["compare"] / cores,
              "k_zero_test_2_cores": comparisons * costs["zero_test"] / k_cores,
              "k_zero_test_cluster": comparisons * costs["zero_test"] / cores,
              "network_to_k": comparisons * (costs["width"] + 64) * 8 / (link_gbit * 1e9)}
    stages["wall_k_on_2_cores"] = stages["querier_encrypt"] + max(
        stages["holder_compare"], stages["k_zero_test_2_cores"], stages["network_to_k"])
    stages["wall_k_cluster"] = stages["querier_encrypt"] + max(
        stages["holder_compare"], stages["k_zero_test_cluster"], stages["network_to_k"])
    return stages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paillier-bits", type=int, default=1024, help="key size of the scaling runs")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    from distributed import LocalCluster
    results: dict = {"cores": os.cpu_count(), "schemes": {}}
    for name, (total, sizes) in PLANS.items():
        bits = args.paillier_bits if name == "paillier" else 256
        pair, query, positions, encodings = _workload(name, bits, total)
        rows = []
        for size in sizes:
            batches = _batches(positions, encodings, size)
            row = {"batch": size, "tasks": len(batches), "pool": pooled(name, pair.public, query, batches)}
            row["serial"], _, row["serial_cpu"] = serial(name, pair.public, query, batches)
            for workers in (1, 2):
                with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as local:
                    cluster = Cluster(local.get_client())
                    on_cluster(cluster, name, pair.public, query, batches[:2])      # workers import the code
                    row[f"dask_{workers}"], row[f"busy_cores_{workers}"], row[f"cpu_{workers}"] = on_cluster(
                        cluster, name, pair.public, query, batches)
                    cluster.close()
            row["ratio"] = row["dask_1"] / row["dask_2"]
            row["overhead"] = row["dask_1"] / row["serial"] - 1
            row["cpu_overhead"] = row["cpu_2"] / row["serial_cpu"] - 1     # CPU spent beyond the comparisons
            row["vs_pool"] = row["dask_2"] / row["pool"]
            rows.append(row)
            print(f"{name:8} batch {size:5}: serial {row['serial']:6.2f} s, pool {row['pool']:6.2f} s, "
                  f"dask 1w {row['dask_1']:6.2f} s, 2w {row['dask_2']:6.2f} s -> ratio {row['ratio']:.2f}, "
                  f"overhead {100 * row['overhead']:+.1f}% (CPU {100 * row['cpu_overhead']:+.1f}%), 2w/pool {row['vs_pool']:.2f} "
                  f"(machine busy {row['busy_cores_1']:.2f} / {row['busy_cores_2']:.2f} cores)", flush=True)
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as local:
            cluster = Cluster(local.get_client())
            per_task = task_overhead(cluster, name, pair.public, query)
            cluster.close()
        compare = min(row["serial_cpu"] / total for row in rows)
        curve = {size: per_task["cpu"] / (size * compare) for size in (16, 64, 256, 1024, 4096)}
        print(f"{name:8} per empty task: {1e3 * per_task['wall']:.2f} ms wall, {1e3 * per_task['cpu']:.2f} ms CPU; "
              "CPU overhead by batch size: " + ", ".join(f"{k}: {100 * v:.1f}%" for k, v in curve.items()),
              flush=True)
        costs = per_item_costs(name, 2048 if name == "paillier" else 256)
        print(f"{name:8} per item: compare {1e3 * costs['compare']:.3f} ms, zero test "
              f"{1e3 * costs['zero_test']:.3f} ms, encrypt {1e3 * costs['encrypt']:.3f} ms", flush=True)
        projected = {f"{rows_}x{rows_} on {cores}": projection(costs, rows_, cores)
                     for rows_ in (1_000_000, 10_000_000) for cores in (64, 512)}
        for label, stages in projected.items():
            print(f"{name:8} {label:>24}: " + ", ".join(f"{k} {v / 60:.1f} min" for k, v in stages.items()))
        results["schemes"][name] = {"runs": rows, "costs": costs, "projected": projected,
                                    "per_task": per_task, "cpu_overhead_by_batch": curve}
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=1)


if __name__ == "__main__":
    main()
