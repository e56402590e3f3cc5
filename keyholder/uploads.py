"""A query message being spooled to disk while it streams in (the key holder's relay of sealed queries)."""
from __future__ import annotations

import os
import uuid
from typing import TYPE_CHECKING

from keyholder.errors import ServiceError
from keyholder.states import PENDING
from keyholder.store import Message, Session

if TYPE_CHECKING:
    from keyholder.core import KeyHolder


class Upload:
    """One query being spooled: written to a ``.partial`` file, renamed when complete."""

    def __init__(self, core: "KeyHolder", session: Session, sender: str, limit: int, why: str) -> None:
        self.core, self.session, self.sender = core, session, sender
        self.limit, self.why = limit, why
        folder = core.spool / session.id
        folder.mkdir(exist_ok=True)
        self.id = uuid.uuid4().hex
        self.final = folder / f"{self.id}.sealed"
        self.partial = folder / f"{self.id}.partial"
        self.size = 0
        self._out = open(self.partial, "wb")

    def write(self, data: bytes) -> None:
        self.size += len(data)
        if self.size > self.limit:
            raise ServiceError("RESOURCE_EXHAUSTED", f"message larger than {self.limit} bytes ({self.why})")
        self._out.write(data)

    def commit(self) -> Message:
        try:
            self._out.flush()
            os.fsync(self._out.fileno())
            self._out.close()
            if self.size == 0:
                raise ServiceError("INVALID_ARGUMENT", "empty message")
            self.core.session(self.sender, self.session.id)          # still open
            self.core.check_rounds(self.session.id)
            os.replace(self.partial, self.final)
        finally:
            self.abort()
        message = self.core.store.add_message(
            Message(self.id, self.session.id, "query", self.sender, self.session.holder, self.size,
                    str(self.final), None), open_round=True, pending=PENDING)
        self.core.store.audit(self.sender, "relay_query", self.session.id, message.round, count=self.size)
        self.core.changed(self.session.holder)                  # the holder's work list
        return message

    def abort(self) -> None:
        if not self._out.closed:
            self._out.close()
        self.partial.unlink(missing_ok=True)
