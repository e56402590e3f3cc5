"""A query message being spooled to disk while it streams in, and readable while it does
(the key holder's relay of sealed queries; docs/protocol.md, "Streaming the query").

The querier seals a large query record by record and uploads it as it encrypts, saying so in
the message header (``stream``).  K then lists the upload to the holder as soon as it starts,
as round 0 (a session's concurrent uploads open their rounds in the order they complete), and
the holder may follow it (:class:`Follower`) while it grows: it opens and validates the records
as they arrive and plans its comparisons from the header, instead of waiting for the last byte.
An upload ends in one of two ways:

* **committed**: the whole message is on disk (fsynced and renamed) and its round is open; a
  follower reads to the end and learns the round (:attr:`Upload.round`);
* **aborted**: the stream broke or the session ended; its bytes are deleted and a follower's next
  read is refused with ``ABORTED``.  No round was opened, so nothing the holder did for it can be
  submitted; the querier's retry is a new upload.

K sees only sealed bytes either way.
"""
from __future__ import annotations

import contextlib
import os
import threading
import uuid
from pathlib import Path
from typing import BinaryIO, Iterator

from keyholder.errors import ServiceError
from keyholder.limits import Limits
from keyholder.store import Session, Store

RECEIVING, COMMITTED, ABORTED = "receiving", "committed", "aborted"
READ_BYTES = 1 << 20        # at most this much per read of a follower


class Upload:
    """One query being spooled: written to a ``.partial`` file, renamed when complete.  The file and its
    state only: the core (:class:`keyholder.core.KeyHolder`) counts its bytes against the spool quotas,
    keeps it as a message and tells whoever waits on it."""

    def __init__(self, folder: Path, session: Session, sender: str, limit: int, why: str,
                 listed: bool = False) -> None:
        self.session, self.sender = session, sender
        self.listed = listed              # streamed: listed to the holder while it grows
        self.recipient = session.holder
        self.limit, self.why = limit, why
        folder.mkdir(exist_ok=True)
        self.id = uuid.uuid4().hex
        self.final = folder / f"{self.id}.sealed"
        self.partial = folder / f"{self.id}.partial"
        self.path = self.partial          # where a follower opens it
        self.size = 0                     # bytes written and flushed: what a follower may read
        self.reserved = 0                 # bytes counted against the spool quotas while in flight
        self.state, self.reason = RECEIVING, ""
        self.round = 0                    # once committed: the round its query opened
        self._lock = threading.Lock()
        self._out = open(self.partial, "wb")

    @property
    def key(self) -> str:
        """What the core names in its change notices when this upload grows or ends."""
        return f"message:{self.id}"

    def write(self, data: bytes) -> None:
        with self._lock:
            if self.state != RECEIVING:
                raise ServiceError("ABORTED", self.reason or "the upload has ended")
            if self.size + len(data) > self.limit:
                raise ServiceError("RESOURCE_EXHAUSTED", f"message larger than {self.limit} bytes ({self.why})")
            self._out.write(data)
            self._out.flush()             # a follower reads through its own handle
            self.size += len(data)

    @contextlib.contextmanager
    def sealed(self) -> Iterator[None]:
        """Hold the upload while it is kept: refused (``ABORTED``) once it has ended, its file synced to
        disk and closed, refused when empty.  Inside, the keeper moves it to :attr:`final` (:meth:`keep`)
        and records it (:meth:`committed`); exactly one of this and :meth:`abort` wins."""
        with self._lock:
            if self.state != RECEIVING:
                raise ServiceError("ABORTED", self.reason or "the upload has ended")
            os.fsync(self._out.fileno())
            self._out.close()
            if self.size == 0:
                raise ServiceError("INVALID_ARGUMENT", "empty message")
            yield

    def keep(self) -> None:
        """Move the whole message to its final name (inside :meth:`sealed`)."""
        os.replace(self.partial, self.final)
        self.path = self.final

    def committed(self, round_no: int) -> None:
        """Kept as a message that opened ``round_no`` (inside :meth:`sealed`)."""
        self.state, self.round = COMMITTED, round_no

    def abort(self, reason: str) -> None:
        """End an upload that will not be committed: its bytes go; followers are refused."""
        with self._lock:
            if self.state == RECEIVING:
                self.state, self.reason = ABORTED, reason
            if not self._out.closed:
                self._out.close()
            if self.state == ABORTED:
                self.partial.unlink(missing_ok=True)

    def follower(self) -> "Follower":
        with self._lock:
            if self.state == ABORTED:
                raise ServiceError("ABORTED", self.reason)
            return Follower(self, open(self.path, "rb"))


class Follower:
    """The recipient's read of an upload while it grows: :meth:`read` never waits."""

    def __init__(self, upload: Upload, source: BinaryIO) -> None:
        self.upload, self._source, self.offset = upload, source, 0

    def read(self) -> bytes | None:
        """The next bytes (at most ``READ_BYTES``); ``b""`` when none were written since; ``None``
        once the committed message is read to its end (:attr:`Upload.round` is then its round).
        ``ABORTED`` when the upload was aborted."""
        upload = self.upload
        with upload._lock:
            state, size, reason = upload.state, upload.size, upload.reason
        if state == ABORTED:
            self.close()
            raise ServiceError("ABORTED", f"{reason}; the querier may send it again")
        if self.offset < size:
            data = self._source.read(min(READ_BYTES, size - self.offset))
            self.offset += len(data)
            return data
        if state == COMMITTED:
            self.close()
            return None
        return b""

    def close(self) -> None:
        self._source.close()


class Uploads:
    """The uploads in progress, and the room in the spool quotas they hold."""

    def __init__(self, store: Store, limits: Limits) -> None:
        self.store, self.limits = store, limits
        self._by_id: dict[str, Upload] = {}
        self._lock = threading.Lock()

    def add(self, upload: Upload) -> None:
        with self._lock:
            self._by_id[upload.id] = upload

    def remove(self, upload: Upload) -> None:
        with self._lock:
            self._by_id.pop(upload.id, None)

    def get(self, upload_id: str) -> Upload | None:
        with self._lock:
            return self._by_id.get(upload_id)

    def streamed_to(self, recipient: str) -> list[Upload]:
        """The streamed uploads addressed to ``recipient`` (listed to it while they grow)."""
        with self._lock:
            return [u for u in self._by_id.values() if u.listed and u.recipient == recipient]

    def reserve(self, upload: Upload, size: int) -> None:
        """Count ``size`` more bytes of ``upload`` against the spool quotas, with the bytes of every other
        upload in flight: concurrent uploads cannot each take the whole room left (RESOURCE_EXHAUSTED)."""
        store, limits = self.store, self.limits
        with self._lock:
            flight = [u.reserved for u in self._by_id.values()]
            session_flight = sum(u.reserved for u in self._by_id.values() if u.session.id == upload.session.id)
            checks = ((store.spool_bytes(upload.session.id) + session_flight, limits.max_spool_session_bytes,
                       "this session's spool quota, uploads in flight included"),
                      (store.spool_bytes() + sum(flight), limits.max_spool_bytes,
                       "the key holder's spool quota, uploads in flight included"))
            for used, limit, why in checks:
                if used + size > limit:
                    raise ServiceError("RESOURCE_EXHAUSTED", f"no room for {size} more bytes ({why})")
            upload.reserved += size

    def of_session(self, session_id: str) -> list[Upload]:
        with self._lock:
            return [u for u in self._by_id.values() if u.session.id == session_id]
