"""A lookup's buckets are sized against the holder's own table as well as the population
(docs/protocol.md, "Lookup"): the holder knows the session secret, so it buckets every one of its
rows, and a queried bucket must hide the queried person among about 1/max-risk of the holder's
rows, however large the population.

Real processes: a plaintext loopback ``keyholder serve`` of the test's own (its audit log is read);
the holder serves from a thread of this process, its lookup engine recording the rows it compares.
"""
from __future__ import annotations

import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest

from deid_core.risk.buckets import hashed_bucket_risk, max_buckets
from linkhelpers import keyholder_cmd, make_party, refusal_line, run_party, stub_for
from party_client import Party
from party_client.crypto.cuckoo import padded_floor, padded_size
from party_client.errors import ParameterError
from party_client.lookups import BucketSizing, RepeatedLookup
from party_client.protocol.engines.lookup import LookupEngine
from proto import linkage_pb2 as pb

HOLDER_ROWS = 20_000
POPULATION = 10_000_000
MAX_RISK = 0.05


def test_the_bucket_count_meets_the_threshold_against_the_tighter_bound():
    """Unit: the holder announces its rows rounded down to the public step, and the plan takes the
    tighter of the two bounds; an asked count above either is refused naming the parameter (the CLI
    names the flag)."""
    assert [padded_floor(n) for n in (0, 15, 16, 22, 23, 20_000, 23_171)] == [1, 1, 16, 16, 23, 16_384, 23_171]
    assert all(padded_floor(n) <= n < padded_size(padded_floor(n) + 1) for n in range(16, 5000))   # the largest step
    holder = BucketSizing(POPULATION, MAX_RISK).plan(16_384)
    assert holder.buckets == max_buckets(16_384, MAX_RISK) == 819
    assert holder.holder_risk <= MAX_RISK < hashed_bucket_risk(16_384, 820)
    assert holder.decided_by == "holder's table of at least 16384 people" and holder.risk < 0.0001
    small = BucketSizing(5_000, MAX_RISK).plan(16_384)
    assert small.decided_by == "population" and small.buckets == max_buckets(5_000, MAX_RISK) and small.crowd == 5_000
    assert BucketSizing(POPULATION, MAX_RISK, buckets=100).plan(16_384).decided_by == "asked"
    with pytest.raises(ParameterError) as too_fine:
        BucketSizing(POPULATION, MAX_RISK, buckets=5_000).plan(16_384)
    assert str(too_fine.value).startswith("buckets 5000 over the holder's table of at least 16384 people carries")
    assert too_fine.value.flagged().startswith("--buckets 5000 over") and "use at most 819" in str(too_fine.value)
    with pytest.raises(ParameterError, match="^max_risk must lie in"):
        BucketSizing(100, 1.5)
    with pytest.raises(ParameterError, match="^population must be"):
        BucketSizing(0, MAX_RISK)
    with pytest.raises(ParameterError, match=r"^population must be a number of people from 1 to 10,000,000,000 "
                                             r"\(more than live on Earth\)") as typo:
        BucketSizing(100_000_000_000_000, MAX_RISK)       # a typo: its buckets would look safe and are not
    assert typo.value.flagged().startswith("--population must be")


def _audit(server) -> list[list[str]]:
    result = subprocess.run(keyholder_cmd("audit", "--data-dir", str(server.data_dir)), capture_output=True,
                            text=True, check=True)
    return [line.split("\t") for line in result.stdout.splitlines()[1:]]


class Serving:
    """A holder serving ``frame`` from a thread until stopped."""

    def __init__(self, folder, frame: pd.DataFrame) -> None:
        self.holder = Party(folder, progress=False).prepare_holder(frame, "hcn", [])
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.holder.serve, kwargs={"once": False, "poll_seconds": 0.5,
                                                                         "stop": self.stop.is_set}, daemon=True)

    def __enter__(self) -> "Serving":
        self.holder.pending()                  # its first poll: the holder has announced its table
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        self.holder.connection.close()


def _recording(monkeypatch) -> list[np.ndarray]:
    """The holder rows each queried entry made the holder compare, as its lookup engine plans them."""
    compared: list[np.ndarray] = []
    plan = LookupEngine.plan

    def recorded(self, context, query):
        planned = plan(self, context, query)
        if not isinstance(planned, str):
            rows = np.array([row for row, _ in planned.units], dtype=np.int64)
            entries = np.array([pairs[0][0] for _, pairs in planned.units], dtype=np.int64)
            compared.extend(rows[entries == entry] for entry in range(query.header.entries))
        return planned
    monkeypatch.setattr(LookupEngine, "plan", recorded)
    return compared


def test_the_holder_cannot_tell_which_of_its_rows_a_lookup_asks_about(fresh_keyholder, tmp_path, monkeypatch):
    """A 20,000-row holder, a population of 10,000,000, max risk 0.05: 32 of its members looked up
    (4 lookups of 8). The holder's guess "the rows I compared are the queried people" must be no
    better than the prior (queried members / its rows) by more than 0.05: each queried bucket holds
    about 1/0.05 of its rows.  Sized from the population alone, a bucket held the queried row only."""
    server = fresh_keyholder()
    (qdir, _), (hdir, hname) = make_party(server, tmp_path, cli=False), make_party(server, tmp_path, cli=False)
    rng = np.random.default_rng(21)
    ids = np.char.mod("%010d", rng.choice(10 ** 10, HOLDER_ROWS, replace=False)).tolist()
    compared = _recording(monkeypatch)
    queried = rng.choice(HOLDER_ROWS, 32, replace=False)
    querier = Party(qdir, progress=False)
    with Serving(hdir, pd.DataFrame({"hcn": ids})):
        reports = [querier.lookup(hname, pd.DataFrame({"hcn": [ids[row] for row in rows]}), "hcn", POPULATION,
                                  max_risk=MAX_RISK, scheme="ristretto", timeout=120)
                   for rows in np.split(queried, 4)]
    assert all(result.frame["matched"].all() for result in reports)
    assert len(compared) == len(queried)
    sizes = np.array([len(rows) for rows in compared])
    hits = sum(int(row in rows) for row, rows in zip(queried, compared))
    precision, prior = hits / sizes.sum(), len(queried) / HOLDER_ROWS
    print(f"rows compared per queried record: mean {sizes.mean():.1f}, min {sizes.min()}, max {sizes.max()}; "
          f"precision of the holder's guess {precision:.4f} against the prior {prior:.4f}; "
          f"buckets {reports[0].report['buckets']}")
    assert hits == len(queried)                                   # each bucket holds its queried member
    assert sizes.mean() >= 15 and sizes.min() >= 5, sizes
    assert precision - prior <= MAX_RISK, (precision, prior)
    assert np.mean(1.0 / sizes) <= MAX_RISK                       # per queried record, on average
    # K counted the same comparisons (one per compared row: one identifier)
    finished = [int(row[5]) for row in _audit(server) if row[2] == "finish_round"]
    assert sum(finished) == sizes.sum()
    report = reports[-1].report
    assert report["holder_people"] == 16_384 and report["decided_by"] == "holder's table of at least 16384 people"
    assert report["holder_risk"] <= MAX_RISK and report["risk"] < report["holder_risk"]


def _ids(count: int) -> list[str]:
    return [f"{700_000_000 + i:09d}" for i in range(count)]


def test_lookup_sessions_follow_the_holders_announced_table(fresh_keyholder, tmp_path):
    """A lookup waits for a holder that has never served to announce its table; a lookup session is
    reused while the holder's table stays on its step, and replaced (the old one closed at K) once the
    holder announces a smaller table, for which its buckets would be too fine."""
    server = fresh_keyholder()
    (qdir, _), (hdir, hname) = make_party(server, tmp_path, cli=False), make_party(server, tmp_path, cli=False)
    querier = Party(qdir, progress=False)
    asked = pd.DataFrame({"hcn": _ids(2)})

    def lookup():
        return querier.lookup(hname, asked, "hcn", 1_000_000, scheme="ristretto", timeout=60)
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(lookup)
        time.sleep(1.5)
        assert not waiting.done()                                    # no table announced yet
        with Serving(hdir, pd.DataFrame({"hcn": _ids(400)})):        # 400 rows: announced as 363
            first, again = waiting.result(timeout=60), lookup()
    assert first.frame["matched"].all() and (first.report["holder_people"], first.report["buckets"]) == (363, 18)
    assert again.report["session_id"] == first.report["session_id"]
    with Serving(hdir, pd.DataFrame({"hcn": _ids(100)})):            # the holder's table shrank: 91
        with pytest.raises(RepeatedLookup) as repeated:             # the same two people, 4 buckets now
            lookup()
        asked = pd.DataFrame({"hcn": _ids(4)[2:]})
        smaller = lookup()
    # under one secret, a bucket of 4 and one of 18 meet in at most 1/18 of the hash range, which holds
    # about 5 of the 91 people: refused before the bucket went out (no round, no session opened for it)
    assert str(repeated.value).startswith("2 identifier(s) to look up (record 1, 2 of the input) were looked up")
    assert "--max-risk 0.05); nothing was sent" in repeated.value.flagged()
    assert smaller.frame["matched"].all() and (smaller.report["holder_people"], smaller.report["buckets"]) == (91, 4)
    assert smaller.report["session_id"] != first.report["session_id"]
    assert smaller.report["holder_risk"] <= 0.05 and smaller.report["decided_by"].startswith("holder's table")
    actions = [row[2] for row in _audit(server)]
    assert actions.count("open_session") == 2 and actions.count("close_session") == 1
    assert actions.count("finish_round") == 3


def test_the_lookup_cli_refuses_buckets_too_fine_for_the_holder_and_a_holder_that_never_served(
        fresh_keyholder, tmp_path):
    server = fresh_keyholder()
    (qdir, _), (hdir, hname) = make_party(server, tmp_path, cli=False), make_party(server, tmp_path, cli=False)
    pd.DataFrame({"hcn": _ids(1)}).to_csv(tmp_path / "q.csv", index=False)

    def lookup(*flags: str):
        return run_party("lookup", "--dir", str(qdir), *server.flags(), "--holder", hname, "--input",
                         str(tmp_path / "q.csv"), "--id-column", "hcn", "--out", str(tmp_path / "out.csv"),
                         "--scheme", "ristretto", "--population", "10000000", *flags, check=False)
    never = lookup("--timeout", "3")
    line = refusal_line(never.stderr)
    assert never.returncode == 2 and "Traceback" not in never.stderr, never.stderr
    assert f"holder '{hname}' has not announced its table size within 3 s" in line and "party hold" in line
    assert "open_session" not in [row[2] for row in _audit(server)]      # no key made for nothing

    stub, metadata = stub_for(server, hdir)
    stub.ListWork(pb.ListWorkRequest(wait_seconds=0, table_rows=16_384), metadata=metadata, timeout=10)
    fine = lookup("--buckets", "5000")                  # within the population's bound, not the holder's
    lines = fine.stderr.strip().splitlines()
    assert fine.returncode == 2 and len(lines) == 1, fine.stderr
    assert "--buckets 5000 over the holder's table of at least 16384 people" in lines[0]
    assert "use at most 819" in lines[0]
    assert not (tmp_path / "out.csv").exists()


def _repeated_people(shape: str, rng: np.random.Generator) -> list[str]:
    """2,000 holder rows of people who repeat as an insurer's or a hospital's do: 100 members with 20
    claims each, 631 patients' visits, or identifiers drawn by Zipf's law (a few people on most rows)."""
    if shape == "claims":
        people = np.repeat(np.arange(100), 20)
    elif shape == "visits":
        people = np.concatenate([np.arange(631), rng.choice(631, 2_000 - 631)])
    else:
        people = np.minimum(rng.zipf(1.3, 2_000), 5_000)
    return np.char.mod("%010d", 3_000_000_000 + rng.permutation(people)).tolist()


def _guess(ids: list[str], compared: list[np.ndarray], queried: list[str]) -> tuple[float, float, np.ndarray]:
    """The holder's best guess from its view of each lookup: one of the people of the rows it compared,
    at random; (its precision, the prior: one of all its people, the distinct people per queried entry)."""
    people = np.array([len({ids[row] for row in rows}) for rows in compared])
    assert all(person in {ids[row] for row in rows} for person, rows in zip(queried, compared))
    return float(np.mean(1.0 / people)), 1.0 / len(set(ids)), people


@pytest.mark.parametrize("shape", ["claims", "visits", "zipf"])
def test_a_lookup_hides_the_person_asked_about_among_people_not_rows(fresh_keyholder, tmp_path, monkeypatch,
                                                                     shape):
    """A holder whose table repeats a person: its buckets must hold about 1/max-risk of its *people*.
    Sized by rows, 2,000 claims of 100 members gave buckets of 2.2 people on average and 1 at least, and the
    holder's guess of whom it was asked about had a precision of 0.59 against a prior of 0.01."""
    server = fresh_keyholder()
    (qdir, _), (hdir, hname) = make_party(server, tmp_path, cli=False), make_party(server, tmp_path, cli=False)
    rng = np.random.default_rng(5)
    ids = _repeated_people(shape, rng)
    compared = _recording(monkeypatch)
    queried = rng.choice(sorted(set(ids)), 16, replace=False).tolist()
    querier = Party(qdir, progress=False)
    with Serving(hdir, pd.DataFrame({"hcn": ids})):
        reports = [querier.lookup(hname, pd.DataFrame({"hcn": part}), "hcn", POPULATION, max_risk=MAX_RISK,
                                  scheme="ristretto", timeout=120).report for part in (queried[:8], queried[8:])]
    precision, prior, people = _guess(ids, compared, queried)
    print(f"{shape}: {len(set(ids))} people on 2,000 rows; {reports[0]['buckets']} buckets; people per queried "
          f"bucket mean {people.mean():.1f}, min {people.min()}; precision {precision:.4f} against {prior:.4f}")
    assert precision - prior <= MAX_RISK and people.min() >= 8, (precision, prior, people)
    assert reports[0]["holder_people"] == padded_floor(len(set(ids)))


def test_a_person_looked_up_in_three_sessions_meets_the_same_bucket(fresh_keyholder, tmp_path, monkeypatch):
    """The same eight people looked up in three sessions (each closed after its lookup, so K opens a new
    one): the holder compares the same rows each time, and the intersection of what it compared, its
    best attack across sessions, is no narrower than one session's.  With a fresh secret per session the
    intersection after two sessions was the person alone."""
    server = fresh_keyholder()
    (qdir, _), (hdir, hname) = make_party(server, tmp_path, cli=False), make_party(server, tmp_path, cli=False)
    rng = np.random.default_rng(9)
    ids = _repeated_people("visits", rng)
    compared = _recording(monkeypatch)
    queried = rng.choice(sorted(set(ids)), 8, replace=False).tolist()
    querier = Party(qdir, progress=False)
    sessions = []
    with Serving(hdir, pd.DataFrame({"hcn": ids})):
        for _ in range(3):
            report = querier.lookup(hname, pd.DataFrame({"hcn": queried}), "hcn", POPULATION, max_risk=MAX_RISK,
                                    scheme="ristretto", timeout=120).report
            sessions.append(report["session_id"])
            querier.close_sessions([report["session_id"]])
    assert len(set(sessions)) == 3 and len(compared) == 3 * len(queried)
    per_session = [compared[i * len(queried):(i + 1) * len(queried)] for i in range(3)]
    intersected = [np.intersect1d(np.intersect1d(a, b), c) for a, b, c in zip(*per_session)]
    assert all(np.array_equal(np.sort(a), np.sort(i)) for a, i in zip(per_session[0], intersected))
    precision, prior, people = _guess(ids, intersected, queried)
    print(f"three sessions: people per intersected bucket mean {people.mean():.1f}, min {people.min()}; "
          f"precision {precision:.4f} against {prior:.4f}")
    assert precision - prior <= MAX_RISK


def test_the_ledger_refuses_a_repeated_lookup_whose_buckets_would_meet_too_narrowly(tmp_path):
    """Unit, on the ledger of a real party folder: a person looked up under 18 buckets and again under 4 is
    known within at most 1/18 of the hash range; among 91 people that passes 0.05, so the second lookup is
    refused before it is recorded, naming the record and the flag; the same count again, a new person, and
    one bucket (the whole table) are admitted.  A lookup an earlier version recorded under a session secret
    of its own counts as an independent partition."""
    from party_client.identity import PartyDir
    from party_client.lookups import LookupState
    from party_client.matching.keys import exact_querier_keys
    state = LookupState(PartyDir.create(tmp_path / "q", "querier"))
    keys = exact_querier_keys(pd.Series(["0123456789", "9876543210"]), "identifier")
    wide = BucketSizing(POPULATION, MAX_RISK).plan(363)
    narrow = BucketSizing(POPULATION, MAX_RISK).plan(91)
    assert (wide.buckets, narrow.buckets) == (18, 4)
    first = state.admit(keys, "registry", wide)
    assert np.all(first <= MAX_RISK)
    assert np.all(state.admit(keys, "registry", wide) == first)           # the same buckets: nothing new
    with pytest.raises(RepeatedLookup) as refused:
        state.admit(keys, "registry", narrow)
    assert "(record 1, 2 of the input)" in str(refused.value) and "--max-risk" in refused.value.flagged()
    assert np.all(state.admit(keys, "another registry", narrow) <= MAX_RISK)    # another holder's partition
    assert state.admit(exact_querier_keys(pd.Series(["5555555555"]), "identifier"), "registry", narrow)[0] <= MAX_RISK
    whole = BucketSizing(POPULATION, MAX_RISK).plan(1)
    assert whole.buckets == 1 and len(state.admit(keys, "registry", whole)) == 2
    old = exact_querier_keys(pd.Series(["7777777777"]), "identifier")
    with state._db as ledger:             # an earlier version's lookup, under its session's own secret
        ledger.execute("INSERT INTO looked_up VALUES (?, 'an old session', 18, 0)", (state.tag("7777777777"),))
    with pytest.raises(RepeatedLookup, match=r"risk up to 0\.[5-7]"):       # 1/18 x 1/18 of 363 people
        state.admit(old, "registry", wide)
    state.close()


def test_a_lookup_is_in_the_ledger_before_its_bucket_goes_out(fresh_keyholder, tmp_path, monkeypatch):
    """The counts are recorded before the round is sent: a lookup that breaks off after its query left
    (here the round itself fails) still counts when the same person is looked up again."""
    from party_client.identity import PartyDir
    from party_client.lookups import LookupState
    from party_client.protocol.querier import Querier
    server = fresh_keyholder()
    (qdir, _), (hdir, hname) = make_party(server, tmp_path, cli=False), make_party(server, tmp_path, cli=False)
    stub, metadata = stub_for(server, hdir)
    stub.ListWork(pb.ListWorkRequest(wait_seconds=0, table_rows=16_384), metadata=metadata, timeout=10)

    def broken(*args, **kwargs):
        raise RuntimeError("the round broke off")
    monkeypatch.setattr(Querier, "run", broken)
    with pytest.raises(RuntimeError):
        Party(qdir, progress=False).lookup(hname, pd.DataFrame({"hcn": _ids(1)}), "hcn", POPULATION,
                                           scheme="ristretto", timeout=30)
    state = LookupState(PartyDir.load(qdir))
    rows = state._db.execute("SELECT holder, buckets FROM looked_up_at WHERE tag = ?",
                             (state.tag(_ids(1)[0]),)).fetchall()
    state.close()
    assert rows == [(hname, 819)]
