"""What both parties must agree on before any work: the querier's matching against what the holder announced.

A serving holder announces, with each poll for work, its keys' digest (the ``key_spec`` a query's header
must carry) and the names of the fields it links on: preset roles, a rules file's fields, or the exact
``id`` (docs/protocol.md, "Agreeing before any work").  Before it opens a session, the querier compares
its own with each matching the holder announced and, when none agrees, says which roles or settings
differ, instead of learning it from the holder's refusal after its whole query was encrypted and sent.
"""
from __future__ import annotations

from typing import Sequence

from party_client.errors import PartyError


def matching_fields(rules) -> list[str]:
    """The names of the fields ``rules`` link on (None: an exact join on ``id``)."""
    if rules is None:
        return ["id"]
    model = getattr(rules, "model", None)
    return [f.name for f in model.fields] if model is not None else list(rules.fields)


def check_agreement(holder: str, spec: str, fields: Sequence[str], announced: Sequence) -> None:
    """Refuse, naming the difference, when the holder announced matchings (``spec`` and ``fields`` each)
    and none is ours; nothing announced (a holder not serving now) is not checked."""
    if not announced or any(a.spec == spec for a in announced):
        return
    ours = set(fields)
    closest = min(announced, key=lambda a: len(ours ^ set(a.fields)))
    theirs = list(closest.fields)
    if set(theirs) == ours and closest.spec.startswith("exact/") and spec.startswith("exact/"):
        raise PartyError(f"holder '{holder}' normalizes its ids as {closest.spec.rsplit('/', 1)[-1]}, you as "
                         f"{spec.rsplit('/', 1)[-1]}: use the same --id-type as the holder")
    if set(theirs) == ours:
        raise PartyError(f"holder '{holder}' links on the same fields ({', '.join(theirs)}) with other levels, "
                         f"weights, threshold or blocking (its keys {closest.spec}, yours {spec}): use the same "
                         "--preset and --match-threshold (or --precision) as the holder, or the same rules file")
    lacking = [f for f in theirs if f not in ours]
    extra = [f for f in fields if f not in set(theirs)]
    parts = ([f"you do not map {', '.join(lacking)}"] if lacking else []) + \
        ([f"the holder does not link on {', '.join(extra)}"] if extra else [])
    raise PartyError(f"holder '{holder}' links on {', '.join(theirs)}; you on {', '.join(fields)} "
                     f"({'; '.join(parts)}): map the same roles as the holder (--map), or agree on one rules file")
