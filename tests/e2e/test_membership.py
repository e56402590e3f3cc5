"""What the holder learns about who is in the querier's table: the attacks of docs/protocol.md, "Who
learns what", run against the holder's actual view.

The holder knows the session secret, so it can compute any keyed block or bucket of each of its own rows;
a view that depends on which blocks the querier's records fall in names those rows as members.  Each test
instruments the real holder (the engine's ``plan``, which receives everything the holder learns of a
blocked query: the header, any clear blocks, and what it then compares) during real joins through a real
key holder, and runs the attack on what was recorded."""
from __future__ import annotations

import pandas as pd
import pytest

from linkhelpers import key_bits_for, make_party, serve_and_join
from party_client.demo import synthetic_people
from party_client.matching.blocking import BlockingPass
from party_client.matching.level_rules import LevelRules
from party_client.matching.presets import person_rules
from party_client.protocol.engines import blocked as blocked_engine

MAPPING = {"first": "given", "last": "surname", "dob": "dob", "id": "hcn"}


def holder_and_queriers(seed: int = 11, rows: int = 100, queried: int = 60):
    """A holder's table, a querier holding ``queried`` of its people (members), and a querier of as many
    people it does not hold."""
    people = synthetic_people(rows + queried, seed=seed).reset_index(drop=True)
    holder = people.iloc[:rows].reset_index(drop=True)
    members = holder.sample(queried, random_state=seed).reset_index(drop=True)
    outsiders = people.iloc[rows:].reset_index(drop=True)
    return holder, members, outsiders


class HolderView:
    """Records, for each round, what the holder's engine received and what it compared."""

    def __init__(self, monkeypatch) -> None:
        self.rounds: list[dict] = []
        plan = blocked_engine.BlockedEngine.plan

        def recording(engine, context, query):
            planned = plan(engine, context, query)
            self.rounds.append({
                "passes": [(p.buckets, p.records) for p in query.header.passes],
                "ciphertexts": query.ciphertexts, "blocks": list(query.blocks),
                # per compared pair: our row and the query positions compared (sorted: the order is ours)
                "pairs": sorted((row, tuple(sorted(p for p, _ in comparisons))) for row, comparisons in planned.units),
            })
            return planned
        monkeypatch.setattr(blocked_engine.BlockedEngine, "plan", recording)


def join(keyholder, tmp_path, querier: pd.DataFrame, holder: pd.DataFrame, rules, scheme: str = "ristretto"):
    (qdir, _), (hdir, hname) = make_party(keyholder, tmp_path), make_party(keyholder, tmp_path)
    return serve_and_join(qdir, hdir, hname, querier, holder, holder=dict(rules=rules, release_columns=["hcn"]),
                          join=dict(rules=rules, key_bits=key_bits_for(scheme), scheme=scheme))


def membership_precision(view: dict, holder: pd.DataFrame, members: pd.DataFrame) -> tuple[float, float]:
    """The holder's best attack on its view: rows it compared (or whose block a revealed block names) as
    its guess of the querier's members; (precision of that guess, the prior: members / holder rows)."""
    compared = {row for row, _ in view["pairs"]}
    member_rows = set(holder.index[holder["hcn"].isin(members["hcn"])])
    guessed = compared if not view["blocks"] else set()      # a revealed block would narrow the guess
    precision = len(guessed & member_rows) / max(1, len(guessed))
    return precision, len(member_rows) / len(holder)


def test_the_holders_view_of_a_blocked_join_is_the_same_whoever_the_querier_holds(keyholder, tmp_path,
                                                                                 monkeypatch):
    """Under one session secret and the same public sizes, a querier holding 60 of the holder's people
    and a querier holding 60 others give the holder the same view, byte for byte where it is not
    ciphertext: no block, the same pairs compared at the same query positions.  (The querier's bins hide
    which hold its records; docs/protocol.md, "Blocking passes as padded bins".)"""
    import party_client.matching.blocking as blocking
    holder, members, outsiders = holder_and_queriers()
    preset = person_rules(MAPPING, date_format="%Y-%m-%d")
    rules = LevelRules(preset.model, [BlockingPass(p.fields, 2) for p in preset.blocking], source="test")
    fixed = bytes(range(32))
    monkeypatch.setattr(blocking, "new_session_secret", lambda: fixed)
    view = HolderView(monkeypatch)
    results = [join(keyholder, tmp_path, querier, holder, rules) for querier in (members, outsiders)]
    assert results[0].frame["matched"].sum() == len(members) and not results[1].frame["matched"].any()
    first, second = view.rounds
    assert first["blocks"] == second["blocks"] == []
    assert first["passes"] == second["passes"] and first["ciphertexts"] == second["ciphertexts"]
    assert first["pairs"] == second["pairs"]
    precision, prior = membership_precision(first, holder, members)
    assert abs(precision - prior) < 1e-9


@pytest.mark.parametrize("scheme", ["ristretto"])
def test_the_holders_membership_guess_from_a_preset_join_is_no_better_than_the_prior(keyholder, tmp_path,
                                                                                    monkeypatch, scheme):
    """With ``--preset person`` as shipped (capacities chosen from the querier's data), the holder's
    guess of the querier's members from what it compared is exactly the prior: it compares every row
    that has a pass's key with the same number of entries, and sees no block."""
    holder, members, _ = holder_and_queriers(seed=5)
    rules = person_rules(MAPPING, date_format="%Y-%m-%d")
    view = HolderView(monkeypatch)
    result = join(keyholder, tmp_path, members, holder, rules, scheme)
    assert result.frame["matched"].sum() >= 0.95 * len(members)
    (seen,) = view.rounds
    assert seen["blocks"] == []
    rows_per_pass = {}
    for row, _ in seen["pairs"]:
        rows_per_pass[row] = rows_per_pass.get(row, 0) + 1
    assert set(rows_per_pass) == set(range(len(holder)))                 # every row compared...
    capacities = [records // bins for bins, records in seen["passes"]]
    assert set(rows_per_pass.values()) == {2 * sum(capacities)}          # ...against as many entries
    precision, prior = membership_precision(seen, holder, members)
    assert abs(precision - prior) < 0.05
