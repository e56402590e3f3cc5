"""Exact join / dedup benchmark: the three roles as separate processes on loopback.

    python -m benchmarks.exact_join --n 10000 --m 10000 [--scheme paillier|ristretto[,...]] [--overlap 0.5]
                                    [--key-bits 2048] [--mode join|dedup] [--json OUT.json]

What runs:

1. synthetic 10-digit identifiers: the querier has ``n``, the holder ``m``, and
   ``overlap * min(n, m)`` of them are shared; the holder releases one column;
2. ``keyholder serve --insecure`` on a free loopback port (temp data dir);
3. ``party hold`` (started first, without ``--once``, polling; stopped after the last
   round) and, per
   scheme named (``--scheme ristretto,paillier``: one join each, in that order,
   against the same holder), ``party join|dedup --report R.json`` as separate processes;
   the querier's command is timed from its start to its exit, as a user sees it;
4. the floor, per join: raw arithmetic rates (benchmarks/floor.py: gmpy2 for
   ``paillier``, libsodium's ristretto255 calls for ``ristretto``) measured before and after that join (fastest of the two per
   operation), times the join's own counts, divided by the core count;
5. OpenMined PSI (ECDH, ``openmined-psi``) on the same identifiers, in process.

Phases printed: encode (querier: PRF + cuckoo placement), encrypt (querier),
relay (sealed upload through K), holder fetch+plan (time from the upload until
the holder starts comparing), compare+zero-test (holder's comparison loop,
pipelined with K's zero tests: every SubmitComparisons call returns after K
tested the batch), result fetch (querier).  CPU seconds per process come from
``wait4`` rusage (the holder's and K's include their start-up).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import numpy as np

from benchmarks import floor as floor_mod

PYTHON = sys.executable
HOLDER_LINE = re.compile(r"(\d+) rows compared \((\d+) comparisons\) in ([0-9.]+) s")


def make_ids(n: int, m: int, overlap: float, seed: int) -> tuple[list[str], list[str], set[str]]:
    """Distinct 10-digit strings; ``round(overlap * min(n, m))`` shared; both lists shuffled."""
    shared = int(round(overlap * min(n, m)))
    total = n + m - shared
    rng = np.random.default_rng(seed)
    values = np.unique(rng.integers(10 ** 9, 10 ** 10, size=int(total * 1.05) + 16))
    while len(values) < total:  # pragma: no cover - practically never
        values = np.unique(np.concatenate([values, rng.integers(10 ** 9, 10 ** 10, size=total)]))
    values = rng.permutation(values)[:total].astype(str).tolist()
    common = values[:shared]
    querier = common + values[shared:n]
    holder = common + values[n:]
    rng.shuffle(querier)
    rng.shuffle(holder)
    return querier, holder, set(common)


def write_inputs(folder: Path, querier: list[str], holder: list[str]) -> tuple[Path, Path]:
    q, h = folder / "querier.csv", folder / "holder.csv"
    with q.open("w", newline="") as out:
        w = csv.writer(out)
        w.writerow(["id", "visit"])
        w.writerows((v, i) for i, v in enumerate(querier))
    with h.open("w", newline="") as out:
        w = csv.writer(out)
        w.writerow(["id", "age"])
        # released value derived from the id so that the join can be checked
        w.writerows((v, int(v) % 97) for v in holder)
    return q, h


def cpu_seconds(pid: int) -> float:
    """utime + stime of a live process (for progress only)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


class Child:
    """A subprocess whose exit is reaped with ``wait4`` to get its CPU time."""

    def __init__(self, name: str, args: list[str], log: Path, env: dict | None = None) -> None:
        self.name = name
        self.log = log
        self._sink = log.open("w")
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(args, stdout=self._sink, stderr=subprocess.STDOUT, env=env)
        self.returncode: int | None = None
        self.cpu: float | None = None
        self.wall: float | None = None
        self.peak_mb: float | None = None      # peak resident memory (ru_maxrss), once reaped

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            try:
                pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere (Popen.poll): no rusage then
                self.returncode = self.proc.returncode if self.proc.returncode is not None else -1
                self.wall = time.perf_counter() - self.started
                self._sink.close()
                break
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
                self.proc.returncode = self.returncode
                self.cpu = usage.ru_utime + usage.ru_stime
                self.peak_mb = usage.ru_maxrss / 1024
                self.wall = time.perf_counter() - self.started
                self._sink.close()
                break
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"{self.name} still running after {timeout} s")
            time.sleep(0.05)
        return self.returncode

    def alive(self) -> bool:
        try:
            self.wait(timeout=0)
        except TimeoutError:
            return True
        return False

    def stop(self, sig: int = signal.SIGINT) -> None:
        if self.returncode is None:
            self.proc.send_signal(sig)
            try:
                self.wait(15)
            except TimeoutError:
                self.proc.kill()
                self.wait()

    def text(self) -> str:
        return self.log.read_text(errors="replace")


def busy_cpu_seconds() -> float:
    """CPU seconds spent by everything on the machine so far (/proc/stat, all cores, not idle)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def code_version() -> dict:
    """Which product code this run measured: its folder, commit and whether it had local edits."""
    import party_client
    root = Path(party_client.__file__).resolve().parent.parent
    info = {"root": str(root)}
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode == 0:
        info["commit"] = head.stdout.strip()
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True).stdout
        info["dirty"] = [line[3:] for line in status.splitlines() if not line[3:].startswith("benchmarks/")]
    elif (root / "COMMIT").is_file():  # a `git archive` snapshot
        info["commit"] = (root / "COMMIT").read_text().strip()
    return info


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_keyholder(work: Path, transport: list[str], log_level: str | None = None,
                    launcher: tuple[str, ...] = ("-m",)) -> tuple[Child, str]:
    """A benchmark key holder (``transport``: ``["--insecure"]`` or ``["--tls-dir", DIR]``; 1024-bit keys
    allowed) on a free loopback port; returns the process and its address once it listens.
    ``launcher``: how Python starts the module (``benchmarks.profiled``: under a profiler)."""
    port_file = work / "port"
    port_file.unlink(missing_ok=True)
    env = dict(os.environ, KEYHOLDER_PASSPHRASE="benchmark-only")
    kh = Child("keyholder", [PYTHON, *launcher, "keyholder.cli", "serve", "--listen", f"127.0.0.1:{free_port()}",
                             "--data-dir", str(work / "keyholder"), *transport, "--min-key-bits", "1024",
                             "--port-file", str(port_file), *(["--log-level", log_level] if log_level else [])],
               work / "keyholder.log", env)
    deadline = time.monotonic() + 60
    while not port_file.exists() or not port_file.read_text().strip():
        if not kh.alive() or time.monotonic() > deadline:
            kh.stop()
            raise RuntimeError(f"the key holder did not start:\n{kh.text()}")
        time.sleep(0.1)
    return kh, f"127.0.0.1:{port_file.read_text().strip()}"



def run(cmd: list[str], **kwargs) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()}")


def wait_idle(pid: int, settle: float = 1.0, timeout: float = 600.0) -> None:
    """Wait until a process stops using CPU (the holder has loaded its table)."""
    deadline = time.monotonic() + timeout
    last = cpu_seconds(pid)
    time.sleep(settle)
    while time.monotonic() < deadline:
        now = cpu_seconds(pid)
        if now - last < 0.05 * settle:
            return
        last = now
        time.sleep(settle)


class Progress(threading.Thread):
    """Heartbeat on stderr: elapsed time, comparisons zero-tested so far (from K's store)."""

    def __init__(self, store: Path, expected: int, pids: dict[str, int], every: float) -> None:
        super().__init__(daemon=True)
        self.store, self.expected, self.pids, self.every = store, expected, pids, every
        self.halt = threading.Event()
        self.started = time.perf_counter()

    def tested(self) -> int:
        try:
            db = sqlite3.connect(f"file:{self.store}?mode=ro", uri=True, timeout=1.0)
            try:
                return int(db.execute("SELECT COALESCE(SUM(comparisons), 0) FROM batches").fetchone()[0])
            finally:
                db.close()
        except sqlite3.Error:
            return -1

    def run(self) -> None:
        while not self.halt.wait(self.every):
            done = self.tested()
            cpu = " ".join(f"{k}={cpu_seconds(p):.0f}s" for k, p in self.pids.items())
            share = f" ({100 * done / self.expected:.0f}%)" if self.expected and done >= 0 else ""
            print(f"  .. {time.perf_counter() - self.started:6.0f} s: {done} comparisons zero-tested"
                  f"{share}; cpu {cpu}", file=sys.stderr, flush=True)


def audit_times(data_dir: Path) -> dict:
    """Timestamps of relay_query and finish_round from ``keyholder audit``."""
    out = subprocess.run([PYTHON, "-m", "keyholder.cli", "audit", "--data-dir", str(data_dir)],
                         capture_output=True, text=True).stdout
    times = {}
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[2] in ("relay_query", "finish_round", "fetch_results", "open_session"):
            times[parts[2]] = datetime.fromisoformat(parts[0]).timestamp()
    return times


def run_psi(querier: list[str], holder: list[str], structure: str = "RAW") -> dict:
    """OpenMined PSI (ECDH): the holder is the PSI server, the querier the client; messages serialized."""
    import private_set_intersection.python as psi
    timings = {}
    cpu = time.process_time()
    t = time.perf_counter()
    server = psi.server.CreateWithNewKey(True)
    client = psi.client.CreateWithNewKey(True)
    setup = server.CreateSetupMessage(1e-9, len(querier), holder, getattr(psi.DataStructure, structure))
    setup_bytes = setup.SerializeToString()
    timings["server_setup"] = time.perf_counter() - t
    t = time.perf_counter()
    request_bytes = client.CreateRequest(querier).SerializeToString()
    timings["client_request"] = time.perf_counter() - t
    t = time.perf_counter()
    request = psi.Request()
    request.ParseFromString(request_bytes)
    response_bytes = server.ProcessRequest(request).SerializeToString()
    timings["server_response"] = time.perf_counter() - t
    t = time.perf_counter()
    response, server_setup = psi.Response(), psi.ServerSetup()
    response.ParseFromString(response_bytes)
    server_setup.ParseFromString(setup_bytes)
    found = client.GetIntersection(server_setup, response)
    timings["client_intersection"] = time.perf_counter() - t
    timings["total"] = sum(timings.values())
    return {"structure": structure, "seconds": {k: round(v, 3) for k, v in timings.items()},
            "cpu_seconds": round(time.process_time() - cpu, 3),
            "matched": len(found), "bytes": len(setup_bytes) + len(request_bytes) + len(response_bytes),
            "matched_ids": {querier[i] for i in found}}


def check_output(out: Path, mode: str, shared: set[str]) -> dict:
    import pandas as pd
    frame = pd.read_csv(out, dtype={"id": str})
    matched = frame.loc[frame["matched"].astype(bool), "id"]
    found = set(matched)
    result = {"matched": len(found), "expected": len(shared), "exact": found == shared}
    if mode == "join":
        rows = frame.loc[frame["matched"].astype(bool)]
        result["payload_ok"] = bool((rows["age"].astype(int) == rows["id"].astype(int) % 97).all())
        result["exact"] = result["exact"] and result["payload_ok"]
    return result


SCHEMES = ("paillier", "ristretto")


def _scheme_list(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in SCHEMES]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"name schemes among {', '.join(SCHEMES)}")
    return list(dict.fromkeys(names))


def measure_rates(scheme: str, args: argparse.Namespace):
    """Raw rates of the scheme's operations on one core (benchmarks/floor.py)."""
    if scheme == "ristretto":
        return floor_mod.measure_group(10 * args.floor_samples)
    return floor_mod.measure(args.key_bits, args.floor_samples)


def run_join(scheme: str, index: int, args: argparse.Namespace, work: Path, party: list[str], q_csv: Path,
             shared: set[str], kh: Child, holder: Child, children: list[Child]) -> dict:
    """One querier command against the running holder; the numbers of this join (floor from this join's rates)."""
    cores = os.cpu_count() or 1
    elliptic = scheme == "ristretto"
    key_bits = 256 if elliptic else args.key_bits
    print(f"floor: timing raw {scheme} operations of each kind ...", file=sys.stderr, flush=True)
    rates_before = measure_rates(scheme, args)
    out, report = work / f"out-{scheme}.csv", work / f"report-{scheme}.json"
    query = party + ["--log-level", "INFO", args.mode, "--dir", str(work / "querier"), "--holder", "holder",
                     "--input", str(q_csv), "--id-column", "id", "--out", str(out), "--report", str(report),
                     "--scheme", scheme, *([] if elliptic else ["--key-bits", str(key_bits)]), "--quiet"]
    print(f"run: {args.mode} {args.n} x {args.m}, {scheme} at {key_bits} bits, files in {work}", file=sys.stderr,
          flush=True)
    load_before = os.getloadavg()
    kh_cpu_before = cpu_seconds(kh.proc.pid)
    holder_cpu_before = cpu_seconds(holder.proc.pid)
    machine_before = busy_cpu_seconds()
    querier = Child(f"querier-{scheme}", query, work / f"querier-{scheme}.log")
    children.append(querier)
    heartbeat = Progress(work / "keyholder" / "keyholder.sqlite3", 2 * args.m * (index + 1),
                         {"K": kh.proc.pid, "H": holder.proc.pid, "Q": querier.proc.pid}, args.progress_every)
    heartbeat.start()
    while True:  # the querier would wait up to its timeout for a holder that died
        try:
            code = querier.wait(timeout=1.0)
            break
        except TimeoutError:
            if not holder.alive() or not kh.alive():
                querier.stop(signal.SIGTERM)
                heartbeat.halt.set()
                raise RuntimeError(f"the holder or the key holder stopped during the run:\n"
                                   f"holder:\n{holder.text()[-3000:]}\nkeyholder:\n{kh.text()[-3000:]}")
    heartbeat.halt.set()
    machine_after = busy_cpu_seconds()
    kh_cpu_after = cpu_seconds(kh.proc.pid)
    holder_cpu_after = cpu_seconds(holder.proc.pid)
    if code:
        raise RuntimeError(f"the querier failed ({code}):\n{querier.text()[-3000:]}\n"
                           f"holder:\n{holder.text()[-3000:]}")
    audit = audit_times(work / "keyholder")
    facts = json.loads(report.read_text())
    holder_lines = []
    for _ in range(100):  # the holder logs its round right after its last batch; give it a moment
        holder_lines = HOLDER_LINE.findall(holder.text())
        if len(holder_lines) > index:
            break
        time.sleep(0.1)
    if len(holder_lines) <= index:
        raise RuntimeError(f"no comparison line in the holder's log:\n{holder.text()[-3000:]}")
    rows, comparisons, compare_s = int(holder_lines[index][0]), int(holder_lines[index][1]), float(holder_lines[index][2])
    check = check_output(out, args.mode, shared)

    rates_after = measure_rates(scheme, args)
    matched_rows = int(facts["matched_holder_rows"])
    slots = int(facts["table_slots"])
    if elliptic:
        rates = floor_mod.best_group(rates_before, rates_after)
        bound = floor_mod.floor_seconds_elgamal(rates, comparisons, slots, rows, cores)
    else:
        rates = floor_mod.best(rates_before, rates_after)
        bound = floor_mod.floor_seconds(rates, comparisons, slots, cores)
    seconds = facts["seconds"]
    relay_to_finish = audit["finish_round"] - audit["relay_query"] if {"finish_round", "relay_query"} <= audit.keys() else None
    phases = {
        "encode (querier PRF + cuckoo)": seconds["encode"],
        "encrypt (querier)": seconds["encrypt"],
        "relay (sealed upload via K)": seconds["relay"],
        "holder fetch + plan": round(max(0.0, seconds["wait_for_holder"] - compare_s), 3),
        "compare + zero-test (pipelined)": round(compare_s, 3),
        "result fetch (querier)": seconds["fetch"],
    }
    wall = float(seconds["total"])
    result = dict(
        scheme=scheme, key_bits=key_bits, load_before=load_before,
        rows=rows, comparisons=comparisons, table_slots=slots,
        cuckoo_bins=facts.get("cuckoo_bins"), matched_holder_rows=matched_rows, check=check,
        phases=phases, querier_seconds=seconds, wall=wall, querier_process_wall=round(querier.wall, 3),
        relay_to_finish=relay_to_finish,
        cpu={"querier": round(querier.cpu, 2),
             "holder_during_run": round(holder_cpu_after - holder_cpu_before, 2),
             "keyholder_during_run": round(kh_cpu_after - kh_cpu_before, 2),
             "machine_during_run": round(machine_after - machine_before, 2)},
        peak_memory_mb={"querier": round(querier.peak_mb, 1)} if querier.peak_mb else {},
        rates_ms={"before": rates_before.as_dict(), "after": rates_after.as_dict(), "used": rates.as_dict()},
        floor={k: (round(v, 3) if isinstance(v, float) else v) for k, v in bound.items()},
        ratio=round(wall / bound["floor"], 3),
        process_ratio=round(querier.wall / bound["floor"], 3),
        compare_ratio=round(compare_s / ((bound["holder_cpu"] + bound["keyholder_cpu"]) / cores), 3),
    )
    ours = querier.cpu + (holder_cpu_after - holder_cpu_before) + (kh_cpu_after - kh_cpu_before)
    other = max(0.0, (machine_after - machine_before) - ours) / querier.wall
    available = max(1.0, cores - other)
    cpu_floor = bound["holder_cpu"] + bound["keyholder_cpu"] + bound["querier_cpu"]
    result.update(other_cores_busy=round(other, 2), available_cores=round(available, 2),
                  floor_available=round(cpu_floor / available, 3),
                  ratio_available=round(wall / (cpu_floor / available), 3), load_after=os.getloadavg())
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.exact_join", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, required=True, help="querier identifiers")
    parser.add_argument("--m", type=int, required=True, help="holder identifiers")
    parser.add_argument("--overlap", type=float, default=0.5, help="shared fraction of min(n, m)")
    parser.add_argument("--scheme", type=_scheme_list, default=["paillier"],
                        help=f"comparison scheme, or several separated by commas, one join each against the same "
                             f"holder in this run ({', '.join(SCHEMES)}; default paillier)")
    parser.add_argument("--key-bits", type=int, default=2048, help="Paillier key size (the curves have one size)")
    parser.add_argument("--mode", choices=("join", "dedup"), default="join")
    parser.add_argument("--json", help="write all numbers here")
    parser.add_argument("--floor-samples", type=int, default=200,
                        help="operations timed per kind (x10 for the cheaper curve calls)")
    parser.add_argument("--no-psi", action="store_true", help="skip the OpenMined PSI comparison")
    parser.add_argument("--psi-structure", default="RAW", choices=("RAW", "GCS", "BLOOM_FILTER"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", help="keep the run's files in this folder")
    parser.add_argument("--progress-every", type=float, default=30.0, help="heartbeat period, s")
    args = parser.parse_args(argv)

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-join-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict = {"n": args.n, "m": args.m, "overlap": args.overlap, "mode": args.mode,
                     "cores": os.cpu_count() or 1,
                     "load_before": os.getloadavg(), "code": code_version(), "joins": []}
    children: list[Child] = []
    try:
        querier_ids, holder_ids, shared = make_ids(args.n, args.m, args.overlap, args.seed)
        q_csv, h_csv = write_inputs(work, querier_ids, holder_ids)

        kh, address = start_keyholder(work, ["--insecure"], log_level="INFO")
        children.append(kh)
        party = [PYTHON, "-m", "party_client.cli"]
        for name in ("querier", "holder"):
            folder = work / name
            if folder.exists():
                shutil.rmtree(folder)
            run(party + ["init", "--dir", str(folder), "--name", name])
            run(party + ["register", "--dir", str(folder), "--keyholder", address, "--insecure"])

        holder = Child("holder", party + ["--log-level", "INFO", "hold", "--dir", str(work / "holder"),
                                          "--input", str(h_csv), "--id-column", "id", "--release-columns", "age",
                                          "--quiet", "--poll-seconds", "5"],
                       work / "holder.log")
        children.append(holder)
        wait_idle(holder.proc.pid)
        if not holder.alive():
            raise RuntimeError(f"the holder stopped:\n{holder.text()}")
        for index, scheme in enumerate(args.scheme):
            wait_idle(holder.proc.pid)
            results["joins"].append(run_join(scheme, index, args, work, party, q_csv, shared, kh, holder, children))
        holder.stop()
        kh.stop()
        results["peak_memory_mb"] = {c.name: round(c.peak_mb, 1) for c in (holder, kh) if c.peak_mb}
        if not args.no_psi:
            psi = run_psi(querier_ids, holder_ids, args.psi_structure)
            psi_exact = psi.pop("matched_ids") == shared
            results["psi"] = dict(psi, exact=psi_exact)
            for join in results["joins"]:
                join["psi_ratio"] = round(join["wall"] / psi["seconds"]["total"], 2)
                join["psi_process_ratio"] = round(join["querier_process_wall"] / psi["seconds"]["total"], 2)
        results["load_after"] = os.getloadavg()
        print_results(results)
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2, default=str))
        return 0 if all(join["check"]["exact"] for join in results["joins"]) else 1
    finally:
        for child in reversed(children):
            try:
                child.stop()
            except Exception as error:  # keep stopping the others
                print(f"could not stop {child.name}: {error}", file=sys.stderr)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def print_results(results: dict) -> None:
    line = "-" * 64
    for r in results["joins"]:
        _print_join(results, r, line)
    if "psi" in results:
        p = results["psi"]
        print(f"OpenMined PSI ({p['structure']}): {p['seconds']['total']:.2f} s "
              f"({', '.join(f'{k} {v:.2f}' for k, v in p['seconds'].items() if k != 'total')}), "
              f"{p['bytes'] / 1e6:.1f} MB, matched {p['matched']} ({'exact' if p['exact'] else 'WRONG'})")
    print(f"{'scheme':10s} {'querier command':>16s} {'protocol':>9s} {'floor':>8s} {'/floor':>7s} {'/PSI':>6s}")
    for r in results["joins"]:
        print(f"{r['scheme']:10s} {r['querier_process_wall']:14.2f} s {r['wall']:7.2f} s {r['floor']['floor']:6.2f} s "
              f"{r['process_ratio']:7.2f} "
              + (f"{r['psi_process_ratio']:6.2f}" if 'psi_process_ratio' in r else f"{'—':>6s}"))
    print("peak memory of the holder and K over all joins (MB): "
          + ", ".join(f"{k} {v:.0f}" for k, v in results.get("peak_memory_mb", {}).items()))
    print(f"load average before {results['load_before'][0]:.2f}, after {results['load_after'][0]:.2f}; code "
          f"{results['code'].get('commit', '?')[:10]}{' + local edits' if results['code'].get('dirty') else ''}")
    print(line)


def _print_join(results: dict, r: dict, line: str) -> None:
    print(line)
    print(f"{results['mode']} {results['n']} x {results['m']} (overlap {results['overlap']}), {r['scheme']} "
          f"{r['key_bits']}-bit key, {results['cores']} cores")
    print(f"holder rows {r['rows']}, comparisons {r['comparisons']}, querier slots {r['table_slots']}, "
          f"matched {r['check']['matched']} / expected {r['check']['expected']} "
          f"({'exact' if r['check']['exact'] else 'WRONG'})")
    print(line)
    for name, value in r["phases"].items():
        print(f"  {name:36s} {value:10.2f} s")
    print(f"  {'wall (querier total)':36s} {r['wall']:10.2f} s")
    print(f"  {'the querier command (process)':36s} {r['querier_process_wall']:10.2f} s")
    f = r["floor"]
    u = r["rates_ms"]["used"]
    print(line)
    if r["scheme"] == "ristretto":
        print(f"floor rates (ms/call, one core): scalar mult {u['mult']:.4f}, fixed-base mult {u['base']:.4f}, "
              f"add/sub {u['add']:.4f}, point validation {u['valid']:.4f}")
    else:
        print(f"floor rates (ms/op, one core): full exp {u['full_exp']:.3f}, "
              f"zero test (powmod_sec) {u['half_crt']:.3f}, Encryptor.encrypt {u['encrypt']:.3f} (r^n: {u['encrypt_powmod']:.3f})")
    print(f"floor CPU: holder {f['holder_cpu']:.2f} s + key holder {f['keyholder_cpu']:.2f} s + "
          f"querier {f['querier_cpu']:.2f} s, / {f['cores']} cores = {f['floor']:.2f} s")
    print(f"measured CPU during the run: holder {r['cpu']['holder_during_run']:.2f} s, key holder "
          f"{r['cpu']['keyholder_during_run']:.2f} s, querier {r['cpu']['querier']:.2f} s")
    print("peak memory (MB): " + ", ".join(f"{k} {v:.0f}" for k, v in r["peak_memory_mb"].items()))
    print(f"RATIO wall / floor = {r['ratio']:.2f}, querier command / floor = {r['process_ratio']:.2f}   "
          f"(compare phase / its floor = {r['compare_ratio']:.2f})")
    print(f"other work on the machine kept ~{r['other_cores_busy']:.2f} of {results['cores']} cores busy during the "
          f"run; floor on the {r['available_cores']:.2f} cores left = {r['floor_available']:.2f} s, "
          f"ratio {r['ratio_available']:.2f}; load average {r['load_before'][0]:.2f} -> {r['load_after'][0]:.2f}")
    if "psi_ratio" in r:
        print(f"RATIO ours / PSI = {r['psi_ratio']:.2f} (querier command / PSI = {r['psi_process_ratio']:.2f})")


if __name__ == "__main__":
    sys.exit(main())
