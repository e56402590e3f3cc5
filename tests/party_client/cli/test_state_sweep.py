"""The querier's own files, damaged every way a disk or a person damages them, never end a command in a
traceback: ``party sessions list``, ``party sessions close --all`` and ``party lookup`` each either work or
say in one line (exit 1 or 2) which file is wrong and what to do, and no damaged file is deleted or
rewritten unasked.  Damage: corrupt bytes, empty, missing, a folder in its place, unreadable and read-only
(without root's power to pass them), and the lookup lock held by a hung process."""
from __future__ import annotations

import contextlib
import fcntl
import io
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from linkhelpers import TEST_KEY_BITS, make_party, party_cmd, serve_in_thread, tables
from party_client.api import Party
from party_client.cli.main import main

POPULATION = 10_000_000
FILES = ("party.json", "identity.key", "local.key", "token", "sessions/{state}", "lookups/sessions.json",
         "lookups/ledger.sqlite3")


def damage(path: Path, how: str) -> None:
    if how == "missing":
        path.unlink()
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "corrupt":
        data = path.read_bytes()
        path.write_bytes(bytes(b ^ 0x5A for b in data[: max(1, len(data) // 2)]) + os.urandom(7))
    elif how == "folder":
        path.unlink()
        path.mkdir()


def run_in_process(argv: list[str]) -> tuple[int, str]:
    """``party argv`` in this process: its status and stderr (an uncaught exception fails the test)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(argv)
    return status, err.getvalue()


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every file's bytes (``lookups/lock.owner`` only names who last held the lock)."""
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in folder.rglob("*")
            if p.name != "lock.owner"}


@pytest.fixture(scope="module")
def desk(tmp_path_factory):
    """A key holder, a holder serving in a thread, and a querier with one lookup and one join state."""
    from linkhelpers import start_keyholder
    tmp = tmp_path_factory.mktemp("sweep")
    server = start_keyholder(tmp / "kh", tls=False)
    (qdir, _), (hdir, hname) = make_party(server, tmp, cli=False), make_party(server, tmp, cli=False)
    querier, holder = tables(71, n=6, m=30, overlap=3)
    stop = threading.Event()
    serve_in_thread(Party(hdir, progress=False), holder, ["diagnosis"], stop)
    querier.head(2).to_csv(tmp / "q.csv", index=False)
    lookup = ["lookup", "--dir", "{dir}", *server.flags(), "--holder", hname, "--input", str(tmp / "q.csv"),
              "--id-column", "hcn", "--out", str(tmp / "out.csv"), "--scheme", "ristretto",
              "--population", str(POPULATION), "--quiet"]
    assert run_in_process([a.format(dir=qdir) for a in lookup])[0] == 0
    from party_client.sessions_state import SessionState, SessionStates
    from party_client.identity import PartyDir
    SessionStates(PartyDir.load(qdir)).save(SessionState("ab" * 16, hname, "join", server.address, "f" * 64))
    yield server, qdir, tmp, lookup
    stop.set()
    server.stop()


def commands(server, lookup) -> list[tuple[str, list[str]]]:
    """What the sweep runs, in this order: the ones that must change nothing first."""
    return [("list", ["sessions", "list", "--dir", "{dir}", *server.flags()]), ("lookup", lookup),
            ("close", ["sessions", "close", "--dir", "{dir}", "--all", *server.flags()])]


@pytest.mark.parametrize("how", ["corrupt", "empty", "missing", "folder"])
@pytest.mark.parametrize("name", FILES)
def test_a_damaged_state_file_is_named_in_one_line(desk, tmp_path, name, how):
    server, original, _, lookup = desk
    qdir = tmp_path / "q"
    shutil.copytree(original, qdir)
    target = qdir / name.format(state="ab" * 16 + ".state")
    damage(target, how)
    before = snapshot(qdir)
    for key, argv in commands(server, lookup):
        status, err = run_in_process([a.format(dir=qdir) for a in argv])
        lines = err.strip().splitlines()
        assert status in (0, 1, 2) and len(lines) <= 1, (key, status, err)
        assert "Traceback" not in err
        if status:
            print(f"{name} {how} {key}: {err.strip()}")
        after = snapshot(qdir)
        lost = {k for k, v in before.items() if k in (name,) and after.get(k) != v}
        assert not lost or key == "close", (key, lost)


def test_a_lookup_lock_held_by_a_hung_command_is_waited_for_then_named(desk, tmp_path, monkeypatch):
    import party_client.lookups as lookups
    monkeypatch.setattr(lookups, "LOCK_WAIT_SECONDS", 1.0)
    server, original, _, lookup = desk
    qdir = tmp_path / "q"
    shutil.copytree(original, qdir)
    hold_the_lock = ("import fcntl, os, sys, time; d = os.open(sys.argv[1], os.O_RDONLY); "
                     "fcntl.flock(d, fcntl.LOCK_EX); "
                     "open(sys.argv[1] + '/lock.owner', 'w').write(str(os.getpid())); "
                     "print('locked', flush=True); time.sleep(60)")
    hung = subprocess.Popen([sys.executable, "-c", hold_the_lock, str(qdir / "lookups")], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert hung.stdout.readline().strip() == "locked"
        for key, argv in commands(server, lookup):
            status, err = run_in_process([a.format(dir=qdir) for a in argv])
            expected = (f"party: error: party command pid {hung.pid} has held the lookup lock of {qdir / 'lookups'} "
                        "for 1 s: let it finish or stop it, then run this again")
            assert status == 2 and err.strip() == expected, (key, err)
    finally:
        hung.kill()
        hung.wait()


DAC = "dac_override,-dac_read_search"


@pytest.mark.parametrize("name,mode", [("token", 0o000), ("identity.key", 0o000), ("lookups", 0o500),
                                       ("lookups/sessions.json", 0o400), ("lookups/ledger.sqlite3", 0o400),
                                       ("sessions", 0o500)])
def test_a_state_file_the_user_may_not_read_or_write_is_named_in_one_line(desk, tmp_path, name, mode):
    """Permissions, as a user they stop (the suite may run as root, which they do not stop)."""
    server, original, _, lookup = desk
    qdir = tmp_path / "q"
    shutil.copytree(original, qdir)
    (qdir / name).chmod(mode)
    # root passes every permission check: drop the capabilities that let it (setpriv, util-linux)
    unprivileged = (["setpriv", f"--inh-caps=-{DAC}", f"--bounding-set=-{DAC}"] if os.geteuid() == 0 else [])
    for key, argv in commands(server, lookup)[1:2]:           # the lookup reads and writes them all
        before = snapshot(qdir)
        argv = [a.format(dir=qdir) for a in argv]
        done = subprocess.run([*unprivileged, *party_cmd(*argv)], capture_output=True, text=True, timeout=120)
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) <= 1, (key, done.stderr)
        assert done.returncode in (0, 2), (key, done.stderr)
        assert done.returncode == 0 or snapshot(qdir) == before          # refused: nothing changed
        print(f"{name} {oct(mode)} {key}: {done.returncode} {done.stderr.strip()}")


def test_the_lookup_ledger_is_readable_by_its_owner_only(desk, tmp_path):
    """The ledger holds a keyed tag of every identifier the party looked up, and when: before, sqlite made it
    with the umask's mode (0644 here), readable by every local user."""
    server, original, _, lookup = desk
    qdir = tmp_path / "q"
    shutil.copytree(original, qdir)
    ledger = qdir / "lookups" / "ledger.sqlite3"
    ledger.chmod(0o644)                                  # as earlier versions left it
    assert run_in_process([a.format(dir=qdir) for a in lookup])[0] == 0
    assert ledger.stat().st_mode & 0o777 == 0o600
    ledger.unlink()
    assert run_in_process([a.format(dir=qdir) for a in lookup])[0] == 0
    assert ledger.stat().st_mode & 0o777 == 0o600
