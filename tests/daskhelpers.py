"""A real Dask cluster on loopback for the tests: one ``dask scheduler`` and single-threaded
``dask worker`` processes (no nanny, so ``kill -9`` of a worker's pid really kills it), in
plaintext or with TLS certificates from the project's development PKI."""
from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from keyholder import pki
from linkhelpers import free_port

ROOT = Path(__file__).resolve().parent.parent
START_SECONDS = 60.0


def dask_tls_files(folder: Path) -> dict[str, Path]:
    """A CA and one certificate (server and client use: Dask's TLS is mutual) for every process."""
    pki.init_ca(folder)
    ca_key = serialization.load_pem_private_key((folder / "ca.key").read_bytes(), password=None)
    ca_cert = x509.load_pem_x509_certificate((folder / "ca.pem").read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    cert = pki._certificate("dask", key.public_key(), ca_cert.subject, ca_key, ca=False,
                            hosts=("127.0.0.1", "localhost"))
    (folder / "dask.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "dask.key").write_bytes(pki._key_pem(key))
    assert cert.not_valid_after_utc > dt.datetime.now(dt.timezone.utc)
    return {"ca": folder / "ca.pem", "cert": folder / "dask.pem", "key": folder / "dask.key"}


@dataclass
class DaskCluster:
    folder: Path
    tls: dict[str, Path] | None = None
    workers: int = 2
    address: str = ""
    scheduler: subprocess.Popen | None = None
    worker_processes: list[subprocess.Popen] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        """The environment of a process that connects (Dask reads its TLS files from here)."""
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        if self.tls:
            env.update(DASK_DISTRIBUTED__COMM__TLS__CA_FILE=str(self.tls["ca"]),
                       DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT=str(self.tls["cert"]),
                       DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY=str(self.tls["key"]),
                       DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION="True")
        return env

    def _tls_flags(self) -> list[str]:
        if not self.tls:
            return []
        return ["--tls-ca-file", str(self.tls["ca"]), "--tls-cert", str(self.tls["cert"]),
                "--tls-key", str(self.tls["key"])]

    def _spawn(self, module: str, *args: str) -> subprocess.Popen:
        log = open(self.folder / f"{module}-{len(self.worker_processes)}.log", "a")
        return subprocess.Popen([sys.executable, "-m", f"distributed.cli.{module}", *args], cwd=ROOT,
                                stdout=log, stderr=subprocess.STDOUT, env=self.env())

    def start(self) -> "DaskCluster":
        self.folder.mkdir(parents=True, exist_ok=True)
        port = free_port()
        self.address = f"{'tls' if self.tls else 'tcp'}://127.0.0.1:{port}"
        self.scheduler = self._spawn("dask_scheduler", "--host", "127.0.0.1", "--port", str(port),
                                     "--no-dashboard", *(["--protocol", "tls"] if self.tls else []),
                                     *self._tls_flags())
        for _ in range(self.workers):
            self.worker_processes.append(self._spawn(
                "dask_worker", self.address, "--nthreads", "1", "--no-dashboard", "--no-nanny",
                "--host", "127.0.0.1", "--memory-limit", "0", *self._tls_flags()))
        print(f"waiting up to {START_SECONDS:.0f} s for the Dask scheduler at {self.address} and "
              f"{self.workers} worker(s)", flush=True)
        client = self.client(timeout=START_SECONDS)
        try:
            client.wait_for_workers(self.workers, timeout=START_SECONDS)
        finally:
            client.close()
        return self

    def security(self):
        from distributed.security import Security
        if not self.tls:
            return None
        return Security(tls_ca_file=str(self.tls["ca"]), tls_client_cert=str(self.tls["cert"]),
                        tls_client_key=str(self.tls["key"]), require_encryption=True)

    def client(self, timeout: float = 30.0):
        from distributed import Client
        return Client(self.address, timeout=timeout, security=self.security(), set_as_default=False)

    @staticmethod
    def busy_worker(client, prefix: str, timeout: float = 60.0) -> str | None:
        """The first worker seen processing a task named ``prefix-…`` (None after ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for worker, keys in client.processing().items():
                if any(str(k).startswith(prefix) for k in keys):
                    return worker
            time.sleep(0.01)
        return None

    def kill_when_busy(self, client, prefix: str, target: str = "worker",
                       timeout: float = 60.0) -> threading.Thread:
        """A thread that ``kill -9``s, as soon as a task named ``prefix-…`` is being processed, the worker
        running it (``target="worker"``) or the scheduler; ``thread.killed`` records what it killed."""
        pids = {} if target == "scheduler" else client.run(os.getpid)

        def watch() -> None:
            worker = self.busy_worker(client, prefix, timeout)
            if worker is None:
                return
            if target == "scheduler":
                os.kill(self.scheduler.pid, signal.SIGKILL)
                thread.killed = "scheduler"
            else:
                os.kill(pids[worker], signal.SIGKILL)
                thread.killed = worker
        thread = threading.Thread(target=watch, daemon=True)
        thread.killed = None
        thread.start()
        return thread

    def task_prefixes(self, client) -> set[str]:
        return set(client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.task_prefixes)))

    def stop(self) -> None:
        for process in [*self.worker_processes, self.scheduler]:
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(timeout=20)
