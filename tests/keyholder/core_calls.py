"""The key holder core's awaitable calls (opening a session, spooling a query) driven from synchronous
tests, each the way the gRPC servicer makes it: :meth:`KeyHolder.plan_session` then
:meth:`KeyHolder.open_session`, and :meth:`KeyHolder.put_message` with the query's chunks."""
from __future__ import annotations

import asyncio
from typing import AsyncIterator

from common.schemes import Scheme
from keyholder.core import KeyHolder
from keyholder.store import Message, Session


def open_session(core: KeyHolder, querier: str, mode: int, holder: str, key_bits: int, ttl_seconds: float,
                 query_ciphertexts: int = 0, scheme: Scheme | None = None) -> Session:
    plan = core.plan_session(querier, mode, holder, key_bits, ttl_seconds, query_ciphertexts, scheme)
    session, _ = asyncio.run(core.open_session(plan))
    return session


def put_message(core: KeyHolder, sender: str, session_id: str, kind: str, recipient: str, chunks: list[bytes],
                streamed: bool = False) -> Message:
    """Upload ``chunks``: the first as the header chunk's data, the rest as the chunks that follow it."""
    async def rest() -> AsyncIterator[bytes]:
        for data in chunks[1:]:
            yield data
    return asyncio.run(core.put_message(sender, session_id, kind, recipient, streamed, chunks[0] if chunks else b"",
                                        rest()))
