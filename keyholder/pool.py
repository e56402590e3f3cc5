"""The key holder's thread pool: where the core's blocking work (SQLite, cryptography) runs for the
async servicer, so that a call waiting on it holds no thread."""
from __future__ import annotations

import asyncio
from typing import Callable, TypeVar

T = TypeVar("T")


async def on_pool(function: Callable[..., T], *args) -> T:
    """``function(*args)`` on the running event loop's default executor (the server's pool)."""
    return await asyncio.get_running_loop().run_in_executor(None, function, *args)
