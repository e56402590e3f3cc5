"""Masking of direct identifiers (El Emam & Arbuckle, *Anonymizing Health Data*, ch. 11).

* suppression: drop the column (policy ``drop``) or blank it (``blank``);
* randomization: keyed, so the same value gets the same replacement in every
  table masked with the same key ("consistent across tables"); the
  replacement length is drawn from the keyed hash, independent of the
  original length (a 17-character name must not stay 17 characters: frequency
  attack, El Emam & Arbuckle ch. 11, "Randomization"); ``unique=True`` guarantees distinct outputs for distinct
  inputs (needed when the column is a key);
* pseudonyms: deterministic HMAC-SHA256 (``cryptography``) with a key that
  the data owner supplies and keeps;
* :func:`frequency_check`: warn when a pseudonymized non-unique field's
  frequency distribution is far from uniform (a dominant hospital stands out);
* the ``dominant`` option of a ``pseudonymize`` step instead treats the field as a two-valued
  quasi-identifier, dominant value vs the rest (ch. 11, "Frequency of Pseudonyms";
  :func:`dominant_mask`): a pseudonym whose record falls in a class smaller than k on the other
  quasi-identifiers plus that two-valued field is suppressed.

Format-preserving pseudonyms are in :mod:`.fpe`, names drawn from real name lists in :mod:`.names`,
the sealed pseudonym -> original table in :mod:`.reversal`.
"""
from __future__ import annotations

import hashlib
import math
import os
import string
import warnings
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from cryptography.hazmat.primitives import hashes, hmac

from ..errors import DeidInputError, DeidWarning
from .keys import check_key
from .ops import map_categories, set_marker, suppression_mask
from .reversal import record_series

_LETTERS = string.ascii_uppercase


def _hmac(key: bytes, data: bytes) -> bytes:
    h = hmac.HMAC(key, hashes.SHA256())
    h.update(data)
    return h.finalize()


def pseudonyms(values: Iterable[str], key: bytes, length: int = 32) -> list[str]:
    """HMAC-SHA256(key, value) as lowercase hex, truncated to ``length`` characters (≤ 64)."""
    key = check_key(key)
    if not 8 <= length <= 64:
        raise DeidInputError("pseudonym length must be between 8 and 64 hex characters")
    return [_hmac(key, b"pseudonym\x00" + v.encode()).hex()[:length] for v in values]


def pseudonymize(s: pd.Series, key: bytes, length: int = 32) -> pd.Series:
    """Deterministic keyed pseudonyms for a column (one HMAC per distinct value)."""
    return map_categories(s, lambda cats: pseudonyms(cats, key, length))


def _token(digest: bytes, min_len: int, max_len: int) -> str:
    n = min_len + digest[0] % (max_len - min_len + 1)
    return "".join(_LETTERS[b % 26] for b in digest[1 : 1 + n])


def random_tokens(values: list[str], key: bytes, unique: bool = False, min_len: int = 8, max_len: int = 14) -> list[str]:
    """Keyed random-looking replacement tokens; length independent of the original's.

    With ``unique=True`` the (rare) collisions between distinct inputs are
    resolved by re-hashing with a counter, in sorted input order, so the
    result is deterministic for a given key and set of values.
    """
    key = check_key(key)
    if not 1 <= min_len <= max_len <= 31:
        raise DeidInputError("token lengths must satisfy 1 <= min_len <= max_len <= 31")
    out = {v: _token(_hmac(key, b"randomize\x00" + v.encode()), min_len, max_len) for v in values}
    if unique:
        seen: dict[str, str] = {}
        for v in sorted(out):
            t, i = out[v], 0
            while t in seen and seen[t] != v:
                i += 1
                t = _token(_hmac(key, b"randomize\x00%d\x00" % i + v.encode()), min_len, max_len)
            seen[t] = v
            out[v] = t
    return [out[v] for v in values]


def randomize(s: pd.Series, key: bytes | None = None, seed: int | None = None, unique: bool = False,
              min_len: int = 8, max_len: int = 14) -> pd.Series:
    """Replace values by keyed random tokens (key, or a key derived from ``seed``, or a fresh random key)."""
    if key is None:
        key = hashlib.sha256(b"deid-randomize-seed:%d" % seed).digest() if seed is not None else os.urandom(32)
    return map_categories(s, lambda cats: random_tokens(list(cats), key, unique, min_len, max_len))


def _chi2_sf(x: float, dof: int) -> float:
    """Chi-square survival function by the Wilson–Hilferty normal approximation."""
    if dof <= 0:
        return 1.0
    z = ((x / dof) ** (1 / 3) - (1 - 2 / (9 * dof))) / math.sqrt(2 / (9 * dof))
    return 0.5 * math.erfc(z / math.sqrt(2))


def frequency_check(s: pd.Series, alpha: float = 0.01, min_effect: float = 0.3, warn: bool = True) -> dict:
    """Chi-square goodness-of-fit of the value frequencies against a uniform distribution.

    Test: X² = Σ (o − e)²/e with e = N/m over the m distinct values, m − 1
    degrees of freedom (p by the Wilson–Hilferty approximation), effect size
    Cohen's w = √(X²/N). "Far from uniform" = p < ``alpha`` **and** w ≥
    ``min_effect`` (0.3, a medium effect), so large tables are not flagged
    for trivial deviations. Unique columns are uniform by construction.
    """
    counts = s.value_counts(dropna=True).to_numpy(dtype=float)
    n, m = counts.sum(), len(counts)
    if m <= 1 or n == 0:
        res = {"values": int(m), "chi2": 0.0, "p_value": 1.0, "cohens_w": 0.0, "far_from_uniform": m == 1 and n > 1}
    else:
        e = n / m
        chi2 = float(((counts - e) ** 2 / e).sum())
        p = _chi2_sf(chi2, m - 1)
        w = math.sqrt(chi2 / n)
        res = {"values": int(m), "chi2": chi2, "p_value": p, "cohens_w": w,
               "max_share": float(counts.max() / n), "far_from_uniform": bool(p < alpha and w >= min_effect)}
    if warn and res["far_from_uniform"]:
        warnings.warn(f"pseudonymized column {s.name!r}: frequencies far from uniform (chi2 p={res['p_value']:.3g}, "
                      f"w={res['cohens_w']:.2f}); the most frequent pseudonym may reveal its value — "
                      "consider treating it as a quasi-identifier (El Emam & Arbuckle, ch. 11)", DeidWarning, stacklevel=2)
    return res


def dichotomize(s: pd.Series, value: str | None = None) -> tuple[pd.Series, str, float]:
    """The two-valued field of ``s``: ``dominant`` where it holds ``value`` (default: its most frequent value),
    ``other`` elsewhere, missing where ``s`` is; with that value and its share of the non-missing cells."""
    counts = s.value_counts(dropna=True)
    if counts.empty:
        raise DeidInputError(f"column {s.name!r} has no value: no dominant value")
    value = str(counts.index[0]) if value is None else str(value)
    if value not in counts.index:
        raise DeidInputError(f"dominant value of {s.name!r} is not in the column")
    text = s.astype(object)
    two = pd.Series(np.where(text == value, "dominant", "other"), index=s.index, dtype=object).where(s.notna())
    return two, value, float(counts[value] / counts.sum())


def dominant_mask(df: pd.DataFrame, column: str, columns: Sequence[str], k: int,
                  value: str | None = None) -> tuple[np.ndarray, float]:
    """Records whose class on ``columns`` plus the two-valued ``column`` (:func:`dichotomize`) is smaller
    than ``k``: their pseudonym is suppressed (El Emam & Arbuckle, ch. 11, "Frequency of Pseudonyms": "if
    a particular value is suppressed, then that pseudonym is also suppressed"). A suppressed pseudonym
    matches any value of the two-valued field, so such a record's class is its class on ``columns``
    alone, which the release's own suppression already keeps at k or more. Returns (mask, dominant share).
    """
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DeidInputError(f"dominant: unknown column {missing[0]!r}: not in the table at this step")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise DeidInputError("dominant: k must be an integer >= 1")
    two, _, share = dichotomize(df[column], value)
    name = "\x00dominant"
    frame = df[list(columns)].assign(**{name: two.astype("category")})
    mask, _ = suppression_mask(frame, [*columns, name], k)
    return mask & two.notna().to_numpy(), share


def _dominant_options(step: Mapping[str, Any]) -> dict | None:
    opt = step.get("dominant")
    if opt is None or opt is False:
        return None
    if not isinstance(opt, Mapping) or not isinstance(opt.get("columns"), list) or "k" not in opt:
        raise DeidInputError("pseudonymize: dominant must be {\"columns\": [quasi-identifiers], \"k\": k"
                             "[, \"value\": the dominant value]}")
    return dict(opt)


def op_pseudonymize(df: pd.DataFrame, step: Mapping[str, Any], ctx: dict) -> pd.DataFrame:
    """Policy step ``{"op": "pseudonymize", "column": C, "length": 32, "dominant": {...}}``.

    Without ``dominant`` a non-unique field whose frequencies are far from uniform adds a warning to
    ``ctx["warnings"]``; with it the field is treated as a two-valued quasi-identifier
    (:func:`dominant_mask`) and ``ctx["dominant"][C]`` says how many pseudonyms were suppressed.
    """
    c = step["column"]
    if c not in df.columns:
        raise DeidInputError(f"unknown column {c!r}: not in the input")
    dominant = _dominant_options(step)
    mask = None
    if dominant is not None:
        mask, share = dominant_mask(df, c, dominant["columns"], dominant["k"], dominant.get("value"))
        ctx.setdefault("dominant", {})[c] = {"columns": list(dominant["columns"]), "k": dominant["k"],
                                             "dominant_share": share, "pseudonyms_suppressed": int(mask.sum())}
    original = df[c]
    df[c] = pseudonymize(df[c], ctx.get("key"), int(step.get("length", 32)))
    record_series(ctx, c, original, df[c])
    if mask is not None:
        df[c] = set_marker(df[c], mask)
    elif df[c].nunique() < df[c].notna().sum():  # non-unique field: check its frequencies
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = frequency_check(df[c])
        if res["far_from_uniform"]:
            ctx.setdefault("warnings", []).extend(str(w.message) for w in caught)
    return df


def op_randomize(df: pd.DataFrame, step: Mapping[str, Any], ctx: dict) -> pd.DataFrame:
    c = step["column"]
    if c not in df.columns:
        raise DeidInputError(f"unknown column {c!r}: not in the input")
    original = df[c]
    df[c] = randomize(df[c], key=ctx.get("key"), seed=step.get("seed"), unique=bool(step.get("unique", False)))
    record_series(ctx, c, original, df[c])
    return df
