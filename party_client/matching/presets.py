"""``--preset person``: comparison levels, blocking passes, weights and threshold for linking people,
from a map of roles (first, last, dob, ...) to each party's own columns.

docs/protocol.md, "Comparison levels" and docs/linking.md: the levels per role follow the
comparisons splink documents for person data (UK Ministry of Justice, splink, "Comparison library":
exact, Jaro-Winkler or Levenshtein bands, dates by edit and by time), replaced by levels the blinded
comparison can decide (:mod:`party_client.matching.levels`).  The weights are log2(m/u) of prior m
and u per role and level (``PRIORS``), so that both parties derive the same model from nothing but
the role names; ``u`` of the exact level may be replaced by a party's own value frequencies when it
writes the model out (:func:`estimated_model`), for both parties to use that file.
"""
from __future__ import annotations

import math

import pandas as pd

from party_client.errors import PartyError
from party_client.matching.blocking import BlockingPass
from party_client.matching.dates import AUTO, check_date_format
from party_client.matching.fellegi_sunter import ELSE_LEVEL, LevelField, LevelModel, u_from_frequencies
from party_client.matching.level_rules import LevelRules
from party_client.matching.levels import Level
from party_client.matching.preset_roles import DATE_ROLES, DEFAULT_THRESHOLD, PRESETS

# Per role: (value type, normalization, [(level, m, u)]); the rest of m and u is the else level.
# m: the share of true matches reaching the level (first agreeing); u: of random pairs.  The priors are
# typical of registries of a country's population (names: Christen, Data Matching, 2012, ch. 5; FEBRL's
# corruption profile); a file written by `estimated_model` replaces u by the data's own frequencies.
# Names are term-frequency adjusted by each side's own frequencies, in classes whose weights follow from
# the class and not from the data: a pair agreeing on a value of frequency p has m/u close to
# m_agree / p (m_agree: the share of true pairs agreeing on the name, 0.80 here; u: p squared summed over
# the class, m: m_agree times p summed), so a class weighs log2(m_agree / p̄) for a representative p̄ of
# its values (Winkler, "Frequency-based matching in Fellegi-Sunter model of record linkage", 1989;
# splink's term-frequency adjustment is the per-value form).  ``share:40`` (a value of at least 4 % of
# each side's own table; p̄ 6 %) weighs 3.7 bits, ``share:5`` (0.5 % to 4 %; p̄ 1.4 %, the geometric
# mean) 5.8 bits, and ``exact`` (rarer) keeps the weight the single ``exact`` level of FEBRL's names had
# (first 8.2 bits, last 8.8).  The m of each class is its a-priori share of the 0.80; u = m p̄ / 0.80.
# Dates of birth: ``partial`` (two of year, month and day the same: one component mistyped, as real
# registries' dates are) with m 0.05 a priori and u 0.004, the chance that two random dates share year
# and month (1 in 1,200 over a century), year and day (1 in 3,000) or month and day (1 in 365).  It
# needs the name classes: with names weighed by a top-50 class alone, chance partial agreements of two
# people with very common names became false links (benchmarks/README.md, "Three generators and FEBRL").
# Surnames: ``compound:2`` (a part of a double or prefixed surname in common: Müller-Lüdenscheidt and
# Müller, van der Berg and Berg) with m 0.02 a priori, taken from ``exact`` (such a pair was an exact
# agreement before one registry shortened the name), and u 0.0004, the share of random pairs reaching it
# on the one weighing set with double surnames (census_people: 0.00038): 5.6 bits, about ``share:5``'s,
# so that a shared common part (García) does not weigh like a rare surname.  The other name
# levels, ``nickname:3`` and ``translit``, are not in the preset: on the sets they were weighed on, the
# first linked a relative at the same address (Rebecca and Becky) and the second changed no pair
# (benchmarks/README.md, "Name levels, and a fourth generator held out").
PRIORS: dict[str, tuple[str, str, list[tuple[str, float, float]]]] = {
    "first": ("text", "name", [("share:40", 0.08, 0.006), ("share:5", 0.25, 0.004375), ("exact", 0.47, 0.001627),
                               ("swapped:last", 0.03, 1e-5), ("nysiis", 0.05, 0.01), ("initial", 0.05, 0.06)]),
    "last": ("text", "name", [("share:40", 0.08, 0.006), ("share:5", 0.25, 0.004375), ("exact", 0.45, 0.001044),
                              ("compound:2", 0.02, 0.0004), ("soundex", 0.10, 0.01)]),
    "dob": ("date", "", [("exact", 0.88, 4e-5), ("day_month_swap", 0.01, 1e-5), ("year", 0.02, 1e-4),
                         ("partial", 0.05, 0.004)]),
    "sex": ("text", "name", [("exact", 0.97, 0.5)]),
    "postcode": ("text", "identifier", [("exact", 0.84, 0.002), ("transposed:4", 0.05, 0.0005)]),
    "id": ("text", "identifier", [("exact", 0.90, 1e-6), ("slip:10", 0.06, 3e-4)]),
    "street_number": ("text", "identifier", [("exact", 0.85, 0.02)]),
    "address": ("text", "name", [("exact", 0.60, 0.0005)]),
    "city": ("text", "name", [("exact", 0.75, 0.002)]),
    "state": ("text", "name", [("exact", 0.94, 0.3)]),
}
# ``person-typo``: the same, with the typo level (edit distance 1 on the first 8 letters) on names,
# dates within 10 days, and typos in ids and postcodes: 5L - 1 comparisons per typo level and pair.
TYPO_LEVELS: dict[str, list[tuple[str, float, float, int]]] = {     # (level, m, u, position in the order)
    "first": [("typo:8", 0.12, 0.002, 3)], "last": [("typo:8", 0.14, 0.001, 2)],
    "dob": [("days:10", 0.02, 8e-4, 3)], "postcode": [("typo:4", 0.09, 0.02, 2)],
    "id": [("typo:10", 0.04, 1e-5, 2)],
    "address": [("typo:10", 0.25, 0.0005, 1)], "city": [("typo:8", 0.15, 0.001, 1)],
}
# Blocking passes, in order of preference, each used when all its roles are mapped (padded bins), at most ``MAX_PASSES`` of them; the last only without an id.  Every pass compares every level
# of every field, and a true pair found by several passes is compared in each (passes are unlinkable for
# the holder), so a pass costs about as much as a full comparison of every record: on FEBRL 1-4 the first
# four that fit nine roles (id, dob, postcode+street_number, address+last initial) miss no more true pairs
# than the five used before (id, dob, first+last, postcode+street_number, NYSIIS(first)+postcode) at 9-13 %
# fewer candidate pairs; a fifth (first+last) finds two more true pairs of FEBRL 3's 3,276 and of FEBRL 4's
# 5,000 for 13-15 % more (benchmarks/README.md, "FEBRL 4 with --preset person").  Without id and street, the
# passes should fail on different errors (Christen, Data Matching, 2012, ch. 4: keys whose errors are
# independent): dob, first+last and NYSIIS(first)+postcode all need the date or the first name, so the fourth is
# Soundex(last)+postcode, the one that needs neither (a first name mistyped or shortened and the date missing),
# before Soundex(last)+year (which needs the date, as the dob pass does; benchmarks/README.md, "Blocking for
# slipped and census").
PASSES = (("id",), ("dob",), ("postcode", "street_number"), ("address", "last:initial"), ("first", "last"),
          ("first:nysiis", "postcode"), ("last:soundex", "postcode"), ("last:soundex", "dob:year"))
MAX_PASSES = 4
# The share of true matches agreeing at no level of a field (a value replaced by another, as FEBRL's
# generator does, or edited beyond every level): at least this, so disagreement costs log2(0.03/u).
ELSE_M = 0.03
# Where a person lives, split over several columns: these agree or disagree together (a household shares
# them all; a person who moved changes them all), which breaks Fellegi and Sunter's conditional
# independence (Winkler, "Using the EM algorithm for weight computation in the Fellegi-Sunter model of
# record linkage", 1988, on dependent fields; splink's FEBRL 4 example keeps one location column for
# the same reason).  Summed, five of them would count one address five times: a relative at the same
# address would outweigh a different first name, date of birth and id, and a move would outweigh an
# agreeing id.  The preset counts the address once: each location role's weights are its log2(m/u)
# divided by the number of location roles mapped (their mean is the address's evidence).
LOCATION_GROUPS = (("postcode", "city", "state"), ("street_number", "address"))


def role_priors(role: str, preset: str = "person") -> tuple[str, str, list[tuple[str, float, float]]]:
    """A role's value type, normalization and (level, m, u) in order, for the preset."""
    if preset not in PRESETS:
        raise PartyError(f"--preset must be one of {', '.join(PRESETS)}")
    value_type, normalize, levels = PRIORS[role]
    levels = list(levels)
    if preset == "person-typo":
        for name, m, u, position in TYPO_LEVELS.get(role, []):
            levels.insert(position, (name, m, u))
        # the typo level takes its matches from the levels after it: keep m's total at most 1 - ELSE_M
        # (scaling the non-exact levels' m), so that else keeps a share and disagreement a finite weight
        excess = sum(m for _, m, _ in levels) - (1 - ELSE_M)
        if excess > 0:
            rest = sum(m for _, m, _ in levels[1:])
            levels = levels[:1] + [(name, m * (1 - excess / rest), u) for name, m, u in levels[1:]]
    return value_type, normalize, levels


def _role_field(role: str, mapping: dict[str, str], date_format: str, preset: str) -> LevelField:
    value_type, normalize, levels = role_priors(role, preset)
    chosen = [Level.parse(name, value_type) for name, _, _ in levels]
    chosen = [level for level in chosen if level.kind != "swapped" or level.parameter in mapping]
    if role == "dob" and any(r in mapping for r in DATE_ROLES):
        return LevelField("dob", "date", tuple(chosen), parts=tuple(mapping[r] for r in DATE_ROLES))
    return LevelField(role, value_type, tuple(chosen), mapping[role], date_format=date_format if role == "dob" else None,
                      normalize=normalize or "name")


def prior_probabilities(fields: list[LevelField], preset: str = "person") -> tuple[dict, dict]:
    """m and u per field and level from the preset's priors (else: the remainder)."""
    m: dict[str, dict[str, float]] = {}
    u: dict[str, dict[str, float]] = {}
    for f in fields:
        table = {name: (pm, pu) for name, pm, pu in role_priors(f.name, preset)[2]}
        m[f.name] = {level.name: table[level.name][0] for level in f.levels}
        u[f.name] = {level.name: table[level.name][1] for level in f.levels}
        m[f.name][ELSE_LEVEL] = max(1e-4, 1 - sum(m[f.name].values()))
        u[f.name][ELSE_LEVEL] = max(1e-4, 1 - sum(u[f.name].values()))
    return m, u


def person_model(mapping: dict[str, str], date_format: str = AUTO, threshold: float = DEFAULT_THRESHOLD,
                 preset: str = "person") -> LevelModel:
    """The person model over the mapped roles (weights from the priors unless m and u are given)."""
    check_date_format(date_format)
    roles = [r for r in ("id", "first", "last", "dob", "sex", "postcode", "street_number", "address", "city", "state")
             if r in mapping or (r == "dob" and "birth_year" in mapping)]
    fields = [_role_field(r, mapping, date_format, preset) for r in roles]
    m, u = prior_probabilities(fields, preset)
    model = LevelModel(fields, person_weights(m, u), threshold, m, u)
    model.check()
    return model


def person_weights(m: dict[str, dict[str, float]], u: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """log2(m/u) per role and level, each location group's roles sharing one piece of evidence
    (``LOCATION_GROUPS``: divided by the number of the group's roles mapped)."""
    share = {role: sum(other in m for other in group) for group in LOCATION_GROUPS for role in group}
    return {role: {name: round(math.log2(m[role][name] / u[role][name]) / share.get(role, 1), 3) for name in m[role]}
            for role in m}


def person_passes(mapping: dict[str, str]) -> list[BlockingPass]:
    """The first ``MAX_PASSES`` blocking passes whose roles are all mapped (sent as padded bins)."""
    mapped = set(mapping) | ({"dob"} if "birth_year" in mapping else set())
    passes = [BlockingPass(tuple(p)) for p in PASSES if all(part.split(":")[0] in mapped for part in p)
              and not (p == PASSES[-1] and "id" in mapped)][:MAX_PASSES]
    if not passes:
        raise PartyError("--preset person: no blocking pass fits the mapped roles (map id, dob, or first and last)")
    return passes


def person_rules(mapping: dict[str, str], date_format: str = AUTO, threshold: float = DEFAULT_THRESHOLD,
                 preset: str = "person", precision: float | None = None) -> LevelRules:
    """The preset as matching keys: model and blocking passes; with ``precision`` the threshold is derived
    from that target once the holder's table size is known (:mod:`party_client.matching.precision`)."""
    return LevelRules(person_model(mapping, date_format, threshold, preset), person_passes(mapping),
                      source=f"preset {preset}", precision=precision)


def estimated_model(model: LevelModel, frame: pd.DataFrame) -> LevelModel:
    """The model with u replaced by the frame's own frequencies (m kept): to write out for both parties."""
    u = u_from_frequencies(model, frame)
    estimated = LevelModel(model.fields, person_weights(model.m, u), model.threshold, model.m, u)
    estimated.check()
    return estimated


def own_blocked_pairs(rules: LevelRules, frame: pd.DataFrame, max_pairs: int, seed: int = 0) -> tuple:
    """Pairs (i < j) of one table's records sharing a clear block key in some pass, at most ``max_pairs``
    (a seeded sample): the training pairs of EM."""
    import numpy as np
    from party_client.matching.level_rules import block_codes
    codes = rules.codes(frame)
    found = []
    for blocking in rules.blocking:
        keys = block_codes(rules.model, codes, blocking)
        table = pd.DataFrame({"key": keys, "i": range(len(keys))})
        table = table[table["key"] != ""]
        pairs = table.merge(table, on="key")
        found.append(pairs[pairs["i_x"] < pairs["i_y"]][["i_x", "i_y"]])
    pairs = pd.concat(found).drop_duplicates()
    if len(pairs) > max_pairs:
        pairs = pairs.sample(max_pairs, random_state=seed)
    return pairs["i_x"].to_numpy(dtype=np.int64), pairs["i_y"].to_numpy(dtype=np.int64)


def estimate_person(rules: LevelRules, frame: pd.DataFrame, max_pairs: int = 1_000_000, seed: int = 0):
    """The preset's m by EM over the level patterns of the table's own blocked pairs (it must hold
    duplicates), u from its value frequencies on random pairs; refused unless EM converged.  Returns
    (rules with the estimated weights, EM fit, training pairs)."""
    from party_client.matching.fellegi_sunter import expectation_maximisation, model_from_fit, pair_levels
    model = rules.model
    left, right = own_blocked_pairs(rules, frame, max_pairs, seed)
    if not len(left):
        raise PartyError("no two records of the table share a blocking key: EM has nothing to learn from")
    groups = model.groups(model.codes(frame))
    fit = expectation_maximisation(model, pair_levels(model, groups, groups, left, right))
    u = u_from_frequencies(model, frame, seed=seed)
    fit = type(fit)(fit.m, u, fit.match_proportion, fit.iterations, fit.converged, fit.change)
    estimated = model_from_fit(model.fields, fit, model.threshold)
    return LevelRules(estimated, rules.blocking, source=rules.source, precision=rules.precision), fit, len(left)
