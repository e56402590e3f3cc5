"""The party's connection to the key holder: mTLS (or loopback plaintext),
bearer-token metadata, retries while the key holder restarts, and one-line
errors for refusals.
"""
from __future__ import annotations

import ipaddress
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import grpc

from party_client.errors import PartyError
from party_client.identity import PartyDir
from proto import linkage_pb2 as pb
from proto import linkage_pb2_grpc as pb_grpc

MAX_MESSAGE_BYTES = 64 << 20
CHANNEL_OPTIONS = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                   ("grpc.max_send_message_length", MAX_MESSAGE_BYTES)]
RETRYABLE = (grpc.StatusCode.UNAVAILABLE,)


class KeyHolderUnavailable(PartyError):
    """The key holder could not be reached within the retry window."""


def _is_loopback(host: str) -> bool:
    # The key holder has its own copy: keyholder and party_client share only proto/.
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Connection:
    """A channel to the key holder on behalf of one party."""

    def __init__(self, party: PartyDir, address: str | None = None, insecure: bool = False,
                 tls_dir: Path | None = None, retry_seconds: float = 120.0) -> None:
        self.party = party
        self.address = address or party.keyholder
        if not self.address:
            raise PartyError("no key holder address: pass --keyholder HOST:PORT")
        self.retry_seconds = retry_seconds
        self.insecure = insecure
        host = self.address.rpartition(":")[0]
        if insecure:
            if not _is_loopback(host):
                raise PartyError(f"--insecure sends the token in plaintext and is refused for {host}")
            self.channel = grpc.insecure_channel(self.address, options=CHANNEL_OPTIONS)
        else:
            folder = Path(tls_dir) if tls_dir else party.tls_dir
            files = [folder / name for name in ("ca.pem", "client.key", "client.pem")]
            missing = [f.name for f in files if not f.is_file()]
            if missing:
                raise PartyError(f"{folder} lacks {', '.join(missing)}: issue a client certificate "
                                 "(`keyholder pki issue`) or use --insecure on loopback")
            credentials = grpc.ssl_channel_credentials(*(f.read_bytes() for f in files))
            self.channel = grpc.secure_channel(self.address, credentials, options=CHANNEL_OPTIONS)
        self.stub = pb_grpc.KeyHolderStub(self.channel)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _metadata(self) -> list[tuple[str, str]]:
        token = self.party.token
        return [("authorization", f"Bearer {token}")] if token else []

    def call(self, method: str, request: Any, timeout: float | None = 60.0) -> Any:
        """Unary call with retries while the key holder is unavailable."""
        return self._retry(lambda: getattr(self.stub, method)(
            request, metadata=self._metadata(), timeout=timeout))

    def stream(self, method: str, request: Any) -> Iterator[Any]:
        """Server-streaming call (not retried mid-stream)."""
        try:
            yield from getattr(self.stub, method)(request, metadata=self._metadata())
        except grpc.RpcError as error:
            raise self._error(error) from None

    def upload(self, method: str, chunks: Callable[[], Iterator[Any]], timeout: float | None = None) -> Any:
        """Client-streaming call; ``chunks`` is a factory so a retry can restart the stream."""
        return self._retry(lambda: getattr(self.stub, method)(
            chunks(), metadata=self._metadata(), timeout=timeout))

    def _retry(self, attempt: Callable[[], Any]) -> Any:
        deadline = time.monotonic() + self.retry_seconds
        delay = 0.2
        while True:
            try:
                return attempt()
            except grpc.RpcError as error:
                if error.code() not in RETRYABLE or time.monotonic() + delay > deadline:
                    raise self._error(error) from None
                time.sleep(delay)
                delay = min(delay * 2, 5.0)

    def _error(self, error: grpc.RpcError) -> PartyError:
        code = error.code()
        if code == grpc.StatusCode.UNAVAILABLE:
            return KeyHolderUnavailable(f"key holder at {self.address} is unavailable: "
                                        f"{(error.details() or '').splitlines()[0] if error.details() else code.name}")
        return PartyError(f"key holder refused ({code.name}): {error.details()}")


def register(party: PartyDir, connection: Connection) -> pb.RegisterReply:
    reply = connection.call("Register", pb.RegisterRequest(name=party.name,
                                                           x25519_public_key=party.public_key))
    party.save_token(reply.token)
    party.save_keyholder(connection.address, connection.insecure)
    return reply
