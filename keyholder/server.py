"""gRPC front of the key holder: a thin servicer over :class:`KeyHolder`.

Each call authenticates the party (bearer token, and under mTLS the client
certificate's common name), delegates to a plain method, and turns a
:class:`ServiceError` into the gRPC status with its one-line message.  The
gRPC health and reflection services are on.
"""
from __future__ import annotations

import ipaddress
import logging
import threading
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from keyholder.sessions import KeyHolder, PairRule, ServiceError
from keyholder.store import Message, Round, Session
from proto import linkage_pb2 as pb
from proto import linkage_pb2_grpc as pb_grpc

log = logging.getLogger("keyholder")
T = TypeVar("T")
SERVICE_NAME = pb.DESCRIPTOR.services_by_name["KeyHolder"].full_name
MAX_MESSAGE_BYTES = 64 << 20
GRPC_OPTIONS = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES)]


def session_info(session: Session) -> pb.SessionInfo:
    return pb.SessionInfo(session_id=session.id, mode=session.mode, querier=session.querier,
                          holder=session.holder, key_bits=session.key_bits, modulus=session.modulus,
                          status=session.status, created_at=session.created_at,
                          expires_at=session.expires_at, rounds=session.rounds)


def message_info(message: Message) -> pb.MessageInfo:
    return pb.MessageInfo(message_id=message.id, session_id=message.session_id, kind=message.kind,
                          sender=message.sender, recipient=message.recipient, size=message.size,
                          round=message.round or 0)


def round_info(found: Round, for_querier: bool) -> pb.RoundInfo:
    """Round status: matches and the note for the querier, the comparison count for the holder."""
    info = pb.RoundInfo(session_id=found.session_id, round=found.round, status=found.status,
                        reason=found.reason or "")
    if for_querier:  # the comparison count would tell the querier the holder's row count
        info.matched_rows = found.matched_rows
        info.holder_note = found.holder_note or b""
    else:
        info.comparisons = found.comparisons
    return info


def pair_rule(rule: pb.PairRule) -> PairRule:
    return PairRule(tuple(rule.group_sizes), tuple(tuple(term.groups) for term in rule.terms))


class KeyHolderServicer(pb_grpc.KeyHolderServicer):
    def __init__(self, core: KeyHolder, mtls: bool) -> None:
        self.core = core
        self.mtls = mtls

    # -- plumbing -------------------------------------------------------------
    def _cert_name(self, context) -> str | None:
        if not self.mtls:
            return None
        names = context.auth_context().get("x509_common_name") or []
        if not names:
            raise ServiceError("UNAUTHENTICATED", "a client certificate is required")
        return names[0].decode()

    @staticmethod
    def _token(context) -> str | None:
        for key, value in context.invocation_metadata():
            if key == "authorization" and value.startswith("Bearer "):
                return value[len("Bearer "):]
        return None

    def _party(self, context) -> str:
        return self.core.authenticate(self._token(context), self._cert_name(context))

    @staticmethod
    def _run(context, action: Callable[[], T]) -> T:
        try:
            return action()
        except ServiceError as error:
            context.abort(getattr(grpc.StatusCode, error.code), error.message)
        except Exception:  # never echo internals (they could carry data) to the caller
            log.exception("internal error")
            context.abort(grpc.StatusCode.INTERNAL, "internal error in the key holder (see its log)")

    # -- parties --------------------------------------------------------------
    def Register(self, request, context):
        def action():
            issued, fingerprint = self.core.register(request.name, request.x25519_public_key,
                                                     self._cert_name(context), self._token(context))
            return pb.RegisterReply(name=request.name, token=issued, fingerprint=fingerprint)
        return self._run(context, action)

    def GetParty(self, request, context):
        def action():
            self._party(context)
            found = self.core.party(request.name)
            return pb.PartyInfo(name=found.name, x25519_public_key=found.x25519,
                                fingerprint=found.fingerprint, registered_at=found.registered_at)
        return self._run(context, action)

    # -- sessions -------------------------------------------------------------
    def OpenSession(self, request, context):
        return self._run(context, lambda: session_info(self.core.open_session(
            self._party(context), request.mode, request.holder, request.key_bits, request.ttl_seconds)))

    def GetSession(self, request, context):
        return self._run(context, lambda: session_info(
            self.core.session(self._party(context), request.session_id)))

    def CloseSession(self, request, context):
        return self._run(context, lambda: session_info(
            self.core.close_session(self._party(context), request.session_id)))

    # -- relay ----------------------------------------------------------------
    def PutMessage(self, request_iterator, context):
        def action():
            party = self._party(context)
            first = next(request_iterator, None)
            if first is None or not first.HasField("header"):
                raise ServiceError("INVALID_ARGUMENT", "the first chunk must carry the header")
            header = first.header

            def chunks():
                if first.data:
                    yield first.data
                for chunk in request_iterator:
                    yield chunk.data
            return message_info(self.core.put_message(party, header.session_id, header.kind, header.recipient,
                                                      chunks()))
        return self._run(context, action)

    def GetMessage(self, request, context):
        message, chunks = self._run(context, lambda: self.core.get_message(
            self._party(context), request.message_id))
        header = pb.MessageHeader(session_id=message.session_id, kind=message.kind,
                                  recipient=message.recipient)
        first = True
        for data in chunks:
            yield pb.MessageChunk(header=header, data=data) if first else pb.MessageChunk(data=data)
            first = False

    def AckMessage(self, request, context):
        return self._run(context, lambda: message_info(self.core.ack_message(self._party(context),
                                                                            request.message_id)))

    # -- rounds ---------------------------------------------------------------
    def ListWork(self, request, context):
        def action():
            items = self.core.list_work(self._party(context), request.wait_seconds)
            return pb.WorkList(items=[
                pb.WorkItem(session=session_info(session), round=found.round,
                            message_id=found.message_id, querier=session.querier,
                            received_seqs=seqs)
                for session, found, seqs in items])
        return self._run(context, action)

    def SubmitComparisons(self, request, context):
        def action():
            count, duplicate = self.core.submit_batch(
                self._party(context), request.session_id, request.round, request.seq,
                request.ciphertexts, list(request.row_comparisons), list(request.attachments),
                pair_rule(request.rule) if request.HasField("rule") else None)
            return pb.BatchAck(seq=request.seq, comparisons=count, duplicate=duplicate)
        return self._run(context, action)

    def FinishRound(self, request, context):
        return self._run(context, lambda: round_info(self.core.finish_round(
            self._party(context), request.session_id, request.round, request.batches,
            request.holder_note), for_querier=False))

    def AbortRound(self, request, context):
        return self._run(context, lambda: round_info(self.core.abort_round(
            self._party(context), request.session_id, request.round, request.reason),
            for_querier=False))

    def WaitRound(self, request, context):
        return self._run(context, lambda: round_info(self.core.wait_round(
            self._party(context), request.session_id, request.round, request.wait_seconds),
            for_querier=True))

    def FetchResults(self, request, context):
        pages = self._run(context, lambda: self.core.fetch_results(
            self._party(context), request.session_id, request.round))
        for page in pages:
            yield pb.ResultBatch(matches=[pb.Match(match_indices=indices, attachment=blob)
                                          for indices, blob in page])


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


def is_loopback(host: str) -> bool:
    # The party client has its own copy: keyholder and party_client share only proto/.
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def split_address(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ValueError(f"--listen must be HOST:PORT, got '{listen}'")
    return host, int(port)


class RunningServer:
    """A started key holder: the gRPC server, its core and the expiry reaper."""

    def __init__(self, server: grpc.Server, core: KeyHolder, port: int) -> None:
        self.server, self.core, self.port = server, core, port
        self._stop = threading.Event()
        self._reaper = threading.Thread(target=self._reap, name="expiry", daemon=True)
        self._reaper.start()

    def _reap(self) -> None:
        while not self._stop.wait(15.0):
            try:
                self.core.expire_due()
            except Exception:
                log.exception("expiry sweep failed")

    def stop(self, grace: float = 1.0) -> None:
        self._stop.set()
        self.server.stop(grace).wait()
        self.core.close()

    def wait(self) -> None:
        self.server.wait_for_termination()


def start(core: KeyHolder, listen: str, tls: TlsFiles | None, insecure: bool,
          workers: int = 32) -> RunningServer:
    """Bind and start the key holder; plaintext only with ``insecure`` on loopback."""
    host, _ = split_address(listen)
    if insecure and not is_loopback(host):
        raise ValueError(f"--insecure serves plaintext and is refused on the non-loopback address {host}")
    if not insecure and tls is None:
        raise ValueError("choose --tls-dir DIR (mTLS) or --insecure (loopback only)")
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rpc"),
                         options=GRPC_OPTIONS)
    pb_grpc.add_KeyHolderServicer_to_server(KeyHolderServicer(core, mtls=not insecure), server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
         reflection.SERVICE_NAME), server)
    if insecure:
        port = server.add_insecure_port(listen)
    else:
        credentials = grpc.ssl_server_credentials(
            [(tls.key.read_bytes(), tls.cert.read_bytes())],
            root_certificates=tls.ca.read_bytes(), require_client_auth=True)
        port = server.add_secure_port(listen, credentials)
    if port == 0:
        raise OSError(f"cannot listen on {listen}")
    server.start()
    for name in ("", SERVICE_NAME):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    log.info("key holder listening on %s:%d (%s)", host, port, "plaintext" if insecure else "mTLS")
    return RunningServer(server, core, port)
