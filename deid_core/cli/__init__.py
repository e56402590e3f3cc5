"""``deid`` command line: assess, safe-harbor, apply, search (docs/deid.md, docs/deid_search.md).

* :mod:`.main` — the parser and :func:`main` (exit 2 with one line on bad input);
* :mod:`.commands` — ``assess``, ``safe-harbor``, ``apply``;
* :mod:`.search` — ``search`` (maps options to :mod:`deid_core.algorithm`);
* :mod:`.geo` — ``geo`` and ``geoproxy`` (maps options to :mod:`deid_core.geo`);
* :mod:`.subsample` — ``subsample`` (docs/subsampling.md); :mod:`.known` — ``--known`` of assess and search;
* :mod:`.options` — options and checks shared by the commands.
"""
from .main import EXIT_BAD_INPUT, EXTRA_COMMANDS, build_parser, main

__all__ = ["EXIT_BAD_INPUT", "EXTRA_COMMANDS", "build_parser", "main"]
