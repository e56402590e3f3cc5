"""The querier's padded cuckoo table (docs/protocol.md, "Exact matching at scale").

Parameters (documented in docs/trust.md, "How it works"):

* ``h = 2`` hash functions: the holder does ``h`` comparisons per row, and
  comparisons are the dominant cost, so the smallest ``h`` wins;
* ``eps = 2.4``: ``B = ceil(eps * n_padded)`` bins (load 0.42, below the 0.5
  threshold of 2-choice cuckoo hashing); empty bins cost the querier one cheap
  encryption each and no holder work;
* stash: ``stash`` padded slots (default 0) that every holder row is compared
  with.  With no stash, an insertion failure makes the querier draw a fresh
  session secret and rebuild (only PRF work is repeated: nothing has been
  encrypted yet).  Measured (``benchmarks/cuckoo_failure.py``, exact
  criterion): 6.0e-3 per table at 1,000 keys, 5e-5 at 10,000, none in 2,000
  trials at 100,000; at the worst load (keys = padded size) 8.1e-3 at 1,000
  and 1.8e-3 at about 12,000.  The holder then learns only that the table
  built under the secret it received, an event of probability > 0.99, i.e.
  below 0.012 bits about the querier's set.  A stash slot would cost ``m``
  comparisons (50% of the holder's work at h = 2), so none is used.
* ``n`` is padded to a public size (powers of sqrt 2, at least 16), so the
  holder and K learn the distinct-key count only up to that step.

No library builds cuckoo tables over caller-supplied PRF positions, so the
eviction walk is written here; it is a sequential walk by nature.
"""
from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from itertools import takewhile
from typing import Iterator

HASH_FUNCTIONS = 2
EXPANSION = 2.4
MAX_EVICTIONS = 1000
EMPTY = -1


class CuckooFailure(RuntimeError):
    """The keys cannot be placed under these positions (rebuild with a fresh secret)."""


@dataclass(frozen=True)
class CuckooParams:
    hash_functions: int = HASH_FUNCTIONS
    expansion: float = EXPANSION
    stash: int = 0


def _public_sizes() -> Iterator[int]:
    """The public sizes, ascending: 16 = sqrt(2)^8 and each power of sqrt(2) above it, rounded up."""
    exponent = 8
    while True:
        yield math.ceil(2 ** (exponent / 2))
        exponent += 1


def padded_size(count: int) -> int:
    """The public size that ``count`` keys are padded to: the next power of sqrt(2), >= 16."""
    return next(size for size in _public_sizes() if size >= count)


def padded_floor(count: int) -> int:
    """The largest public size at most ``count`` (1 below 16): a size announced as a lower bound
    (a lookup holder's rows, docs/protocol.md, "Lookup") that tells no more than its step."""
    return max(takewhile(lambda size: size <= count, _public_sizes()), default=1)


def bin_count(keys: int, params: CuckooParams) -> int:
    return math.ceil(params.expansion * padded_size(keys))


def place(positions: list[list[int]], bins: int, stash: int = 0,
          max_evictions: int = MAX_EVICTIONS) -> tuple[list[int], list[int]]:
    """Cuckoo-place key ``k`` in one of ``positions[k]``; returns (table, stash).

    ``table[b]`` is the key index in bin ``b`` or ``EMPTY``; keys that cannot be
    placed after ``max_evictions`` go to the stash, and when the stash is full
    :class:`CuckooFailure` is raised.
    """
    table = [EMPTY] * bins
    stashed: list[int] = []
    for key in range(len(positions)):
        current, previous = key, -1
        for _ in range(max_evictions):
            choices = positions[current]
            free = next((b for b in choices if table[b] == EMPTY), None)
            if free is not None:
                table[free] = current
                break
            options = [b for b in choices if b != previous] or list(choices)
            target = options[secrets.randbelow(len(options))]
            table[target], current = current, table[target]
            previous = target
        else:
            if len(stashed) >= stash:
                raise CuckooFailure(f"cuckoo insertion failed ({len(positions)} keys, {bins} bins)")
            stashed.append(current)
    return table, stashed
