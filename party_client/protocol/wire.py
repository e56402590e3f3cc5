"""What travels between the parties through K: message contexts, the ciphers of
attachments and the holder's note, and the framing of the query
(docs/protocol.md, "Session" and "The blinded comparison").

The query is one sealed message: a ``QueryHeader`` record, then
``CiphertextChunk`` records of about ``CIPHERTEXTS_PER_RECORD`` ciphertexts each
(blocked rules: whole entries, with their blocks; lookups: with their buckets).
"""
from __future__ import annotations

import bisect
from concurrent.futures import Future
from functools import partial
from typing import Callable, Iterable, Iterator

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

from common.schemes import RetiredScheme, Scheme, get_scheme
from common.schemes.base import VALIDATION_PIECE, PieceValidation
from common.schemes.pool import worker_pool
from party_client.crypto.seal import SessionCipher
from party_client.errors import PartyError
from party_client.protocol.engines.interface import CIPHERTEXTS_PER_RECORD, PreparedQuery, ReceivedQuery
from party_client.transport import Connection, KeyHolderRefusal
from proto import linkage_pb2 as pb

MODES = {"join": pb.JOIN, "dedup": pb.DEDUP, "lookup": pb.LOOKUP}
MODE_NAMES = {value: name for name, value in MODES.items()}


def session_scheme(session: pb.SessionInfo | pb.QueryHeader) -> Scheme:
    """The comparison scheme a session (or a query's header) names (:func:`common.schemes.get_scheme`:
    an empty field is the default); ``ValueError`` for a name this party does not know, and
    :class:`~party_client.errors.PartyError` saying what to do for a session of a retired scheme."""
    try:
        return get_scheme(session.scheme)
    except RetiredScheme as retired:
        if isinstance(session, pb.SessionInfo):
            raise PartyError(retired.of_session(session.session_id)) from None
        raise


def known_scheme(session: pb.SessionInfo | pb.QueryHeader) -> Scheme | None:
    """:func:`session_scheme`, or ``None`` for a scheme this party does not know (a round to refuse)."""
    try:
        return session_scheme(session)
    except ValueError:
        return None


def message_context(session_id: str, kind: str) -> bytes:
    return f"securelink/{session_id}/{kind}".encode()


def attachment_cipher(secret: bytes, session_id: str, round_no: int) -> SessionCipher:
    return SessionCipher(secret, session_id, round_no, b"attachment")


def note_cipher(secret: bytes, session_id: str, round_no: int) -> SessionCipher:
    return SessionCipher(secret, session_id, round_no, b"holder-note")


def party_key(connection: Connection, name: str, sent: bytes = b"") -> X25519PublicKey:
    """A party's X25519 key: ``sent`` by K with the session or work item (what ``GetParty`` would
    answer), else asked for."""
    if not sent:
        sent = connection.call("GetParty", pb.GetPartyRequest(name=name)).x25519_public_key
    return X25519PublicKey.from_public_bytes(sent)


def query_records(prepared: PreparedQuery, ciphertexts: list[bytes]) -> Iterator[bytes]:
    """The header, then chunks of about ``CIPHERTEXTS_PER_RECORD`` ciphertexts (blocked rules: whole entries)."""
    yield prepared.header.SerializeToString()
    offsets = prepared.entry_offsets
    if offsets:
        first = 0
        while first < len(offsets) - 1:
            last = max(first + 1, bisect.bisect_right(offsets, offsets[first] + CIPHERTEXTS_PER_RECORD) - 1)
            yield pb.CiphertextChunk(ciphertexts=b"".join(ciphertexts[offsets[first]:offsets[last]]),
                                     blocks=prepared.blocks[first:last]).SerializeToString()
            first = last
        return
    for start in range(0, len(ciphertexts), CIPHERTEXTS_PER_RECORD):
        chunk = pb.CiphertextChunk(ciphertexts=b"".join(ciphertexts[start:start + CIPHERTEXTS_PER_RECORD]))
        if prepared.buckets:
            chunk.buckets.extend(prepared.buckets[start:start + CIPHERTEXTS_PER_RECORD])
        yield chunk.SerializeToString()


class IncomingQuery:
    """The holder's read of a round's query from K, as it arrives (docs/protocol.md, "Streaming the
    query"): :attr:`chunks` are its sealed bytes (``received`` is told each piece's size, e.g. a progress
    bar); K names the round the query opened on its first chunk (a complete query) or after its last (one
    listed as round 0 while it still came in)."""

    def __init__(self, connection: Connection, item: pb.WorkItem,
                 received: Callable[[int], object] = lambda size: None) -> None:
        self.item, self.received = item, received
        self.named: list[int] = []
        self.chunks = connection.stream("GetMessage", pb.MessageRef(message_id=item.message_id), split=self._data,
                                        length=len)

    def _data(self, message: pb.MessageChunk) -> list[bytes]:
        if message.round:
            self.named.append(message.round)
        self.received(len(message.data))
        return [message.data]

    def in_round(self) -> pb.WorkItem:
        """The work item with its round, once the query is read to its end (the rest is read first,
        e.g. to refuse a query found malformed while it still came in)."""
        for _ in self.chunks:
            pass
        listed = self.item.round
        named = self.named[-1] if self.named else listed
        if not named or (listed and named != listed):
            raise KeyHolderRefusal(f"the key holder named round {named} for a query listed as round {listed}",
                                   "ABORTED")
        served = pb.WorkItem()
        served.CopyFrom(self.item)
        served.round = named
        return served


def read_query(records: Iterable[bytes], scheme: Scheme, public: bytes,
               validation: tuple[Callable[[bytes, int], Future], int] | None = None,
               on_header: Callable[[pb.QueryHeader], None] = lambda header: None) -> tuple[ReceivedQuery, bytes]:
    """The opened query's header and clear parts, and its ciphertexts as one block, each validated by
    the scheme (``ValueError``, e.g. :class:`common.schemes.InvalidCiphertext`, when malformed).

    ``on_header`` sees the header as soon as it is read.  Ciphertexts are validated as they arrive
    (a streamed query: while the querier still encrypts the rest) by a
    :class:`common.schemes.base.PieceValidation`: in pieces of ``VALIDATION_PIECE`` on the process's
    threads or, with ``validation`` (submit, piece: the holder's Dask cluster), as it says."""
    submit, piece = validation or (partial(worker_pool().submit, scheme.validate, public), VALIDATION_PIECE)
    checking = PieceValidation(scheme, public, submit, piece)
    records = iter(records)
    header = pb.QueryHeader.FromString(next(records))
    on_header(header)
    ciphertexts, buckets, blocks = bytearray(), [], []
    try:
        for record in records:
            chunk = pb.CiphertextChunk.FromString(record)
            checking.add(chunk.ciphertexts)
            ciphertexts += chunk.ciphertexts
            buckets.extend(chunk.buckets)
            blocks.extend(chunk.blocks)
    except BaseException:
        checking.cancel()
        raise
    return ReceivedQuery(header, checking.count(), buckets, blocks), bytes(ciphertexts)
