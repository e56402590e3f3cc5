"""Helpers for the linking tests: a real ``keyholder serve`` process on a free loopback port
(mTLS with a development PKI, or plaintext on loopback), and parties created
and registered through the real ``party`` CLI.

Tests use 1024-bit session keys (the server is started with
``--min-key-bits 1024``) to stay fast; the demo test runs the 2048-bit default.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import grpc
import numpy as np
import pandas as pd
from grpc_health.v1 import health_pb2, health_pb2_grpc

from common.schemes import SCHEME_NAMES
from party_client import Party
from party_client.matching.normalize import normalize_identifiers
from proto import linkage_pb2_grpc as pb_grpc

TEST_KEY_BITS = 1024
SCHEMES = list(SCHEME_NAMES)       # every comparison scheme; privacy tests run for each
REPRESENTATIVE = ["paillier", "ristretto"]  # one per arithmetic (big-number, elliptic curve): slow paths run for these


def key_bits_for(scheme: str) -> int:
    """The key size a test asks for: small Paillier keys; 0 (the group's one size) for the curves."""
    return TEST_KEY_BITS if scheme == "paillier" else 0


def scheme_flags(scheme: str) -> list[str]:
    """The querying CLI's flags for a test session of ``scheme``."""
    return ["--scheme", scheme] + (["--key-bits", str(TEST_KEY_BITS)] if scheme == "paillier" else [])


def encoding_length(scheme: str) -> int:
    """Bytes of a keyed encoding in a test session of ``scheme`` (Paillier: |n| - 64 bits)."""
    from common.schemes import get_scheme
    from party_client.crypto.encoding import encoding_bytes
    return encoding_bytes(TEST_KEY_BITS) if scheme == "paillier" else get_scheme(scheme).encoding_bytes(b"")


def blinded_comparisons(scheme: str, public: bytes, zero: list[bool]) -> bytes:
    """Blinded comparisons under a session's public key, computed as the parties do (``E(X)`` by
    the querier's encryption, ``E(r (X - Y))`` by the holder's comparison), with ``X = Y`` exactly
    where ``zero`` says so."""
    import secrets

    from common.schemes import get_scheme
    arithmetic = get_scheme(scheme)
    width = arithmetic.encoding_bytes(public)
    xs = [secrets.token_bytes(width) for _ in zero]
    ys = [x if match else secrets.token_bytes(width) for x, match in zip(xs, zero)]
    return arithmetic.compare(public, arithmetic.encrypt(public, xs), list(range(len(xs))), ys)


class FakeClock:
    """A clock the test sets (``clock.now = 30.0``), for code that takes ``clock=``."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def keyholder_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "keyholder.cli", *args]


def party_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "party_client.cli", *args]


def run_party(*args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
    result = subprocess.run(party_cmd(*args), capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"party {' '.join(args)} failed ({result.returncode}): {result.stderr}")
    return result


@dataclass
class KeyHolderProcess:
    address: str
    port: int
    data_dir: Path
    log_path: Path
    tls_dir: Path | None
    process: subprocess.Popen
    passphrase: str
    extra: tuple[str, ...] = ()
    nofile: int | None = None        # the process's file-descriptor limit (``ulimit -n``), if lowered

    @property
    def insecure(self) -> bool:
        return self.tls_dir is None

    def flags(self) -> list[str]:
        return ["--keyholder", self.address] + (["--insecure"] if self.insecure else [])

    def channel(self, party_tls: Path | None = None) -> grpc.Channel:
        if self.insecure:
            return grpc.insecure_channel(self.address)
        files = [(party_tls / n).read_bytes() for n in ("ca.pem", "client.key", "client.pem")]
        return grpc.secure_channel(self.address, grpc.ssl_channel_credentials(*files))

    def start(self) -> None:
        args = ["serve", "--listen", self.address, "--data-dir", str(self.data_dir),
                "--min-key-bits", str(TEST_KEY_BITS), *self.extra]
        args += ["--insecure"] if self.insecure else ["--tls-dir", str(self.tls_dir)]
        log = open(self.log_path, "a")
        command = keyholder_cmd(*args)
        if self.nofile:        # the shell lowers the limit and becomes the key holder (no preexec_fn: threads)
            command = ["sh", "-c", f'ulimit -n {int(self.nofile)} && exec "$@"', "sh", *command]
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                        env={**os.environ, "KEYHOLDER_PASSPHRASE": self.passphrase})
        self.wait_healthy()

    def wait_healthy(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"keyholder exited ({self.process.returncode}): {self.log_path.read_text()}")
            if self.log_path.exists() and "listening on" in self.log_path.read_text():
                if self.insecure:
                    stub = health_pb2_grpc.HealthStub(grpc.insecure_channel(self.address))
                    try:
                        reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=2)
                        if reply.status == health_pb2.HealthCheckResponse.SERVING:
                            return
                    except grpc.RpcError:
                        pass
                else:
                    return
            time.sleep(0.1)
        raise RuntimeError("keyholder did not become healthy")

    def stop(self, kill: bool = False) -> None:
        if self.process.poll() is None:
            self.process.kill() if kill else self.process.terminate()
            self.process.wait(timeout=20)


def start_keyholder(folder: Path, tls: bool, extra: tuple[str, ...] = (), nofile: int | None = None) -> KeyHolderProcess:
    folder.mkdir(parents=True, exist_ok=True)
    tls_dir = None
    if tls:
        tls_dir = folder / "tls"
        subprocess.run(keyholder_cmd("pki", "init", "--tls-dir", str(tls_dir)), check=True, capture_output=True)
    port = free_port()
    server = KeyHolderProcess(f"127.0.0.1:{port}", port, folder / "data", folder / "keyholder.log", tls_dir,
                              None, passphrase=os.urandom(12).hex(), extra=extra, nofile=nofile)
    server.start()
    return server


_PARTY_COUNTER = [0]


def make_party(server: KeyHolderProcess, folder: Path, name: str | None = None,
               cli: bool = True) -> tuple[Path, str]:
    """``party init`` + (mTLS: ``keyholder pki issue``) + ``party register``, all through the CLIs; with
    ``cli=False`` (a plaintext key holder) the same two steps through the API, in this process (for
    tests about something else, where two process start-ups per party would dominate)."""
    _PARTY_COUNTER[0] += 1
    name = name or f"party{_PARTY_COUNTER[0]}"
    directory = folder / name
    if not cli:
        assert server.insecure, "in-process parties are for plaintext loopback key holders"
        Party.init(directory, name, keyholder=server.address, insecure=True, progress=False).register()
        return directory, name
    run_party("init", "--dir", str(directory), "--name", name)
    if not server.insecure:
        subprocess.run(keyholder_cmd("pki", "issue", "--tls-dir", str(server.tls_dir), "--name", name,
                                     "--out", str(directory / "tls")), check=True, capture_output=True)
    run_party("register", "--dir", str(directory), *server.flags())
    return directory, name


def make_parties(server: KeyHolderProcess, folder: Path, count: int, cli: bool = True) -> list[tuple[Path, str]]:
    """``count`` parties made as :func:`make_party` does, at the same time."""
    names = []
    for _ in range(count):
        _PARTY_COUNTER[0] += 1
        names.append(f"party{_PARTY_COUNTER[0]}")
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(lambda name: make_party(server, folder, name, cli), names))




def join_with_interrupted_key_holder(server: KeyHolderProcess, tmp_path: Path, seed: int,
                                     interrupt, key_bits: int):
    """A real join (80 × 200 rows, 16-row batches) whose key holder is interrupted by ``interrupt()``
    right after the holder's third batch; returns (querier, holder, result, batches submitted)."""
    (qdir, _), (hdir, hname) = make_party(server, tmp_path, cli=False), make_party(server, tmp_path, cli=False)
    querier, holder = tables(seed, n=80, m=200, overlap=50)
    serving = Party(hdir, progress=False).prepare_holder(holder, "health_no", ["cost"])
    serving.options.batch_rows = 16
    submitted: list[int] = []
    original_call = serving.connection.call

    def call(method, request, timeout=60.0):
        reply = original_call(method, request, timeout)
        if method == "SubmitComparisons":
            submitted.append(request.seq)
            if len(submitted) == 3:   # the querier waits in WaitRound, the holder is mid-submission
                interrupt()
        return reply
    serving.connection.call = call

    stop = threading.Event()
    thread = threading.Thread(target=serving.serve, kwargs={"once": False, "poll_seconds": 0.5,
                                                            "stop": stop.is_set}, daemon=True)
    thread.start()
    try:
        result = Party(qdir, progress=False).join(hname, querier, "hcn", key_bits=key_bits, timeout=300)
    finally:
        stop.set()
        thread.join(timeout=60)
    return querier, holder, result, submitted

def relayed(qdir: Path, deadline: float = 60.0) -> str:
    """Wait until a querier's saved state says its query opened round 1 (the query is at K, for the holder
    to serve); returns the session id."""
    from party_client.identity import PartyDir
    from party_client.sessions_state import SessionStates
    states, limit = SessionStates(PartyDir.load(qdir)), time.monotonic() + deadline
    while time.monotonic() < limit:
        found = [s for s in states.all() if s.round == 1]
        if found:
            return found[0].session_id
        time.sleep(0.1)
    raise AssertionError("the querier never relayed its query")


def tables(seed: int, n: int = 120, m: int = 150, overlap: int = 60):
    rng = np.random.default_rng(seed)
    ids = [f"{v:010d}" for v in rng.choice(10 ** 10, n + m, replace=False)]
    querier = pd.DataFrame({"hcn": ids[:n], "age": rng.integers(1, 99, n).astype(str)})
    holder_ids = ids[:overlap] + ids[n:n + m - overlap]
    holder = pd.DataFrame({"health_no": holder_ids, "diagnosis": rng.choice(["I10", "E11", "C50"], m),
                           "cost": rng.integers(10, 999, m).astype(str)})
    # formatting differences that normalization must absorb, a blank id, and a duplicate on each side
    querier.loc[0, "hcn"] = f" {querier.loc[0, 'hcn'][:4]}-{querier.loc[0, 'hcn'][4:]} "
    querier.loc[1, "hcn"] = ""
    querier.loc[2, "hcn"] = querier.loc[3, "hcn"]
    holder.loc[len(holder)] = [holder.loc[5, "health_no"], "Z99", "1"]
    return querier, holder

def plaintext_join(querier: pd.DataFrame, holder: pd.DataFrame, release: list[str]) -> pd.DataFrame:
    left = querier.assign(__k=normalize_identifiers(querier["hcn"]).replace("", None))
    right = holder.assign(__k=normalize_identifiers(holder["health_no"]).replace("", None))[["__k", *release]]
    right = right[right["__k"].notna()]
    merged = left.merge(right, on="__k", how="left", indicator=True)
    merged["matched"] = merged.pop("_merge") == "both"
    return merged.drop(columns="__k")

def canonical(frame: pd.DataFrame) -> list[tuple]:
    return sorted(tuple("" if pd.isna(v) else str(v) for v in row) for row in frame.itertuples(index=False))

def serve_and_join(qdir: Path, hdir: Path, hname: str, querier_frame: pd.DataFrame, holder_frame: pd.DataFrame, *,
                   holder: dict, join: dict, served: list | None = None):
    """A real join through the API: the holder serves ``holder_frame`` from a thread
    (``Party.prepare_holder(frame, **holder)``), the querier joins ``querier_frame`` (``Party.join(hname, frame,
    **join)``); ``served`` receives the holder's own summary of each round."""
    stop = threading.Event()
    serving = Party(hdir, progress=False).prepare_holder(holder_frame, **holder)
    rounds = served if served is not None else []
    thread = threading.Thread(target=lambda: rounds.extend(serving.serve(once=False, poll_seconds=0.5,
                                                                         stop=stop.is_set)))
    thread.start()
    try:
        return Party(qdir, progress=False).join(hname, querier_frame, **{"timeout": 300, **join})
    finally:
        stop.set()
        thread.join(timeout=60)
        serving.connection.close()

def serve_in_thread(holder_party: Party, holder: pd.DataFrame, release, stop: threading.Event):
    serving = holder_party.prepare_holder(holder, "health_no", release)
    thread = threading.Thread(target=serving.serve, kwargs={"once": False, "poll_seconds": 0.5,
                                                            "stop": stop.is_set}, daemon=True)
    thread.start()
    return thread

def stub_for(server, party_dir: Path):
    channel = server.channel(party_dir / "tls" if not server.insecure else None)
    token = (party_dir / "token").read_text().strip()
    return pb_grpc.KeyHolderStub(channel), [("authorization", f"Bearer {token}")]


def refusal_line(stderr: str) -> str:
    """The one error line of a refused party command: the last line, after only wait notices (a querier
    says what it waits for while the holder has not served the round, one line per notice)."""
    *notices, error = stderr.strip().splitlines()
    assert all("waiting for" in line for line in notices), notices
    return error


def all_bytes(folder: Path) -> bytes:
    """Every byte of every file under ``folder`` (a key holder's store and spool, to search)."""
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def needles(value: str) -> list[bytes]:
    """How a value could sit in a file: UTF-8 or UTF-16."""
    return [value.encode(), value.encode("utf-16-le")]
