"""Per-tab workspaces of the workbench: each browser tab has its own id, table, form, search and release,
kept in memory and in one temp folder that is removed when the server stops."""
from __future__ import annotations

import re
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import DeidInputError
from .specform import SpecForm

#: A workspace id, made by the page (random hex, one per browser tab).
WORKSPACE_ID = re.compile(r"^[0-9a-f]{16,64}$")


@dataclass
class SearchJob:
    """A search running in a thread: nodes (or policies) done of total, then the result or one error line."""

    method: str
    started: float = field(default_factory=time.monotonic)
    done: int = 0
    total: int = 0
    finished: bool = False
    error: str | None = None
    result: dict | None = None
    release: pd.DataFrame | None = None
    seconds: float = 0.0
    #: the same search as a ``deid search`` command line
    command: str = ""
    #: the spec and table searched (a picked node is released from them)
    spec: Any = None
    table: pd.DataFrame | None = None

    def progress(self, done: int, total: int) -> None:
        self.done, self.total = int(done), int(total)


@dataclass
class Workspace:
    """One tab's state. ``lock`` serializes what changes it (a second click waits or is refused)."""

    id: str
    folder: Path
    lock: threading.Lock = field(default_factory=threading.Lock)
    used: float = field(default_factory=time.monotonic)
    input_path: Path | None = None
    input_name: str = ""
    table: pd.DataFrame | None = None
    profile: list[dict] = field(default_factory=list)
    scanned: dict = field(default_factory=dict)
    form: SpecForm | None = None
    spec_error: str | None = None
    population_path: Path | None = None
    population_name: str = ""
    assessment: dict | None = None
    job: SearchJob | None = None
    #: the picked node: index in the job's policies, its release, policy (dict) and report
    node: dict | None = None

    def path(self, name: str) -> Path:
        return self.folder / name

    def reset_after_table(self) -> None:
        self.form, self.spec_error, self.assessment, self.job, self.node = None, None, None, None, None

    def reset_after_spec(self) -> None:
        self.assessment, self.node = None, None
        if self.job is not None and self.job.finished:
            self.job = None


class Workspaces:
    """All workspaces of one server, under one temp folder.  Past ``limit`` a new tab takes the place of the
    least recently used *idle* one (no request for ``idle_seconds``, no search running); when every
    workspace is in use the new tab is refused, so no tab can push out another's table."""

    def __init__(self, limit: int = 16, idle_seconds: float = 1800.0) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="deid-ui-"))
        self.limit, self.idle_seconds = limit, idle_seconds
        self._all: OrderedDict[str, Workspace] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, workspace_id: str | None) -> Workspace:
        if not workspace_id or not WORKSPACE_ID.match(workspace_id):
            raise DeidInputError("this page has no workspace id: reload the page")
        with self._lock:
            ws = self._all.get(workspace_id)
            if ws is None:
                self._make_room()
                folder = self.root / workspace_id
                folder.mkdir()
                ws = self._all[workspace_id] = Workspace(workspace_id, folder)
            self._all.move_to_end(workspace_id)
            ws.used = time.monotonic()
            return ws

    def _make_room(self) -> None:
        """Drop idle workspaces, least recently used first, until one more fits; refuse if none is idle."""
        now = time.monotonic()
        for old_id, old in list(self._all.items()):
            if len(self._all) < self.limit:
                return
            if now - old.used >= self.idle_seconds and (old.job is None or old.job.finished):
                del self._all[old_id]
                shutil.rmtree(old.folder, ignore_errors=True)
        if len(self._all) >= self.limit:
            raise DeidInputError(f"the workbench already serves {self.limit} tabs in use (each used in the "
                                 f"last {self.idle_seconds / 60:g} min): use an open tab, or wait")

    def close(self) -> None:
        """Forget every workspace and remove the temp folder."""
        with self._lock:
            self._all.clear()
        shutil.rmtree(self.root, ignore_errors=True)

    def __len__(self) -> int:
        return len(self._all)


def busy(ws: Workspace) -> Any:
    """The workspace's lock, refused with one line when this tab is already doing something."""
    if not ws.lock.acquire(timeout=30):
        raise DeidInputError("this tab is still busy with the previous step: wait for it to finish")
    return _Held(ws.lock)


class _Held:
    def __init__(self, lock: threading.Lock) -> None:
        self.lock = lock

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        self.lock.release()
