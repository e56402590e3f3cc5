"""``--known M`` and ``--block K`` of ``deid assess`` and ``deid search``: the adversary knows M of the spec's
n quasi-identifiers, checked on the blocks of a C(n, K, M) covering design (docs/subsampling.md,
"Adversaries who know m of n quasi-identifiers")."""
from __future__ import annotations

import argparse
import math
import sys

from ..errors import DeidInputError
from ..risk.known_subsets import KnownQIs, known_qis
from ..spec import Spec
from .options import AT_LEAST_1, number

#: Candidate block/subset pairs beyond which building the design may take more than ~2 s (announced).
SLOW_WORK = 3_000_000


def add_known_options(p: argparse.ArgumentParser, what: str) -> None:
    """Add ``--known``, ``--block`` and ``--design-seconds`` to a ``deid`` subcommand."""
    p.add_argument("--known", type=AT_LEAST_1, metavar="M",
                   help=f"the adversary knows any M of the n quasi-identifiers: {what} is the largest over the "
                        "blocks of a covering design C(n, K, M)")
    p.add_argument("--block", type=AT_LEAST_1, metavar="K",
                   help="--known: block size of the covering design (default M: every M-subset, exact; larger "
                        "blocks are fewer to measure but over-estimate the risk)")
    p.add_argument("--design-seconds", type=number(0, 86_400), default=0.0, metavar="S",
                   help="--known: spend up to S seconds of local search shrinking the greedy covering design "
                        "(fewer blocks to measure; default 0)")


def known_of(args: argparse.Namespace, spec: Spec) -> KnownQIs | None:
    """The m-of-n adversary of ``--known`` (None without it); one-line errors on bad values."""
    if args.known is None:
        if args.block is not None or args.design_seconds:
            raise DeidInputError(f"{'--block' if args.block is not None else '--design-seconds'} needs --known")
        return None
    if not 0 <= args.design_seconds <= 3600:
        raise DeidInputError(f"--design-seconds must lie in 0..3600, got {args.design_seconds}")
    n, k = len(spec.quasi), args.known if args.block is None else args.block
    slow = 1 <= args.known <= k <= n and math.comb(n, k) * math.comb(k, args.known) > SLOW_WORK
    if slow or args.design_seconds > 2:
        print(f"deid: building a covering design C({n}, {k}, {args.known})"
              + (f", then up to {args.design_seconds:g} s of local search" if args.design_seconds else ""),
              file=sys.stderr, flush=True)
    return known_qis(spec.quasi, args.known, args.block, improve_seconds=args.design_seconds)
