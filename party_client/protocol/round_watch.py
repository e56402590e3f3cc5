"""A round's stop signal: the holder stopping, or K no longer holding the round's session open.

The querier may close its session (``party sessions close``) or let it expire while the holder is still
comparing its round; nobody can collect that round's result any more, so the holder asks K every
:data:`CHECK_SECONDS` whether the session is still open and, if not, stops the round's work at the
next batch (docs/protocol.md, "Interrupted runs").
"""
from __future__ import annotations

import threading

from party_client.transport import Connection, ConnectionProblem, KeyHolderRefusal
from proto import linkage_pb2 as pb

CHECK_SECONDS = 5.0
#: K's answers that mean the session is gone for good (closed, expired, or deleted after either).
GONE = ("NOT_FOUND", "FAILED_PRECONDITION", "PERMISSION_DENIED")


class RoundWatch:
    """``is_set()`` once ``stopping`` is set or K says the session is no longer open (:attr:`closed`)."""

    def __init__(self, connection: Connection, session_id: str, stopping: threading.Event,
                 every: float = CHECK_SECONDS) -> None:
        self.connection, self.session_id, self.stopping, self.every = connection, session_id, stopping, every
        self.closed = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"watch-{session_id[:8]}", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._done.wait(self.every):
            try:
                session = self.connection.call("GetSession", pb.SessionRef(session_id=self.session_id))
            except KeyHolderRefusal as refusal:
                if refusal.code in GONE:
                    self.closed.set()
                    return
                continue
            except ConnectionProblem:      # K unreachable: the round's own calls say so
                continue
            if session.status != pb.OPEN:
                self.closed.set()
                return

    def is_set(self) -> bool:
        return self.stopping.is_set() or self.closed.is_set()

    def __enter__(self) -> "RoundWatch":
        return self

    def __exit__(self, *_) -> None:
        self._done.set()
