"""``--preset person``: each party maps its own columns (one a date of birth in one column, the other in
year/month/day columns), the secure join finds what the plaintext model finds, the preset is written
out as a rules file that links the same, and ``--max-comparisons`` refuses before any session.  The
joins run under ``ristretto``: the level arithmetic is the same under every scheme, which
tests/party_client/protocol/test_level_linkage.py checks for each."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pandas as pd

from linkhelpers import make_party, relayed, run_party
from party_client.matching.preset_roles import parse_map
from party_client.matching.presets import person_rules

QUERIER_MAP = "first=given_name,last=surname,dob=date_of_birth,postcode=postcode,id=soc_sec_id"
HOLDER_MAP = "first=vorname,last=name,birth_year=y,birth_month=m,birth_day=d,postcode=plz,id=ssn"


def tables(tmp_path):
    from febrl import load_febrl4
    a, b = load_febrl4()
    querier = a.reset_index().head(60)
    partners = {r.replace("org", "dup-0") for r in querier["rec_id"]}
    b = b.reset_index()
    holder = pd.concat([b[b["rec_id"].isin(partners)], b[~b["rec_id"].isin(partners)].head(20)])
    dob = holder["date_of_birth"].fillna("")
    holder = pd.DataFrame({"rec_id": holder["rec_id"], "vorname": holder["given_name"], "name": holder["surname"],
                           "y": dob.str[:4], "m": dob.str[4:6].str.lstrip("0"), "d": dob.str[6:8],
                           "plz": holder["postcode"], "ssn": holder["soc_sec_id"]}).sample(frac=1, random_state=2)
    querier.to_csv(tmp_path / "q.csv", index=False)
    holder.to_csv(tmp_path / "h.csv", index=False)
    return querier.reset_index(drop=True), holder.reset_index(drop=True)


def secure_join(keyholder, tmp_path, qdir, hdir, hname, out: str, how, holder_how) -> tuple[pd.DataFrame, dict, str]:
    """``party join`` (a process) served by one ``party hold --once`` run: (output, report, stderr)."""
    flags = keyholder.flags()
    report = tmp_path / f"{out}.json"
    process = subprocess.Popen([sys.executable, "-m", "party_client.cli", "join", "--dir", str(qdir), *flags,
                                "--holder", hname, "--input", str(tmp_path / "q.csv"), *how, "--scheme", "ristretto",
                                "--quiet", "--timeout", "180", "--out", str(tmp_path / out), "--report", str(report)],
                               stderr=subprocess.PIPE, text=True)
    relayed(qdir)                                    # the query is at K: one holder run serves it
    for _ in range(200):
        served = run_party("hold", "--dir", str(hdir), *flags, "--input", str(tmp_path / "h.csv"), *holder_how,
                           "--release-columns", "rec_id", "--once", "--quiet")
        if served.stdout.startswith("served 1"):
            break
        time.sleep(0.3)
    assert process.wait(timeout=180) == 0, process.stderr.read()
    return (pd.read_csv(tmp_path / out, dtype=str, keep_default_na=False), json.loads(report.read_text()),
            process.stderr.read())


def test_preset_person_links_like_its_plaintext_model_and_writes_its_rules(keyholder, tmp_path):
    querier, holder = tables(tmp_path)
    (qdir, _), (hdir, hname) = make_party(keyholder, tmp_path), make_party(keyholder, tmp_path)
    q_rules = person_rules(parse_map(QUERIER_MAP))
    h_rules = person_rules(parse_map(HOLDER_MAP))
    assert q_rules.spec == h_rules.spec                      # the same model from different columns
    holder_frame = pd.read_csv(tmp_path / "h.csv", dtype=str, keep_default_na=False)
    expected = q_rules.plaintext_matches(querier, holder_frame,
                                         pd.MultiIndex.from_product([range(len(querier)), range(len(holder_frame))],
                                                                    names=["entry", "row"]).to_frame(index=False), h_rules)
    expected_ids = set(zip(querier["rec_id"][expected.entry], holder_frame["rec_id"][expected.row]))
    assert len(expected_ids) >= 55

    def link(out: str, *how: str, holder_how: tuple[str, ...]) -> set:
        """The pairs the secure join found; they must be the plaintext model's on the same candidates
        (without the records the querier's bins left out, which its report lists)."""
        out_frame, report, _ = secure_join(keyholder, tmp_path, qdir, hdir, hname, out, how, holder_how)
        matched = out_frame[out_frame["matched"] == "True"]
        found = set(zip(matched["rec_id"], matched["rec_id_holder"]))
        left_out = [p["left_out_records"] for p in report["passes"]]
        candidates = q_rules.plaintext_matches(querier, holder_frame, q_rules.candidate_pairs(
            querier, holder_frame, h_rules, left_out=left_out), h_rules)
        assert found == set(zip(querier["rec_id"][candidates.entry], holder_frame["rec_id"][candidates.row]))
        return found

    preset = ("--preset", "person")
    found = link("o.csv", *preset, "--map", QUERIER_MAP, "--write-rules", str(tmp_path / "q.toml"),
                 "--html", str(tmp_path / "page.html"),
                 holder_how=("--preset", "person", "--map", HOLDER_MAP, "--write-rules", str(tmp_path / "h.toml")))
    assert len(found & expected_ids) >= len(expected_ids) - 2     # blocking loses at most a couple
    assert "[risk]" not in (tmp_path / "q.toml").read_text()       # nothing about blocks to rate
    page = (tmp_path / "page.html").read_text()
    for part in ("Estimated quality at the threshold", "m, u and weight per level", "data:image/png;base64,",
                 "Borderline matches (your own records only)", "swapped:last", "swapped with last",
                 "one character replaced or two adjacent swapped (first 10)", "no value on either side",
                 "this estimate was optimistic by up to"):
        assert part in page
    borderline = page.split("Borderline matches")[1]
    assert "dup-0" not in borderline and "org" in borderline        # the querier's records, never the holder's
    again = link("r.csv", "--rules", str(tmp_path / "q.toml"), holder_how=("--rules", str(tmp_path / "h.toml")))
    assert len(again & expected_ids) >= len(expected_ids) - 2        # the written rules link as the preset does


def test_one_to_one_keeps_the_person_and_drops_the_twin(keyholder, tmp_path):
    """Both registries hold each person once; the holder also holds twins of three of the querier's
    people (same surname, date of birth and postcode, another first name), whom the additive model links
    as well.  The join says how many records matched more than once and names --one-to-one
    --duplicate-free, which keeps each person's own record: the plaintext model's pairs, assigned.  A
    person the holder holds twice (its two rows weigh the same) keeps either, and the join says so."""
    from party_client.matching.assignment import one_to_one
    querier, holder = tables(tmp_path)
    twins = holder.set_index("rec_id").loc[[r.replace("org", "dup-0") for r in querier["rec_id"].head(3)]].reset_index()
    twins = twins.assign(rec_id=twins["rec_id"] + "-twin", vorname=["zebulon", "ottoline", "barnaby"])
    # and, against its declaration, one person twice: the two rows weigh the same against the querier's record
    copy = holder.set_index("rec_id").loc[[querier["rec_id"][3].replace("org", "dup-0")]].reset_index()
    copy["rec_id"] += "-copy"
    holder = pd.concat([holder, twins, copy], ignore_index=True)
    holder.to_csv(tmp_path / "h.csv", index=False)
    roles = ("first=given_name,last=surname,dob=date_of_birth,postcode=postcode",
             "first=vorname,last=name,birth_year=y,birth_month=m,birth_day=d,postcode=plz")
    (qdir, _), (hdir, hname) = make_party(keyholder, tmp_path), make_party(keyholder, tmp_path)
    q_rules, h_rules = person_rules(parse_map(roles[0])), person_rules(parse_map(roles[1]))
    holder_how = ("--preset", "person", "--map", roles[1])

    out, report, stderr = secure_join(keyholder, tmp_path, qdir, hdir, hname, "all.csv",
                                      ("--preset", "person", "--map", roles[0]), holder_how)
    assert set(twins["rec_id"]) <= set(out["rec_id_holder"])               # the twins were linked
    assert report["records_matched_more_than_once"] == 4
    assert "4 of your records matched more than one holder row" in stderr and "--duplicate-free" in stderr

    out, report, stderr = secure_join(keyholder, tmp_path, qdir, hdir, hname, "one.csv",
                                      ("--preset", "person", "--map", roles[0], "--one-to-one", "--duplicate-free"),
                                      holder_how)
    matched = out[out["matched"] == "True"]
    assert matched["rec_id"].is_unique and not set(twins["rec_id"]) & set(matched["rec_id_holder"])
    left_out = [p["left_out_records"] for p in report["passes"]]
    plain = q_rules.plaintext_matches(querier, holder, q_rules.candidate_pairs(querier, holder, h_rules,
                                                                                left_out=left_out), h_rules)
    chosen = one_to_one(plain.set_axis(["__record", "__match", "__weight"], axis=1), duplicate_free=True)
    expected = set(zip(querier["rec_id"][chosen["__record"]], holder["rec_id"][chosen["__match"]]))
    # the copied person kept one of its two rows, either; every other record the plaintext model's choice
    tied = querier["rec_id"][3]
    assert {p for p in set(zip(matched["rec_id"], matched["rec_id_holder"])) if p[0] != tied} == {
        p for p in expected if p[0] != tied}
    assert matched.loc[matched["rec_id"] == tied, "rec_id_holder"].iloc[0] in {copy["rec_id"][0],
                                                                                copy["rec_id"][0][:-len("-copy")]}
    assert report["records_kept_of_tied_rows"] == 1 and "very same weight" in stderr
    assert report["assignment"].startswith("one per person: the assignment of largest total weight")
    assert "records_matched_more_than_once" not in report and "more than one holder row" not in stderr


def test_max_comparisons_refuses_in_one_line_before_any_session(tmp_path):
    tables(tmp_path)
    result = run_party("join", "--dir", str(tmp_path / "no-party"), "--keyholder", "127.0.0.1:1", "--insecure",
                       "--holder", "h", "--input", str(tmp_path / "q.csv"), "--out", str(tmp_path / "o.csv"),
                       "--preset", "person", "--map", QUERIER_MAP,
                       "--max-comparisons", "1000", check=False)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "above --max-comparisons 1,000" in lines[0]
    assert not (tmp_path / "o.csv").exists()
    dry = run_party("join", "--dir", str(tmp_path / "no-party"), "--keyholder", "127.0.0.1:1", "--insecure",
                    "--holder", "h", "--input", str(tmp_path / "q.csv"), "--out", str(tmp_path / "o.csv"),
                    "--preset", "person", "--map", QUERIER_MAP, "--dry-run")
    assert "were free; costs per call timed here just now): ristretto about" in dry.stdout and "first+last" in dry.stdout
    assert " per record) and " in dry.stdout and not (tmp_path / "o.csv").exists()


def test_estimate_preset_learns_m_by_em_on_own_duplicates_and_writes_rules(tmp_path):
    from febrl import load_febrl3
    from party_client.matching.rules_file import load_rules
    load_febrl3().reset_index().head(2000).to_csv(tmp_path / "f3.csv", index=False)
    result = run_party("estimate", "--input", str(tmp_path / "f3.csv"), "--out", str(tmp_path / "f3.toml"),
                       "--preset", "person", "--map", QUERIER_MAP)
    assert "EM converged in" in result.stdout
    rules = load_rules(tmp_path / "f3.toml")
    assert rules.model.m["id"]["exact"] > 0.8 and rules.model.u["id"]["exact"] < 0.01
    assert rules.model.weights["dob"]["exact"] > 8


def test_link_release_declares_every_mapped_column_a_linking_column():
    from party_client.release.linked_release import _linking_columns
    assert _linking_columns(None, person_rules(parse_map(HOLDER_MAP))) == sorted(
        ["vorname", "name", "y", "m", "d", "plz", "ssn"])
