"""The one exception of the key holder's core: a refused call with a gRPC status name."""
from __future__ import annotations


class ServiceError(Exception):
    """A refused call: ``code`` is a gRPC status name, ``message`` one line for the caller."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
