"""``party register`` names the key holder it registered with, also when the address comes from the
party directory (no ``--keyholder``): never "None"."""
from __future__ import annotations

from linkhelpers import run_party


def test_register_without_keyholder_names_the_remembered_address(fresh_keyholder, tmp_path):
    server = fresh_keyholder()
    folder = tmp_path / "alice"
    run_party("init", "--dir", str(folder), "--name", "alice")
    first = run_party("register", "--dir", str(folder), *server.flags())
    assert f"registered with the key holder at {server.address};" in first.stdout
    again = run_party("register", "--dir", str(folder))             # the address saved at registration
    assert f"registered with the key holder at {server.address};" in again.stdout
    assert "None" not in again.stdout + again.stderr
