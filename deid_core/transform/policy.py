"""The re-appliable :class:`Policy`: an ordered list of JSON steps (docs/deid.md).

Each step is one op of :mod:`deid_core.transform.ops`. The same policy JSON can be applied to the
next batch of the same kind of data (``deid apply``): builders are deterministic functions of a
value, so new values get the same treatment.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from ..errors import DeidInputError
from ..hierarchy import portable
from ..spec import HierarchySpec
from .dates import step_columns as date_step_columns
from .ops import MASKING_OPS, OPS
from .schema import check_policy, str_map


def _map_hierarchy(step: dict, fn: Callable[[HierarchySpec], HierarchySpec], base_dir: Path | None = None) -> dict:
    """A copy of a ``generalize`` step with ``fn`` applied to its hierarchy (other steps unchanged)."""
    if step.get("op") != "generalize" or not isinstance(step.get("hierarchy"), Mapping):
        return step
    hs = HierarchySpec.from_dict(str(step.get("column")), step["hierarchy"], base_dir)
    return {**step, "hierarchy": fn(hs).to_dict()}


@dataclass
class Policy:
    """An ordered list of transformation steps, JSON-serializable and re-appliable."""

    steps: list[dict] = field(default_factory=list)
    description: str = ""
    version: int = 1
    #: The declared fate (role) of every column of the data the policy was made for, and of the rest
    #: (``default``: ``drop`` | ``other`` | ``quasi`` or None); ``safe_harbor``: whether releases made
    #: with it are checked as Safe Harbor releases (docs/deid.md, "Every column has a fate").
    columns: dict[str, str] = field(default_factory=dict)
    default: str | None = None
    safe_harbor: bool | None = None
    #: How the ``text`` columns' notes are de-identified before the steps (``{"mode", "hints"}``, the spec's
    #: ``[text]``; :func:`deid_core.releasing.apply_policy` does it; docs/text.md, "Notes in a release").
    text: dict | None = None

    def to_dict(self, relative_to: str | Path | None = None) -> dict:
        """JSON form; with ``relative_to`` (the folder the policy is saved in) CSV hierarchy paths become
        relative to it, so the folder can be moved as a whole."""
        steps = self.steps
        if relative_to is not None:
            steps = [_map_hierarchy(st, lambda h: h.relative_to(Path(relative_to))) for st in steps]
        out = {"format": "deid_core.policy", "version": self.version, "description": self.description, "steps": steps}
        if self.columns or self.default is not None:
            out.update(columns=dict(self.columns), default=self.default, safe_harbor=self.is_safe_harbor())
        if self.text is not None:
            out["text"] = dict(self.text)
        return out

    def with_fates(self, fates: Mapping[str, str], default: str | None = None, safe_harbor: bool | None = None,
                   text: Mapping[str, object] | None = None, key: bytes | None = None) -> "Policy":
        """This policy recording each column's fate (from the spec it was made with) and, for ``text``
        columns, how their notes are de-identified (the spec's ``[text]``; in surrogate mode with the check
        value of ``key``, the owner's key they were replaced under: :func:`.keys.text_recipe`)."""
        from .keys import text_recipe
        if "text" not in fates.values():
            text = None
        elif text is not None:
            text = text_recipe(text, key)
        else:
            text = self.text
        return Policy(self.steps, self.description, self.version, dict(fates), default,
                      self.safe_harbor if safe_harbor is None else safe_harbor, text)

    def with_key_checks(self, checks: Mapping[str, str]) -> "Policy":
        """This policy with each ``fpe`` step recording the check value of the key that masked its column
        (``checks``: column -> value, from :meth:`apply`'s context), so that a wrong key is refused when
        the column is decrypted or masked again (docs/masking.md)."""
        steps = [{**st, "key_check": checks[st["column"]]} if st.get("op") == "fpe" and st.get("column") in checks
                 else st for st in self.steps]
        return Policy(steps, self.description, self.version, dict(self.columns), self.default, self.safe_harbor,
                      self.text)

    def step_columns(self) -> dict[str, str]:
        """Columns the steps name -> fate they imply (``direct`` dropped, ``masked``, else ``quasi``)."""
        out: dict[str, str] = {}
        for st in self.steps:
            cols = (st.get("columns", []) if st.get("op") in ("drop", "suppress_records")
                    else date_step_columns(st) if st.get("op") == "dates_intervals" else [st.get("column")])
            fate = "direct" if st.get("op") == "drop" else "masked" if st.get("op") in MASKING_OPS else "quasi"
            for c in cols:
                if c is not None and out.get(c) not in ("direct", "masked"):
                    out[str(c)] = fate
        return out

    def fates(self, available: Sequence[str]) -> dict[str, str]:
        """Fate of every input column: recorded, implied by a step, or the recorded default; else refused."""
        steps = self.step_columns()
        rest = [c for c in available if c not in self.columns and c not in steps]
        if rest and self.default is None:
            shown = ", ".join(repr(c) for c in rest[:10]) + (f" and {len(rest) - 10} more" if len(rest) > 10 else "")
            raise DeidInputError(f"{len(rest)} column(s) of the input are not in the policy: {shown} - re-create the "
                                 "policy from a spec that declares them (or sets [columns] default)")
        default = "direct" if self.default == "drop" else self.default
        return {c: steps[c] if steps.get(c) in ("direct", "masked") else self.columns.get(c) or steps.get(c) or default
                for c in available}

    def direct_columns(self, available: Sequence[str]) -> list[str]:
        """The columns whose recorded fate (``columns`` or ``default = "drop"``) is to be dropped and no step
        masks: removed after the steps, so a declared direct identifier never reaches the release."""
        steps = self.step_columns()
        return [c for c in available if steps.get(c) not in ("direct", "masked")
                and (self.columns.get(c) == "direct" or (c not in self.columns and c not in steps
                                                         and self.default == "drop"))]

    def is_safe_harbor(self) -> bool:
        """Recorded, or (older policies) inferred from Safe Harbor steps."""
        if self.safe_harbor is not None:
            return self.safe_harbor
        return any(st.get("op") in ("zip3", "year", "top_code", "birth_year_cap") for st in self.steps)

    def to_json(self, relative_to: str | Path | None = None) -> str:
        return json.dumps(self.to_dict(relative_to), indent=2)

    def save(self, path: str | Path) -> None:
        """Write the policy JSON to ``path`` with hierarchy files referenced relative to its folder."""
        from ..io import write_text
        write_text(self.to_json(relative_to=Path(path).resolve().parent) + "\n", path)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], base_dir: str | Path | None = None) -> "Policy":
        """Validate a policy; relative CSV hierarchy paths are resolved against ``base_dir`` (absolute ones,
        as older policies wrote them, are kept)."""
        check_policy(raw)
        columns = raw.get("columns") or {}
        if not str_map(columns) or raw.get("default") not in (None, "drop", "other", "quasi"):
            raise DeidInputError("policy: 'columns' must map column -> role and 'default' be drop, other or quasi")
        steps = [dict(s) for s in raw["steps"]]
        if base_dir is not None:
            steps = [_map_hierarchy(st, lambda h: h, Path(base_dir)) for st in steps]
        text = raw.get("text")
        if text is not None and (not isinstance(text, Mapping) or not str_map(text.get("hints") or {})
                                 or not isinstance(text.get("mode", "tag"), str)):
            raise DeidInputError("policy: 'text' must hold a mode and hints mapping a hint to a column")
        return cls(steps=steps, description=str(raw.get("description", "")),
                   version=int(raw.get("version", 1)), columns={str(k): str(v) for k, v in columns.items()},
                   default=raw.get("default"), safe_harbor=raw.get("safe_harbor"),
                   text=dict(text) if text is not None else None)

    @classmethod
    def load(cls, path: str | Path) -> "Policy":
        """Read a saved policy; its hierarchy files are looked up relative to the policy's folder."""
        try:
            with open(path, encoding="utf-8") as fh:
                raw = json.load(fh)
        except OSError as exc:
            raise DeidInputError(f"cannot read policy {str(path)!r}: {exc.strerror or exc}") from None
        except json.JSONDecodeError as exc:
            raise DeidInputError(f"policy {str(path)!r} is not valid JSON: {exc}") from None
        return cls.from_dict(raw, base_dir=Path(path).resolve().parent)

    def apply(self, df: pd.DataFrame, key: bytes | None = None, reversal: bool = False) -> tuple[pd.DataFrame, dict]:
        """Apply every step to a copy of ``df``; returns (output, context with counts). With ``reversal`` the
        context's ``reversal`` holds the masking steps' pseudonym -> originals (:mod:`.reversal`). A step sees
        the steps after it in ``ctx["later"]``."""
        out = df.copy()
        direct = self.direct_columns(list(df.columns))
        ctx: dict = {"key": key, "suppressed_records": 0, "warnings": [], **({"reversal": {}} if reversal else {})}
        for i, step in enumerate(self.steps):
            ctx["later"] = self.steps[i + 1:]
            out = OPS[step["op"]](out, step, ctx)
        out = out.drop(columns=[c for c in direct if c in out.columns])
        ctx.pop("key", None)
        ctx.pop("later", None)
        return out, ctx


def full_domain_policy(hierarchies: Mapping[str, HierarchySpec], levels: Mapping[str, int],
                       drop: Sequence[str] = (), suppress_k: int | None = None,
                       qis: Sequence[str] = (), person: str | None = None) -> Policy:
    """Policy = drop direct identifiers, generalize each QI to its level, then suppress records in ECs < k.

    With ``person`` (``[longitudinal]``) the suppression is of whole persons whose class holds fewer than k
    distinct persons (:func:`deid_core.transform.ops.suppression_mask`), and the direct identifiers (the
    person column among them) are dropped last, after the suppression has used the person column.
    Small CSV hierarchies are embedded (:func:`deid_core.hierarchy.portable`), so the policy re-applies anywhere.
    """
    steps: list[dict] = []
    if drop and person is None:
        steps.append({"op": "drop", "columns": list(drop)})
    for col, lvl in levels.items():
        if lvl:
            if col not in hierarchies:
                if lvl != 1:
                    raise DeidInputError(f"level {lvl} for {col!r}, which has no hierarchy (only 0 or 1 = '*')")
                steps.append({"op": "generalize", "column": col, "hierarchy": {"builder": "flat"}, "level": 1})
            else:
                steps.append({"op": "generalize", "column": col, "hierarchy": portable(hierarchies[col]).to_dict(),
                              "level": int(lvl)})
    if suppress_k and suppress_k > 1:
        steps.append({"op": "suppress_records", "columns": list(qis or levels), "k": int(suppress_k),
                      **({"person": person} if person is not None else {})})
    if drop and person is not None:
        steps.append({"op": "drop", "columns": list(drop)})
    return Policy(steps)
