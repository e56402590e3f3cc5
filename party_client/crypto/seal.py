"""Sealed messages between parties (docs/protocol.md, "Roles").

A sealed message is a stream of records that the key holder relays and
spools but cannot open: X25519 (an ephemeral key *and* the sender's long-term
key, so the recipient knows who sealed it) + HKDF-SHA256 + AES-256-GCM, with
the session id and message kind as associated data.  Each record carries its
index and a last-record flag in the associated data, so records cannot be
reordered, dropped or truncated unnoticed.

Row attachments and the holder's note use :class:`SessionCipher`, an
AES-256-GCM key derived from the session secret ``s`` that only Q and H hold.
"""
from __future__ import annotations

import struct
from typing import Iterable, Iterator

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF, HKDFExpand

from common.aead import NONCE_BYTES, Aead, AuthenticationFailed

MAGIC = b"SLS1"
HEADER_BYTES = len(MAGIC) + 32
LENGTH = struct.Struct(">I")
MAX_RECORD_BYTES = 64 << 20


class SealError(ValueError):
    """A sealed message is damaged, truncated, or not for us."""


def public_bytes(key: X25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _message_key(ephemeral_shared: bytes, static_shared: bytes, context: bytes, ephemeral: bytes,
                 sender: bytes, recipient: bytes) -> Aead:
    info = b"securelink seal v1" + context + ephemeral + sender + recipient
    key = HKDF(hashes.SHA256(), 32, salt=None, info=info).derive(ephemeral_shared + static_shared)
    return Aead(key)


def _nonce(index: int) -> bytes:
    """A record's nonce: its index (one message key per sealed message, so never reused)."""
    return index.to_bytes(NONCE_BYTES, "big")


def _aad(context: bytes, index: int, last: bool) -> bytes:
    return context + index.to_bytes(8, "big") + (b"\x01" if last else b"\x00")


def seal_records(records: Iterable[bytes], sender: X25519PrivateKey, recipient: X25519PublicKey,
                 context: bytes) -> Iterator[bytes]:
    """Yield the sealed byte stream: a header, then one length-prefixed frame per record."""
    ephemeral = X25519PrivateKey.generate()
    ephemeral_public = public_bytes(ephemeral.public_key())
    aead = _message_key(ephemeral.exchange(recipient), sender.exchange(recipient), context,
                        ephemeral_public, public_bytes(sender.public_key()), public_bytes(recipient))
    yield MAGIC + ephemeral_public
    iterator = iter(records)
    current = next(iterator, None)
    if current is None:
        raise ValueError("a sealed message needs at least one record")
    index = 0
    while current is not None:
        following = next(iterator, None)
        sealed = aead.encrypt_at(_nonce(index), current, _aad(context, index, following is None))
        yield LENGTH.pack(len(sealed)) + sealed
        current, index = following, index + 1


class _Reader:
    """Exact-size reads over a stream of arbitrary byte chunks."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._buffer = bytearray()

    def read(self, size: int) -> bytes | None:
        while len(self._buffer) < size:
            chunk = next(self._chunks, None)
            if chunk is None:
                if self._buffer:
                    raise SealError("sealed message is truncated")
                return None
            self._buffer += chunk
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data


def open_records(chunks: Iterable[bytes], recipient: X25519PrivateKey, sender: X25519PublicKey,
                 context: bytes) -> Iterator[bytes]:
    """Yield the records of a sealed stream, authenticating each and the end."""
    reader = _Reader(chunks)
    header = reader.read(HEADER_BYTES)
    if header is None or header[:len(MAGIC)] != MAGIC:
        raise SealError("not a sealed message")
    ephemeral = X25519PublicKey.from_public_bytes(header[len(MAGIC):])
    aead = _message_key(recipient.exchange(ephemeral), recipient.exchange(sender), context,
                        header[len(MAGIC):], public_bytes(sender), public_bytes(recipient.public_key()))
    index, finished = 0, False
    while (prefix := reader.read(LENGTH.size)) is not None:
        if finished:
            raise SealError("data after the last record")
        (length,) = LENGTH.unpack(prefix)
        if length > MAX_RECORD_BYTES:
            raise SealError("record too large")
        sealed = reader.read(length)
        if sealed is None:
            raise SealError("sealed message is truncated")
        for last in (False, True):
            try:
                plain = aead.decrypt_at(_nonce(index), sealed, _aad(context, index, last))
            except AuthenticationFailed:
                continue
            finished = last
            break
        else:
            raise SealError("a record failed authentication (wrong key, sender or session)")
        yield plain
        index += 1
    if not finished:
        raise SealError("sealed message is truncated")


class SessionCipher:
    """AES-256-GCM under a key derived from the session secret, padded to a fixed width."""

    def __init__(self, secret: bytes, session_id: str, round_no: int, purpose: bytes) -> None:
        info = b"securelink session v1 " + purpose + b" " + session_id.encode() + b" " + str(round_no).encode()
        self._aead = Aead(HKDFExpand(hashes.SHA256(), 32, info).derive(secret))

    @staticmethod
    def padded_width(longest: int) -> int:
        """Plaintext width for contents up to ``longest`` bytes (length prefix, 64-byte steps)."""
        return -(-(longest + LENGTH.size) // 64) * 64

    def seal(self, content: bytes, width: int) -> bytes:
        if len(content) + LENGTH.size > width:
            raise ValueError("content longer than the padded width")
        plain = LENGTH.pack(len(content)) + content + bytes(width - len(content) - LENGTH.size)
        return self._aead.seal(plain)

    def open(self, blob: bytes) -> bytes:
        try:
            plain = self._aead.open(blob)
        except AuthenticationFailed:
            raise SealError("an attachment failed authentication") from None
        (length,) = LENGTH.unpack(plain[:LENGTH.size])
        return plain[LENGTH.size:LENGTH.size + length]
