"""Fixtures of the linking tests (helpers live in ``linkhelpers.py``)."""
from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from linkhelpers import KeyHolderProcess, make_parties, start_keyholder

# Ctrl-C tests send SIGINT to the processes they start, which inherit this process's disposition: a suite
# started as a background job of a non-interactive shell has SIGINT ignored, and so would every
# `party hold` it starts.  With Python's own handler here, each child gets the default back at exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


#: A test module that starts processes (the key holder, the CLIs as programs, a Dask cluster, Chromium, a
#: pool of workers) is marked ``slow``; ``python -m pytest -m "not slow"`` runs the rest, the inner loop of
#: about a minute (docs/index.md, "Working on the code").  A module may also mark itself
#: (``pytestmark = pytest.mark.slow``).  CI runs every test.
STARTS_PROCESSES = re.compile(
    r"\bsubprocess\b|\bPopen\b|start_keyholder|run_party|keyholder_cmd|party_cmd|make_part(y|ies)|serve_and_join"
    r"|DaskCluster|chromium|ProcessPoolExecutor|--workers"
    r"|def test_\w+\([^)]*\b(keyholder|fresh_keyholder|parties)\b")


def pytest_collection_modifyitems(config, items):
    starts: dict[Path, bool] = {}
    for item in items:
        if item.path not in starts:
            starts[item.path] = bool(STARTS_PROCESSES.search(item.path.read_text(encoding="utf-8")))
        if starts[item.path]:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def keyholder(tmp_path_factory) -> KeyHolderProcess:
    """One mTLS key holder shared by the tests that only need a working service."""
    server = start_keyholder(tmp_path_factory.mktemp("keyholder"), tls=True)
    yield server
    server.stop()


@pytest.fixture
def fresh_keyholder(tmp_path):
    """A plaintext loopback key holder of the test's own (restartable, inspectable)."""
    servers = []

    def make(**kwargs) -> KeyHolderProcess:
        server = start_keyholder(tmp_path / f"kh{len(servers)}", tls=kwargs.pop("tls", False), **kwargs)
        servers.append(server)
        return server
    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def parties(keyholder, tmp_path):
    def make(count: int = 2) -> list[tuple[Path, str]]:
        return make_parties(keyholder, tmp_path, count)
    return make
