"""Other forms of one name, as keys for the name levels ``nickname``, ``translit`` and ``compound``
(docs/protocol.md, "Comparison levels"), each computed once per distinct value and mapped back.

* nickname forms: a given name and the names it is a short form or nickname of (Robert <- Bob, Bill;
  Margaret <- Peggy), from the hand-curated table of the ``nicknames`` package (Northern and Crews,
  Apache-2.0, its data ship in the package; of two related names the longer is taken as the formal
  one), ordered by how common each is: the name itself, then the others by their frequency among US
  given names (the census weights Faker ships with its ``en_US`` lists), then alphabetically;
* the umlaut fold: every ``e`` right after an ``a``, ``o`` or ``u`` dropped (``ae``, ``oe``, ``ue`` read as
  ``a``, ``o``, ``u``, and so on along a run of e's, so that the fold of a folded name is itself), so
  that Mueller (an umlaut written out) meets Müller and Muller (normalization already drops the
  diaeresis, and ß is ``ss``);
* name parts: a written name split at hyphens and spaces, each part normalized as a name, the
  particles of European surnames (van, der, von, de, ...) and one-letter parts left out, so that
  Müller-Lüdenscheidt shows the parts ``muller`` and ``ludenscheidt`` and van der Berg the part ``berg``.
"""
from __future__ import annotations

import functools
import re

import pandas as pd

from party_client.matching.normalize import normalize_names

# Particles of Dutch, German, French, Italian, Spanish, Portuguese and Scandinavian surnames: a part that
# is one of these is no name of its own (left out, unless the name has nothing else); the one-letter
# conjunctions of Spanish and Portuguese double surnames (y, e) go as one-letter parts.
PARTICLES = frozenset({"van", "von", "der", "den", "ter", "ten", "te", "zu", "zum", "zur", "de", "del", "della",
                       "dei", "degli", "di", "da", "das", "dos", "do", "du", "des", "la", "le", "les", "lo", "af",
                       "av"})
UMLAUT_FOLD = r"(?<=[aou])e+"           # the e's of written-out umlauts (ae, oe, ue), dropped
_PART_BREAK = re.compile(r"[\s\-\u2010-\u2015/]+")


@functools.lru_cache(maxsize=1)
def nickname_forms() -> dict[str, tuple[str, ...]]:
    """Per name of the table: its forms other than itself (the names it is a nickname of), most common
    first.  A name not in the table has none."""
    from faker.providers.person.en_US import Provider
    from nicknames import name_triplets
    frequency: dict[str, float] = {}
    for table in (Provider.first_names_male, Provider.first_names_female):
        for name, weight in table.items():
            key = normalize_names(pd.Series([name])).iloc[0]
            frequency[key] = frequency.get(key, 0.0) + float(weight)
    triplets = [t for t in name_triplets() if t.relationship == "has_nickname"]
    formal = normalize_names(pd.Series([t.name1 for t in triplets], dtype=object)).tolist()
    short = normalize_names(pd.Series([t.name2 for t in triplets], dtype=object)).tolist()
    edges = {(name, nickname) for name, nickname in zip(formal, short) if name and nickname and name != nickname}
    canonicals: dict[str, set[str]] = {}
    for name, nickname in edges:
        # the table lists some pairs both ways or the other way round (bill has_nickname william, chick
        # has_nickname caroline): of two related names the longer is taken as the formal one (as listed
        # when as long), so that two formal names sharing a nickname (William and Robert through Bill)
        # do not share a form
        if len(nickname) > len(name):
            name, nickname = nickname, name
        canonicals.setdefault(nickname, set()).add(name)
    return {name: tuple(sorted(others, key=lambda f: (-frequency.get(f, 0.0), f)))
            for name, others in canonicals.items()}


def form_keys(codes: pd.Series, count: int) -> list[pd.Series]:
    """The first ``count`` forms of each normalized name as ``count`` columns: the name itself, then the
    names it is a nickname of, most common first; '' where a name has fewer (or is missing)."""
    forms = nickname_forms()
    columns = [codes]
    uniques = pd.unique(codes)
    for k in range(count - 1):
        lookup = {v: (forms.get(v, ())[k] if v and len(forms.get(v, ())) > k else "") for v in uniques}
        columns.append(codes.map(lookup).astype(object))
    return columns


def umlaut_folded(codes: pd.Series) -> pd.Series:
    """Normalized names with every ``e`` right after an ``a``, ``o`` or ``u`` dropped (ae, oe, ue -> a, o, u)."""
    return codes.astype("string").fillna("").str.replace(UMLAUT_FOLD, "", regex=True).astype(object)


def name_parts(values: pd.Series, count: int) -> list[pd.Series]:
    """The first ``count`` parts of each written name (split at hyphens, dashes, slashes and spaces;
    each normalized as a name; particles and one-letter parts left out unless nothing else is left),
    as ``count`` columns; '' where a name has fewer parts (or none)."""
    text = values.astype("string").fillna("").astype(object)
    uniques = pd.unique(text)
    pieces = {v: [p for p in _PART_BREAK.split(v) if p] for v in uniques}
    flat = [p for parts in pieces.values() for p in parts]
    normalized = dict(zip(flat, normalize_names(pd.Series(flat, dtype=object)).tolist())) if flat else {}
    chosen = {}
    for v, parts in pieces.items():
        names = [normalized[p] for p in parts if normalized[p]]
        kept = [p for p in names if len(p) > 1 and p not in PARTICLES]
        chosen[v] = (kept or names)[:count]
    return [text.map({v: (parts[k] if len(parts) > k else "") for v, parts in chosen.items()}).astype(object)
            for k in range(count)]
