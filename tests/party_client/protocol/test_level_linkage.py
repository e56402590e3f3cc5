"""Comparison levels under encryption: the blocked engine with K's weighted rule finds exactly the pairs
the plaintext reference of the same model accepts, under either scheme, on random tables."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from linkhelpers import SCHEMES, key_bits_for, make_party, serve_and_join
from party_client.matching.blocking import BlockingPass
from party_client.matching.fellegi_sunter import LevelField, LevelModel
from party_client.matching.level_rules import LevelRules
from party_client.matching.levels import Level

FIRST = ["anna", "anne", "hanna", "jack", "jak", "steinert", "maria", "mario", "robert", "robeft"]
LAST = ["steinert", "jack", "smith", "smyth", "weber", "webber", "nguyen", "li"]


def random_tables(seed: int, n: int = 14) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A querier table and a holder holding corrupted copies of most of its records (a typo, swapped names,
    a transposed or mistyped postcode, a near or swapped date, a gap) plus random ones: pairs reach every level."""
    rng = np.random.default_rng(seed)

    def random_rows(prefix: str, count: int) -> pd.DataFrame:
        return pd.DataFrame({
            "rec_id": [f"{prefix}{i}" for i in range(count)],
            "first": rng.choice(FIRST, count), "last": rng.choice(LAST, count),
            "dob": [f"{y}{m:02d}{d:02d}" for y, m, d in zip(rng.integers(1950, 1953, count),
                                                            rng.integers(1, 13, count), rng.integers(1, 13, count))],
            "postcode": rng.choice(["2600", "2060", "2611", "3000"], count)})
    querier = random_rows("q", n)
    copies = querier.sample(frac=0.7, random_state=seed).reset_index(drop=True)
    for i in range(len(copies)):
        row = copies.loc[i]
        change = rng.integers(0, 7)
        if change == 0:
            copies.loc[i, "first"] = row["first"][:1] + "x" + row["first"][1:]
        elif change == 1:
            copies.loc[i, ["first", "last"]] = [row["last"], row["first"]]
        elif change == 2 and i % 2:
            copies.loc[i, "postcode"] = row["postcode"][1] + row["postcode"][0] + row["postcode"][2:]
        elif change == 2:
            digit = "9" if row["postcode"][2] != "9" else "8"          # one digit replaced
            copies.loc[i, "postcode"] = row["postcode"][:2] + digit + row["postcode"][3:]
        elif change == 3:
            copies.loc[i, "dob"] = str(int(row["dob"][:4]) + 1) + row["dob"][4:]
        elif change == 4:
            copies.loc[i, "dob"] = row["dob"][:4] + row["dob"][6:] + row["dob"][4:6]
        elif change == 5:
            copies.loc[i, "last"] = ""
    holder = pd.concat([copies, random_rows("x", 4)], ignore_index=True).sample(frac=1, random_state=seed)
    holder["rec_id"] = [f"h{i}" for i in range(len(holder))]
    querier.loc[rng.random(n) < 0.1, "dob"] = ""
    return querier, holder.reset_index(drop=True)


def level_rules() -> LevelRules:
    fields = [LevelField("first", "text", (Level("share", 100), Level("exact"), Level("swapped", "last"),
                                           Level("typo", 4), Level("soundex")), "first"),
              LevelField("last", "text", (Level("frequent", 3), Level("exact"), Level("typo", 4), Level("initial")),
                         "last"),
              LevelField("dob", "date", (Level("exact"), Level("day_month_swap"), Level("year"), Level("partial"),
                                         Level("days", 2)),
                         "dob", date_format="%Y%m%d"),
              LevelField("postcode", "text", (Level("exact"), Level("transposed", 4), Level("slip", 4)), "postcode",
                         normalize="identifier")]
    weights = {"first": {"share:100": 3.5, "exact": 5.0, "swapped:last": 4.5, "typo:4": 3.0, "soundex": 1.5,
                         "else": -3.0},
               "last": {"frequent:3": 4.0, "exact": 6.0, "typo:4": 3.5, "initial": 0.5, "else": -4.0},
               "dob": {"exact": 7.0, "day_month_swap": 3.0, "year": 2.5, "partial": 1.5, "days:2": 1.0, "else": -5.0},
               "postcode": {"exact": 3.0, "transposed:4": 1.5, "slip:4": 1.0, "else": -2.0}}
    model = LevelModel(fields, weights, threshold=6.0)
    return LevelRules(model, [BlockingPass(("dob:month",)), BlockingPass(("last:initial",))])


@pytest.mark.parametrize("scheme", SCHEMES)
def test_secure_levels_equal_the_plaintext_model_on_random_tables(keyholder, tmp_path, scheme):
    # seeds whose pairs reach every level, slip, frequent, share and partial included
    querier, holder = random_tables(seed={"ristretto": 20, "paillier": 15}[scheme])
    rules = level_rules()
    (qdir, _), (hdir, hname) = make_party(keyholder, tmp_path), make_party(keyholder, tmp_path)
    served: list[dict] = []
    result = serve_and_join(qdir, hdir, hname, querier, holder, served=served,
                            holder=dict(rules=rules, release_columns=["rec_id"]),
                            join=dict(rules=rules, key_bits=key_bits_for(scheme), scheme=scheme))
    # the plaintext model over the same pairs: sharing a pass's key, without the records that pass's bins left out
    left_out = [p["left_out_records"] for p in result.report["passes"]]
    expected = rules.plaintext_matches(querier, holder, rules.candidate_pairs(querier, holder, left_out=left_out))
    expected_ids = set(zip(querier["rec_id"][expected.entry], holder["rec_id"][expected.row]))
    assert len(expected_ids) >= 6
    matched = result.frame[result.frame["matched"]]
    assert set(zip(matched["rec_id"], matched["rec_id_holder"])) == expected_ids
    assert result.report["passes"][0]["layout"] == "levels"
    # the levels K reported give each pair the plaintext model's weight
    weights = dict(zip(zip(querier["rec_id"][expected.entry], holder["rec_id"][expected.row]), expected.weight))
    assert all(abs(w - weights[q, h]) < 1e-9 for q, h, w in zip(matched["rec_id"], matched["rec_id_holder"],
                                                                matched["match_weight"]))


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_key_holder_stores_and_logs_no_value_key_or_encoding_of_any_level(fresh_keyholder, tmp_path, monkeypatch,
                                                                               scheme):
    """K's store, spool and log hold no value, no level key (deletion variants, swapped pairs, shifted dates)
    and no encoding of one; what K kept per matched pair is its deciding levels, as docs/protocol.md says."""
    import party_client.matching.level_rules as level_rules_module
    from party_client.crypto.encoding import encode_to
    from linkhelpers import all_bytes, encoding_length, needles
    secrets: list[bytes] = []
    plan = level_rules_module.plan_passes

    def capture(*args, **kwargs):
        secret, passes = plan(*args, **kwargs)
        secrets.append(secret)
        return secret, passes
    monkeypatch.setattr(level_rules_module, "plan_passes", capture)
    server = fresh_keyholder()
    querier, holder = random_tables(seed=21)
    rules = level_rules()
    (qdir, _), (hdir, hname) = make_party(server, tmp_path), make_party(server, tmp_path)
    result = serve_and_join(qdir, hdir, hname, querier, holder, holder=dict(rules=rules, release_columns=["rec_id"]),
                            join=dict(rules=rules, key_bits=key_bits_for(scheme), scheme=scheme))
    assert result.frame["matched"].any()
    server.stop()
    stored, logs = all_bytes(server.data_dir), server.log_path.read_bytes()
    keys: set[tuple[str, str]] = set()
    for frame in (querier, holder):
        groups = rules.model.groups(rules.codes(frame))
        for f in rules.model.fields:
            for outcome, group in zip(f.outcomes, groups[f.name]):
                label = f"{f.name}.{outcome}"
                for slot in group.querier:
                    keys |= {(label, v) for v in slot if v}
                for _, column in group.holder:
                    keys |= {(label, v if isinstance(v, str) else v[1]) for v in column if v}
    values = {str(v) for column in ("first", "last", "dob", "postcode") for v in pd.concat([querier, holder])[column] if v}
    for value in {v for v in values | {key for _, key in keys} if len(v) >= 5}:      # shorter ones occur by chance
        for needle in needles(value):
            assert needle not in stored and needle not in logs, f"{value!r} found at the key holder"
    length = encoding_length(scheme)
    for label, key in keys:
        x = encode_to(secrets[0], f"pair/{label}", key, length)
        assert x not in stored and x.hex().encode() not in stored and x not in logs
