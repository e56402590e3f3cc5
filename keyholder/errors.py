"""The one exception of the key holder's core: a refused call with a gRPC status name."""
from __future__ import annotations


class ServiceError(Exception):
    """A refused call: ``code`` is a gRPC status name, ``message`` one line for the caller.

    ``retry_after`` (seconds) marks back-pressure rather than a final refusal: the server sends it as
    the ``retry-after`` trailing metadata (after HTTP's Retry-After, RFC 9110 section 10.2.3) and the
    message ends with "retry in N s"; clients retry such a call within their retry window."""

    def __init__(self, code: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retry_after = retry_after
