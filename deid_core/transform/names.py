"""Randomized names drawn from a real name-frequency list (El Emam & Arbuckle, *Anonymizing Health Data*,
ch. 11, "Randomization"; docs/masking.md).

The lists are Faker's person lists of one locale (``en_US`` by default: 381 female and 322 male first
names and 1,000 surnames, each with its frequency in the US population). The book's rules:

* the replacement comes from a large list of real names, not from the original: its length is independent
  of the original's (a 17-character name kept at 17 characters can be re-identified by its length);
* it is consistent: the same name of the same person gets the same replacement in every row and every
  table masked with the same key (without ``person``, the same name gets the same replacement);
* first names are conditioned on sex only when the (de-identified) sex column is released: the step must
  come after every step that changes that column, and a record whose sex is suppressed or missing draws
  from the list of both sexes.

The draw is keyed: ``u = HMAC-SHA256(key, "names" | part | sex | person | name)`` read as a number in
[0, 1) picks a name by inverse CDF over the frequencies (``weights = "frequency"``, default) or uniformly
(``"uniform"``). A draw equal to the original (ignoring case) is drawn again. Without a key a fresh
random key is used, so the replacement is consistent within the run only.
"""
from __future__ import annotations

import hmac
import importlib
import os
from functools import lru_cache
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import DeidInputError
from ..metric.missingness import is_marker
from .keys import check_key
from .ops import step_touches
from .reversal import record

PARTS = ("first", "last")
WEIGHTS = ("frequency", "uniform")
SEXES = ("female", "male", "any")
#: How a released sex value is read (case-insensitive); any other value draws from both lists.
SEX_VALUES = {"f": "female", "female": "female", "w": "female", "woman": "female",
              "m": "male", "male": "male", "man": "male"}

@lru_cache(maxsize=32)
def name_pool(locale: str, part: str, sex: str) -> tuple[tuple[str, ...], np.ndarray]:
    """(names, cumulative probabilities) of one Faker locale's list; ``sex = "any"`` joins both lists."""
    if part not in PARTS or sex not in SEXES:
        raise DeidInputError(f"names: part must be one of {', '.join(PARTS)} and sex one of {', '.join(SEXES)}")
    try:
        provider = importlib.import_module(f"faker.providers.person.{locale}").Provider
    except ImportError:
        raise DeidInputError(f"names: no Faker person list for locale {locale!r}") from None
    attrs = (["last_names"] if part == "last" else
             [f"first_names_{sex}"] if sex != "any" else ["first_names_female", "first_names_male"])
    weights: dict[str, float] = {}
    for attr in attrs:
        lst = getattr(provider, attr, None)
        if not lst:
            raise DeidInputError(f"names: Faker locale {locale!r} has no {attr}")
        items = lst.items() if isinstance(lst, Mapping) else ((n, 1.0) for n in lst)
        for n, w in items:
            weights[n] = weights.get(n, 0.0) + float(w)
    names = tuple(sorted(weights))
    p = np.array([weights[n] for n in names])
    return names, np.cumsum(p / p.sum())


def _uniform(key: bytes, messages: Sequence[bytes]) -> np.ndarray:
    """HMAC-SHA256 of each message, its first 8 bytes as a number in [0, 1)."""
    raw = b"".join(hmac.digest(key, m, "sha256")[:8] for m in messages)
    return np.frombuffer(raw, dtype=">u8").astype(np.float64) / 2.0 ** 64


def draw_names(values: Sequence[str], key: bytes, part: str = "first", sexes: Sequence[str] | None = None,
               persons: Sequence[str] | None = None, locale: str = "en_US", weights: str = "frequency",
               attempt: int = 0) -> list[str]:
    """A keyed draw of a name per value (see the module docstring); ``sexes`` and ``persons`` align with it;
    ``attempt`` > 0 draws again (for a draw that hit the original)."""
    key = check_key(key)
    if weights not in WEIGHTS:
        raise DeidInputError(f"names: weights must be one of {', '.join(WEIGHTS)}")
    n = len(values)
    sexes = list(sexes) if sexes is not None else ["any"] * n
    persons = list(persons) if persons is not None else [""] * n
    out = np.empty(n, dtype=object)
    sex_arr = np.asarray(sexes, dtype=object)
    for sex in SEXES:
        idx = np.flatnonzero(sex_arr == sex)
        if not len(idx):
            continue
        names, cdf = name_pool(locale, part, "any" if part == "last" else sex)
        u = _uniform(key, [b"\x1f".join([b"names", part.encode(), sex.encode(), persons[i].encode(),
                                          values[i].encode()]) + (b"\x1f%d" % attempt if attempt else b"")
                       for i in idx])
        pick = (np.searchsorted(cdf, u, side="right") if weights == "frequency"
                else (u * len(names)).astype(np.int64))
        out[idx] = np.asarray(names, dtype=object)[np.minimum(pick, len(names) - 1)]
    return out.tolist()


def sex_classes(s: pd.Series) -> np.ndarray:
    """``female`` / ``male`` / ``any`` per record of a released sex column (suppressed or missing -> any)."""
    text = s.astype(object).where(s.notna(), "").astype(str).str.strip().str.lower()
    out = text.map(SEX_VALUES).fillna("any").to_numpy(dtype=object)
    out[is_marker(s)] = "any"
    return out


def _check_sex_released(sex: str, df: pd.DataFrame, later: Sequence[Mapping[str, Any]]) -> None:
    """The sex column must be in the table and no later step may change it (else the name leaks it)."""
    if sex not in df.columns:
        raise DeidInputError(f"names: the sex column {sex!r} is not released (not in the table at this step); "
                             "a name conditioned on an unreleased sex would disclose it")
    for st in later:
        if step_touches(st, sex):       # a name conditioned on sex must come after every step on it
            raise DeidInputError(f"names: a later {st.get('op')!r} step changes the sex column {sex!r}; put the "
                                 "names step after every step that de-identifies it")


def op_names(df: pd.DataFrame, step: Mapping[str, Any], ctx: dict) -> pd.DataFrame:
    """Policy step ``{"op": "names", "column": C, "part": "first"|"last", "sex": S, "person": P, "locale": L,
    "weights": "frequency"|"uniform"}`` (``sex`` and ``person`` optional columns)."""
    c, part = step.get("column"), str(step.get("part", "first"))
    if c not in df.columns:
        raise DeidInputError(f"unknown column {c!r}: not in the input")
    sex, person = step.get("sex"), step.get("person")
    if sex is not None:
        _check_sex_released(sex, df, ctx.get("later", ()))
    if person is not None and person not in df.columns:
        raise DeidInputError(f"names: the person column {person!r} is not in the table at this step")
    key = ctx.get("key") or os.urandom(32)
    present = df[c].notna().to_numpy() & ~is_marker(df[c])
    frame = pd.DataFrame({"v": df[c].astype(object).where(present, ""),
                          "s": sex_classes(df[sex]) if sex is not None and part == "first" else "any",
                          "p": df[person].astype(object).where(df[person].notna(), "").astype(str)
                          if person is not None else ""})
    codes, _ = pd.factorize(frame["v"].astype(str) + "\x1f" + frame["s"].astype(str) + "\x1f" + frame["p"].astype(str))
    u = frame.iloc[np.unique(codes, return_index=True)[1]].astype(str)  # one row per distinct (value, sex, person)
    args = (part, list(u["s"]), list(u["p"]), str(step.get("locale", "en_US")), str(step.get("weights", "frequency")))
    values = list(u["v"])
    drawn = np.asarray(draw_names(values, key, *args), dtype=object)
    for attempt in range(1, 64):  # a replacement never equals the original: draw again (docs/masking.md)
        same = np.flatnonzero(np.char.lower(drawn.astype(str)) == np.char.lower(np.asarray(values, dtype=str)))
        if not len(same):
            break
        drawn[same] = draw_names([values[i] for i in same], key, args[0], [args[1][i] for i in same],
                                 [args[2][i] for i in same], *args[3:], attempt=attempt)
    new = pd.Series(drawn[codes], index=df.index, dtype=object).where(present, df[c].astype(object))
    seen = np.unique(codes[present])
    record(ctx, c, u["v"].to_numpy()[seen], drawn[seen])
    df[c] = new.astype("category")
    return df
