"""``party init`` (a party directory with a fresh identity key) and ``party register`` (with the key holder)."""
from __future__ import annotations

import argparse

from party_client.cli.options import connected, party


def cmd_init(args) -> int:
    from party_client.identity import PartyDir
    created = PartyDir.create(args.dir, args.name)
    print(f"party '{created.name}' created in {created.path}; key fingerprint {created.fingerprint}")
    return 0


def cmd_register(args) -> int:
    registered = party(args, linking=False)
    fingerprint = registered.register()
    print(f"registered with the key holder at {registered.dir.keyholder}; key fingerprint {fingerprint}")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    init = commands.add_parser("init", help="create a party directory with a fresh identity key")
    init.add_argument("--dir", required=True, help="party directory to create (holds the identity key)")
    init.add_argument("--name", required=True,
                      help="this party's name at the key holder (letters, digits, '.', '_', '-')")
    init.set_defaults(run=cmd_init)

    registration = connected(commands.add_parser("register", help="register with the key holder"))
    registration.set_defaults(run=cmd_register)
