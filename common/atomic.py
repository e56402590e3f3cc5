"""Writing a file whole or not at all: a temporary ``.partial`` file in the target's folder, flushed to disk,
then renamed over the target (a rename within one file system is atomic in POSIX), so a reader never sees
half a file and a failed write leaves the old file as it was.  Both the party client and the
de-identification core write their outputs through it."""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator


@contextmanager
def atomic_path(path: str | Path, missing_folder: Callable[[Path], Exception]) -> Iterator[str]:
    """A temporary file's name to write to, renamed to ``path`` when the block succeeds (deleted when it
    fails); ``missing_folder(folder)`` is the error raised when the target's folder does not exist."""
    path = Path(path)
    folder = path.resolve().parent
    if not folder.is_dir():
        raise missing_folder(folder)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=folder)
    os.close(fd)
    try:
        yield temporary
        with open(temporary, "rb") as written:
            os.fsync(written.fileno())
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
