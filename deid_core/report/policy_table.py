"""A policy as an ethics board reads it: one row per step (which columns, what it does, in words), the
earlier ``deid truncate``/``deid codes`` steps first, and the commands that re-apply the whole recipe."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..errors import DeidInputError
from ..column_fates import describe_step
from .document import Block, Paragraph, Preformatted, Table

#: The role of a column recorded in a policy's ``columns`` (what happens to a column no step names).
FATE_TEXT = {"direct": "dropped (direct identifier)", "quasi": "kept as the steps above leave it",
             "sensitive": "released as it is (sensitive, analytic)", "other": "released as it is",
             "masked": "masked by its step", "drop": "dropped", "keep": "released as it is"}


def _columns(step: Mapping[str, Any]) -> str:
    cols = step.get("columns") if step.get("op") in ("drop", "suppress_records") else None
    return ", ".join(cols) if cols else str(step.get("column", "—"))


def _words(step: Mapping[str, Any]) -> str:
    column = str(step.get("column", ""))
    try:
        text = describe_step(step, column, set())["text"]
    except (KeyError, ValueError, TypeError, OSError, DeidInputError):  # a step this version cannot draw (e.g. a hierarchy file that moved): name its operation
        text = str(step.get("op", "step"))
    if step.get("op") == "generalize":
        text += f" (level {step.get('level')})"
    return text[:1].upper() + text[1:]


def policy_steps_table(policy: Mapping[str, Any], earlier: Sequence[tuple[str, str]] = ()) -> Table:
    """Every step of ``policy`` in order, after the ``earlier`` steps (what, on which columns) that were
    run on the data before the policy."""
    rows: list[list[Any]] = [[i + 1, cols, what] for i, (cols, what) in enumerate(earlier)]
    for step in policy.get("steps", []):
        rows.append([len(rows) + 1, _columns(step), _words(step)])
    if not rows:
        rows.append([1, "—", "No step: every column is released as it is"])
    return Table(["step", "columns", "what it does"], rows, numeric=(0,))


def fates_table(policy: Mapping[str, Any]) -> Table | None:
    """The policy's record of every column's fate (``columns``), or None when it has none."""
    fates = policy.get("columns") or {}
    if not fates:
        return None
    return Table(["column", "declared as", "in a new batch"],
                 [[c, f, FATE_TEXT.get(str(f), str(f))] for c, f in fates.items()])


def reapply_blocks(policy: Mapping[str, Any], commands: Sequence[str], *, ok: bool | None,
                   earlier: Sequence[tuple[str, str]] = (), policy_file: str = "") -> list[Block]:
    """The policy to re-apply: a sentence that never calls a failing release re-appliable as it is, the
    steps as a table, the columns' fates and the commands in order."""
    if ok is False:
        lead = ("This release does NOT meet its threshold: do not release data this way. The steps below are "
                "what was done, to be changed (more generalization or suppression) and assessed again before "
                "any release.")
    elif ok is None:
        lead = "The steps below are what was done; the commands re-run them on the next batch of the same kind."
    else:
        lead = ("Next year's data of the same kind can be released the same way: the same steps give the same risk "
                "on a stable population, which a new assessment of that release confirms or refutes (El Emam & "
                "Arbuckle, ch. 3, “Year on Year: Reusing Risk Analyses”).")
    blocks: list[Block] = [Paragraph(lead), policy_steps_table(policy, earlier)]
    fates = fates_table(policy)
    if fates is not None:
        blocks += [Paragraph("Every column of the input, and what a new batch's column of that name becomes:"), fates]
    if commands:
        blocks.append(Paragraph(("The commands, in order" if len(commands) > 1 else "The command")
                                + (f" (the policy is saved as {policy_file}):" if policy_file else ":")))
        blocks.append(Preformatted("\n".join(commands), style="cmd"))
    return blocks


__all__ = ["fates_table", "policy_steps_table", "reapply_blocks"]
