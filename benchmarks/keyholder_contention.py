"""One hostile party on a shared key holder: does it slow the others?

    python -m benchmarks.keyholder_contention [--n 10000] [--m 10000] [--scheme ristretto] [--churn-bits 4096]
                                              [--stalled 32] [--flood] [--pairs 1] [--json OUT.json]

What runs (all roles as separate processes on loopback, one ``keyholder serve --insecure``):

1. a ``n`` x ``m`` exact join (``party hold`` + ``party join``) on a quiet key holder;
2. the same join while a third party, from the same address, sends calls with a wrong token (about
   50 a second, so the failed-authentication throttle is engaged throughout) and churns sessions
   with ``--churn-bits`` Paillier keys (open, close, again, four at a time: its key queue and budget
   are what hold it back), and holds ``--stalled`` query uploads to the same holder begun and never
   finished; with ``--flood`` it also submits comparison batches to K as the holder of an accomplice's
   query, 16 at a time (K's fair lanes hold it to its share);
3. the quiet join again (drift of a shared machine: the ratio uses the mean of both quiet runs).

Meanwhile a fourth party opens and closes ``ristretto`` and 2048-bit Paillier sessions one at a time, and
the script prints their OpenSession latency (median, p95) on the quiet and on the contended key
holder.  The machine's load average is printed with every phase (other work on a shared machine
shows there), with the CPU seconds of the key holder, of its key-generation workers and of this
script's own client threads (the hostile party and the sampler run on the same cores as the join).
Every join output is checked against the plaintext intersection.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import grpc

from benchmarks.exact_join import (PYTHON, Child, check_output, cpu_seconds, make_ids, run, start_keyholder, wait_idle,
                                   write_inputs)
from proto import linkage_pb2 as pb
from proto import linkage_pb2_grpc as pb_grpc

PARTY = [PYTHON, "-m", "party_client.cli"]


def token_of(folder: Path) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {(folder / 'token').read_text().strip()}")]


class Background(threading.Thread):
    """A loop run until :meth:`halt`, counting outcomes by status name."""

    def __init__(self, step, pause_when_refused: float = 0.0) -> None:
        super().__init__(daemon=True)
        self.step, self.halt_event, self.counts = step, threading.Event(), {}
        self.pause = pause_when_refused

    def run(self) -> None:
        while not self.halt_event.is_set():
            try:
                name = self.step() or "OK"
            except grpc.RpcError as error:
                name = error.code().name
                if name == "RESOURCE_EXHAUSTED":
                    time.sleep(self.pause)
            self.counts[name] = self.counts.get(name, 0) + 1

    def halt(self) -> dict:
        self.halt_event.set()
        self.join(timeout=120)
        return dict(self.counts)


def hostile(stub, meta, holder: str, churn_bits: int, stalled: int = 32, flood: list | None = None) -> list[Background]:
    """Bad tokens at ~50/s, four churning session loops of ``churn_bits`` Paillier keys, and ``stalled``
    query uploads to ``holder`` begun and never finished (header only; K aborts each after its upload idle
    timeout and the loop begins it again).  ``flood`` (an accomplice's metadata and its own holder
    metadata, see :func:`zero_test_flood`) adds 16 loops submitting comparison batches to K."""
    wrong = [("authorization", "Bearer not-a-token")]

    def bad_token():
        try:
            stub.GetParty(pb.GetPartyRequest(name=holder), metadata=wrong, timeout=10)
        finally:
            time.sleep(0.02)

    def churn():
        session = stub.OpenSession(pb.OpenSessionRequest(mode=pb.JOIN, holder=holder, key_bits=churn_bits),
                                   metadata=meta, timeout=120)
        stub.CloseSession(pb.SessionRef(session_id=session.session_id), metadata=meta, timeout=30)
    loops = [Background(bad_token)] + [Background(churn, pause_when_refused=0.2) for _ in range(4)]
    if stalled:
        session = stub.OpenSession(pb.OpenSessionRequest(mode=pb.JOIN, holder=holder, scheme="ristretto"),
                                   metadata=meta, timeout=120)
        header = pb.MessageHeader(session_id=session.session_id, kind="query", recipient=holder, stream=True)

        def stall(halt: threading.Event):
            yield pb.MessageChunk(header=header)
            halt.wait()                                  # never the rest: ends without its last chunk

        def upload(halt: threading.Event) -> None:
            stub.PutMessage(stall(halt), metadata=meta, timeout=3600)

        for _ in range(stalled):
            loop = Background(None, pause_when_refused=1.0)
            loop.step = functools.partial(upload, loop.halt_event)
            loops.append(loop)
    if flood is not None:
        loops += zero_test_flood(stub, *flood)
    for loop in loops:
        loop.start()
    return loops


def zero_test_flood(stub, accomplice, meta, accomplice_name: str, name: str) -> list[Background]:
    """The hostile party as a holder: its accomplice sends it a query, and 16 loops submit batches of
    65,536 ristretto comparisons to that round for K to zero-test (keyholder/lanes.py keeps them to the
    party's share of K's lanes)."""
    session = stub.OpenSession(pb.OpenSessionRequest(mode=pb.JOIN, holder=name, scheme="ristretto"),
                               metadata=accomplice, timeout=120)
    header = pb.MessageHeader(session_id=session.session_id, kind="query", recipient=name)
    stub.PutMessage(iter([pb.MessageChunk(header=header, data=b"q", last=True)]), metadata=accomplice, timeout=60)
    from common.schemes import get_scheme
    count = 1 << 16
    ciphertexts = get_scheme("ristretto").encrypt(session.public_key, [os.urandom(64)]) * count
    seqs = iter(range(1 << 24))

    def submit():
        stub.SubmitComparisons(pb.ComparisonBatch(session_id=session.session_id, round=1, seq=next(seqs),
                                                  ciphertexts=ciphertexts, row_comparisons=[64] * (count // 64),
                                                  attachments=[b"a"] * (count // 64)), metadata=meta, timeout=600)
    return [Background(submit, pause_when_refused=0.2) for _ in range(16)]


def open_latencies(stub, meta, holder: str, stop: threading.Event, into: dict[str, list[float]]) -> None:
    """Another party's OpenSession + CloseSession, ristretto and Paillier 2048 in turn, until ``stop``."""
    while not stop.is_set():
        for scheme, bits in (("ristretto", 0), ("paillier", 2048)):
            started = time.perf_counter()
            session = stub.OpenSession(pb.OpenSessionRequest(mode=pb.JOIN, holder=holder, key_bits=bits,
                                                             scheme=scheme), metadata=meta, timeout=120)
            into[scheme].append(time.perf_counter() - started)
            stub.CloseSession(pb.SessionRef(session_id=session.session_id), metadata=meta, timeout=30)
            stop.wait(0.5)


def worker_cpu(pid: int) -> float:
    """CPU seconds of the key holder's child processes (its key-generation workers)."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    pids = children.read_text().split() if children.exists() else []
    return sum(cpu_seconds(int(child)) for child in pids)


def summary(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    return {"n": len(values), "median_s": round(statistics.median(ordered), 3),
            "p95_s": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.keyholder_contention", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--m", type=int, default=10_000)
    parser.add_argument("--scheme", choices=("paillier", "ristretto"), default="ristretto")
    parser.add_argument("--churn-bits", type=int, default=4096, help="the hostile party's Paillier key size")
    parser.add_argument("--pairs", type=int, default=1,
                        help="hostile runs, each followed by a quiet one (medians over a noisy machine)")
    parser.add_argument("--stalled", type=int, default=32,
                        help="query uploads the hostile party begins to the holder and never finishes")
    parser.add_argument("--flood", action="store_true",
                        help="the hostile party also floods K with comparison batches, as a holder (CPU-bound: "
                             "on a small machine it competes for the cores with the join)")
    parser.add_argument("--json", help="write the numbers here")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-contention-"))
    querier_ids, holder_ids, shared = make_ids(args.n, args.m, 0.5, 1)
    q_csv, h_csv = write_inputs(work, querier_ids, holder_ids)
    kh, address = start_keyholder(work, ["--insecure"])
    children = [kh]
    results: dict = {"n": args.n, "m": args.m, "scheme": args.scheme, "churn_bits": args.churn_bits,
                     "stalled_uploads": args.stalled, "zero_test_flood": args.flood,
                     "cores": os.cpu_count(), "runs": []}
    try:
        for name in ("querier", "holder", "carol", "dave", "erin"):
            run(PARTY + ["init", "--dir", str(work / name), "--name", name])
            run(PARTY + ["register", "--dir", str(work / name), "--keyholder", address, "--insecure"])
        holder = Child("holder", PARTY + ["hold", "--dir", str(work / "holder"), "--input", str(h_csv),
                                          "--id-column", "id", "--release-columns", "age", "--quiet",
                                          "--poll-seconds", "5"], work / "holder.log")
        children.append(holder)
        wait_idle(holder.proc.pid)
        stub, carol = (pb_grpc.KeyHolderStub(grpc.insecure_channel(address)) for _ in range(2))  # own channels
        for phase in ["quiet"] + ["hostile", "quiet"] * args.pairs:
            latencies: dict[str, list[float]] = {"ristretto": [], "paillier": []}
            stop = threading.Event()
            sampler = threading.Thread(target=open_latencies, args=(stub, token_of(work / "dave"), "holder", stop,
                                                                     latencies), daemon=True)
            flood = [token_of(work / "erin"), token_of(work / "carol"), "erin", "carol"] if args.flood else None
            loops = hostile(carol, token_of(work / "carol"), "holder", args.churn_bits, args.stalled,
                            flood) if phase == "hostile" else []
            time.sleep(3 if loops else 0)                  # the throttle engaged, the key queue busy
            load = os.getloadavg()[0]
            cpu_before = (cpu_seconds(kh.proc.pid), worker_cpu(kh.proc.pid), time.process_time(),
                          cpu_seconds(holder.proc.pid))
            sampler.start()
            out = work / f"out-{len(results['runs'])}.csv"
            querier = Child("querier", PARTY + ["join", "--dir", str(work / "querier"), "--holder", "holder",
                                                "--input", str(q_csv), "--id-column", "id", "--out", str(out),
                                                "--scheme", args.scheme, "--quiet"], work / "querier.log")
            code = querier.wait(timeout=3600)
            stop.set()
            sampler.join(timeout=120)
            cpu_after = (cpu_seconds(kh.proc.pid), worker_cpu(kh.proc.pid), time.process_time(),
                         cpu_seconds(holder.proc.pid))
            counts = {f"loop{i}": loop.halt() for i, loop in enumerate(loops)}
            if code:
                raise RuntimeError(f"the join failed ({code}): {querier.text()[-2000:]}")
            checked = check_output(out, "join", shared)
            entry = {"phase": phase, "join_s": round(querier.wall, 2), "load_1min_at_start": round(load, 2),
                     "load_1min_at_end": round(os.getloadavg()[0], 2), "checked": checked,
                     "open_ristretto": summary(latencies["ristretto"]), "open_paillier_2048": summary(latencies["paillier"]),
                     "hostile_calls": counts,
                     "cpu_s": {what: round(after - before, 1) for what, before, after in
                               zip(("keyholder", "keygen_workers", "hostile_and_sampler_clients", "holder"),
                                   cpu_before, cpu_after)}}
            entry["cpu_s"]["querier"] = round(querier.cpu, 1)
            results["runs"].append(entry)
            print(json.dumps(entry), flush=True)
        quiet = [r["join_s"] for r in results["runs"] if r["phase"] == "quiet"]
        contended = [r["join_s"] for r in results["runs"] if r["phase"] == "hostile"]
        results["ratio"] = round(statistics.median(contended) / statistics.median(quiet), 3)
        side = ("keyholder", "keygen_workers", "hostile_and_sampler_clients")
        quiet_side = statistics.median(sum(r["cpu_s"][k] for k in side) for r in results["runs"]
                                       if r["phase"] == "quiet")
        extra_cores = statistics.median((sum(r["cpu_s"][k] for k in side) - quiet_side) / r["join_s"]
                                        for r in results["runs"] if r["phase"] == "hostile")
        cores = os.cpu_count() or 1
        results["hostile_extra_cores"] = round(extra_cores, 3)
        results["quiet_machine_estimate"] = round(1 / max(0.01, 1 - extra_cores / cores), 3)
        print(f"join {args.n} x {args.m} {args.scheme}: quiet {quiet} s, with a hostile party {contended} s: "
              f"wall ratio of medians {results['ratio']} (target <= 1.2; load average "
              f"{', '.join(f'{v:.1f}' for v in os.getloadavg())}); the hostile party's extra CPU (key holder, "
              f"key workers, its own clients) {extra_cores:.3f} cores: on an otherwise idle {cores}-core machine "
              f"a join using every core would take {results['quiet_machine_estimate']}x as long")
    finally:
        for child in reversed(children):
            child.stop()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
