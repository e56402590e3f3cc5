"""``party`` command line: init, register, hold, join, dedup, lookup, link-release, dedup-many,
estimate, sessions, demo.

* :mod:`.main` — the parser, built from each command module's ``register``, and :func:`main`;
* :mod:`.identity` — ``init``, ``register``; :mod:`.hold` — ``hold``;
* :mod:`.query` — ``join``, ``dedup``, ``lookup``; :mod:`.release` — ``link-release``, ``dedup-many``;
* :mod:`.estimate` — ``estimate``; :mod:`.sessions` — ``sessions list|close``; :mod:`.demo` — ``demo``;
* :mod:`.options` — options and checks shared by the commands.
"""
from party_client.cli.main import EXPECTED, build_parser, main

__all__ = ["EXPECTED", "build_parser", "main"]
