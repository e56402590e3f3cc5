"""Earlier ``deid truncate`` and ``deid codes`` runs (their ``--report`` JSON) in words, as steps of the
recipe a release followed, and as the commands that run them again on the next batch (El Emam & Arbuckle,
ch. 5, "Long Tails"; ch. 10, "Medical Codes")."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from .render import pct


def operation_text(op: Mapping[str, Any]) -> tuple[str, str]:
    """(what was done, its result) of one earlier ``deid truncate``/``deid codes`` report, in words."""
    if "removed_claims" in op:
        how = (f"claims per person top-coded at the {op.get('percentile')}th percentile ({op.get('cutoff')} claims)"
               if op.get("method") == "percentile" else
               f"every bin of {op.get('width', 5)} claims per person holds at least k = {op.get('k')} persons")
        return (f"Long tail truncated (deid truncate): {how}",
                f"{op['removed_claims']:,} of {op['claims']:,} claims (rows) removed "
                f"({pct(op['removed_claims_proportion'])}), from {op['removed_persons']:,} of {op['persons']:,} persons")
    if op.get("operation") == "suppress":
        return (f"Codes in {op.get('code')} suppressed (deid codes) where a code group is held by fewer than "
                f"k = {op.get('k')} persons in its class",
                f"{op['suppressed_rows']:,} of {op.get('events', 0):,} codes suppressed, of "
                f"{op['suppressed_persons']:,} persons; {op['groups_below_k']:,} code groups below k")
    return (f"Codes in {op.get('code')} shuffled (deid codes) among the persons of each class and code group "
            f"(level {op.get('group_level')} of the code hierarchy)",
            f"{op.get('rows_changed', 0):,} of {op.get('events', 0):,} rows now hold a different code "
            f"({op.get('groups', 0):,} groups); every group keeps its codes and their counts")


def operation_column(op: Mapping[str, Any]) -> str:
    """The column an earlier step changed ("" for a truncation, which removes whole rows)."""
    return "" if "removed_claims" in op else str(op.get("code", ""))


def operation_command(op: Mapping[str, Any], source: str, target: str, level1: Sequence[str] = ()) -> str:
    """The ``deid truncate``/``deid codes`` command that repeats ``op`` on ``source``, writing ``target``."""
    head = f"deid {'truncate' if 'removed_claims' in op else 'codes'} --input {source} --spec SPEC.toml"
    if "removed_claims" in op:
        how = (f"--method percentile --percentile {op.get('percentile')}" if op.get("method") == "percentile"
               else f"--method bins --k {op.get('k')} --width {op.get('width', 5)}")
        return f"{head} {how} --seed {op.get('seed', 0)} --out {target} --report TRUNCATE.json"
    parts = [head, "--suppress" if op.get("operation") == "suppress" else "--shuffle", f"--code {op.get('code')}",
             f"--group-level {op.get('group_level', 0)}"]
    parts += [f"--nesting {c}" for c in op.get("classes", []) if c not in level1]
    parts += [f"--connected {c}" for c in op.get("connected", [])]
    parts.append(f"--k {op.get('k')}" if op.get("operation") == "suppress" else f"--seed {op.get('seed', 0)}")
    return " ".join(parts + [f"--out {target}", "--report CODES.json"])


def recipe(operations: Sequence[Mapping[str, Any]], final_command: str, level1: Sequence[str] = (),
           first_input: str = "NEXT.csv") -> tuple[list[tuple[str, str]], list[str]]:
    """The earlier steps as (columns, what) rows and every command in order, ``final_command`` (a ``deid
    apply`` reading ``first_input``) last, reading the table the earlier steps wrote."""
    steps, commands, source = [], [], first_input
    for i, op in enumerate(operations, start=1):
        target = f"STEP{i}.csv"
        what, _ = operation_text(op)
        steps.append((operation_column(op) or "every column (whole rows)", what))
        commands.append(operation_command(op, source, target, level1))
        source = target
    return steps, commands + [final_command.replace(f"--input {first_input}", f"--input {source}", 1)]


__all__ = ["operation_column", "operation_command", "operation_text", "recipe"]
