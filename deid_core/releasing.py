"""A release from a policy, as a library call: :func:`apply_policy` de-identifies the notes of every column
declared ``text`` (free-text notes) note by note, with the row's own identifiers (``[text] hints``) searched
in its note first, then runs the policy's steps, so that a release never carries a note as it was written
(docs/text.md, "Notes in a release"; El Emam & Arbuckle, ch. 8, "Free-Form Text").  The detection and
transforms are :mod:`deid_core.text`'s; a path that releases without this module's treatment is refused
by :func:`deid_core.detect.check_release`."""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

import pandas as pd

if TYPE_CHECKING:
    from .transform.policy import Policy

from .errors import DeidInputError
from .transform.keys import check_text_key


def text_columns(fates: Mapping[str, str], available) -> list[str]:
    """The columns of ``available`` whose declared fate is ``text``."""
    return [c for c in available if fates.get(c) == "text"]


def deidentify_text_columns(frame: pd.DataFrame, fates: Mapping[str, str], text: Mapping[str, object] | None,
                            key: bytes | None = None) -> tuple[pd.DataFrame, dict]:
    """``frame`` with each ``text`` column's notes de-identified (``text``: ``{"mode", "hints"[, "patient"]}``,
    the spec's ``[text]``; None: tag, no hints) and, per column, what was found (``deid text``'s report
    counts).  ``surrogate`` mode needs ``key``, the data owner's (one date shift per value of the patient
    column: ``[text] patient``, else the ``mrn`` hint, else the row)."""
    from .text.column import deidentify_notes
    from .text.hints import check_hints

    columns = text_columns(fates, frame.columns)
    if not columns:
        return frame, {}
    text = dict(text or {})
    mode, hints = str(text.get("mode", "tag")), dict(text.get("hints") or {})
    check_hints({name: "x" for name in hints})                  # every hint key known
    missing = [c for c in hints.values() if c not in frame.columns]
    if missing:
        raise DeidInputError(f"[text] hints name {', '.join(map(repr, missing))}, not a column of the input")
    rows = [dict(zip(hints, values)) for values in zip(*(frame[c].astype(object).tolist() for c in hints.values()))] \
        if hints else None
    surrogates, patients, patient = None, None, None
    if mode == "surrogate":
        from .text.transforms import Surrogates
        surrogates = Surrogates(key)                           # refused without the owner's key (names ``key``)
        patient = text.get("patient") or hints.get("mrn")
        if patient is not None and patient not in frame.columns:
            raise DeidInputError(f"[text] patient {patient!r} is not a column of the input")
        patients = ([v if isinstance(v, str) else "" for v in frame[patient].astype(object).tolist()]  # as deid text
                    if patient is not None else None)
    out, found = frame.copy(), {}
    for column in columns:
        result = deidentify_notes(frame[column].astype(object).tolist(), mode, hints=rows, patients=patients,
                                  surrogates=surrogates)
        out[column] = pd.Series(result.notes, index=frame.index, dtype=object)
        found[column] = {"mode": mode, "hints": hints, **({"date_shift_key": patient or "row number"}
                                                          if surrogates is not None else {}), **result.summary()}
    return out, found


def apply_policy(policy: "Policy", frame: pd.DataFrame, key: bytes | None = None,
                 reversal: bool = False) -> tuple[pd.DataFrame, dict]:
    """``policy`` applied to ``frame`` (:meth:`deid_core.transform.Policy.apply`) after the notes of its
    ``text`` columns are de-identified as the policy records (under ``key`` in surrogate mode, refused unless
    it is the key the policy was made with); the context's ``notes`` says what was found."""
    check_text_key(policy.text, key)
    treated, notes = deidentify_text_columns(frame, policy.columns, policy.text, key)
    out, ctx = policy.apply(treated, key=key, reversal=reversal)
    if notes:
        ctx["notes"] = notes
    return out, ctx
