"""Serving the key holder: the transport rule and ``--listen`` address, gRPC's options and caps, and
the lifecycle of a started server (:class:`RunningServer`: its event loop, thread pool, the expiry
sweep, the health and reflection services, and stopping)."""
from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from common.net import is_loopback
from keyholder.core import KeyHolder
from keyholder.limits import Limits
from keyholder.long_polls import Changes
from keyholder.pool import Pool, on_pool
from keyholder.servicer import KeyHolderServicer
from keyholder.grpc_errors import DecodeGuard
from proto import linkage_pb2 as pb
from proto import linkage_pb2_grpc as pb_grpc

log = logging.getLogger("keyholder")
SERVICE_NAME = pb.DESCRIPTOR.services_by_name["KeyHolder"].full_name
MAX_MESSAGE_BYTES = 64 << 20              # one gRPC message (a chunk or a batch), not a whole query
GRPC_OPTIONS = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES)]


def server_options(limits: Limits) -> list[tuple[str, int]]:
    """gRPC's own caps on connections: how many it accepts at once (more are closed on arrival), and when
    it closes one that is idle or still shaking hands (:mod:`keyholder.connections`)."""
    return [*GRPC_OPTIONS, ("grpc.max_allowed_incoming_connections", limits.max_connections),
            ("grpc.max_connection_idle_ms", int(limits.connection_idle * 1000)),
            ("grpc.server_handshake_timeout_ms", int(limits.handshake_timeout * 1000))]


@dataclass(frozen=True)
class TlsFiles:
    """Server side of mTLS: our certificate and key, and the CA that signs party certificates."""

    ca: Path
    cert: Path
    key: Path

    @classmethod
    def in_dir(cls, folder: Path) -> "TlsFiles":
        files = cls(folder / "ca.pem", folder / "server.pem", folder / "server.key")
        missing = [p.name for p in (files.ca, files.cert, files.key) if not p.is_file()]
        if missing:
            raise FileNotFoundError(f"{folder} lacks {', '.join(missing)} "
                                    "(create them with `keyholder pki init`)")
        return files


def split_address(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ValueError(f"--listen must be HOST:PORT, got '{listen}'")
    return host, int(port)


def check_listen(listen: str, tls: TlsFiles | None, insecure: bool) -> str:
    """The one transport rule: mTLS, or plaintext (``insecure``) on a loopback address only.
    Returns the host; raises ValueError with a one-line reason."""
    host, _ = split_address(listen)
    if insecure and tls is not None:
        raise ValueError("choose one of --insecure and --tls-dir")
    if insecure and not is_loopback(host):
        raise ValueError(f"--insecure serves plaintext and is refused on the non-loopback address {host}")
    if not insecure and tls is None:
        raise ValueError("choose --tls-dir DIR (mTLS) or --insecure (loopback only)")
    return host


class RunningServer:
    """A started key holder: the ``grpc.aio`` server on an event loop in a background thread, its core,
    and the sweep that ends expired and idle sessions.  ``stop`` and ``wait`` are synchronous."""

    def __init__(self, core: KeyHolder, workers: int) -> None:
        self.core, self.port = core, 0
        self.loop = asyncio.new_event_loop()
        self.pool = Pool(workers)          # the core's work; a stopping server waits for it (wait_idle)
        self.loop.set_default_executor(self.pool)
        self._thread = threading.Thread(target=self.loop.run_forever, name="grpc-aio", daemon=True)
        self._thread.start()
        self._server: grpc.aio.Server | None = None
        self._sweeper: asyncio.Task | None = None
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._stopping = False

    @property
    def server(self) -> "RunningServer":
        """Itself: ``running.server.stop(grace)`` keeps working for callers of the synchronous server."""
        return self

    def _call(self, coroutine, timeout: float | None = None):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    async def _start(self, listen: str, credentials: grpc.ServerCredentials | None) -> int:
        server = grpc.aio.server(options=server_options(self.core.limits), interceptors=[DecodeGuard()])
        pb_grpc.add_KeyHolderServicer_to_server(
            KeyHolderServicer(self.core, mtls=credentials is not None, changes=Changes(self.loop)), server)
        health_servicer = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
             reflection.SERVICE_NAME), server)
        port = (server.add_insecure_port(listen) if credentials is None
                else server.add_secure_port(listen, credentials))
        if port == 0:
            raise OSError(f"cannot listen on {listen}")
        await server.start()
        for name in ("", SERVICE_NAME):
            await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
        self._server = server
        self._sweeper = asyncio.create_task(self._sweep())
        return port

    async def _sweep(self) -> None:
        every = max(0.2, min(15.0, self.core.limits.idle_timeout / 4))
        while True:
            await asyncio.sleep(every)
            try:
                await on_pool(self.core.expire_due)
            except Exception:
                log.exception("expiry sweep failed")

    async def _shutdown(self, grace: float) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self._server is not None:
            await self._server.stop(grace)

    def stop(self, grace: float = 1.0, close_store: bool = True) -> None:
        """Stop serving (in-flight calls get ``grace`` seconds), then close the store unless the caller
        closes it itself after the last call's work has finished (:meth:`wait_idle`).  Idempotent."""
        with self._lock:
            if self._stopping:
                return
            self._stopping = True
        try:
            self._call(self._shutdown(grace), timeout=grace + 5.0)
        except Exception:
            log.exception("shutdown")
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5.0)
        self.pool.shutdown(wait=False, cancel_futures=True)
        if close_store:
            self.core.close()
        self._stopped.set()

    def wait_idle(self, timeout: float) -> int:
        """After :meth:`stop`: wait until the core's work under way has finished (at most ``timeout`` s);
        returns the pieces still running."""
        return self.pool.wait_idle(timeout)

    def wait(self) -> None:
        """Block until :meth:`stop` (signal handlers still run meanwhile)."""
        while not self._stopped.wait(0.5):
            pass


def start(core: KeyHolder, listen: str, tls: TlsFiles | None, insecure: bool,
          workers: int = 32) -> RunningServer:
    """Bind and start the key holder; plaintext only with ``insecure`` on loopback."""
    host = check_listen(listen, tls, insecure)
    credentials = None if insecure else grpc.ssl_server_credentials(
        [(tls.key.read_bytes(), tls.cert.read_bytes())], root_certificates=tls.ca.read_bytes(),
        require_client_auth=True)
    running = RunningServer(core, workers)
    try:
        running.port = running._call(running._start(listen, credentials), timeout=30)
    except BaseException:
        running.loop.call_soon_threadsafe(running.loop.stop)
        running._thread.join(timeout=5.0)
        raise
    log.info("key holder listening on %s:%d (%s)", host, running.port, "plaintext" if insecure else "mTLS")
    return running
