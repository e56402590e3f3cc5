"""End to end against a real ``keyholder serve`` process (mTLS): the three modes
through the real ``party`` CLI and the Python API, checked against a plaintext
pandas merge on the normalized identifier."""
from __future__ import annotations

import subprocess
import threading

import json

import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from linkhelpers import REPRESENTATIVE, SCHEMES, canonical, key_bits_for, make_party, party_cmd, plaintext_join, run_party, \
    scheme_flags, serve_in_thread, tables
from party_client import Party


@pytest.mark.parametrize("scheme", REPRESENTATIVE)   # every scheme's CLI joins: test_privacy.py
def test_cli_join_dedup_lookup(keyholder, tmp_path, scheme):
    (qdir, _), (hdir, hname) = make_party(keyholder, tmp_path), make_party(keyholder, tmp_path)
    querier, holder = tables(1)
    querier.to_csv(tmp_path / "q.csv", index=False)
    holder.to_csv(tmp_path / "h.csv", index=False)
    flags = keyholder.flags()
    common = ["--dir", str(qdir), *flags, "--holder", hname, "--input", str(tmp_path / "q.csv"),
              "--id-column", "hcn", *scheme_flags(scheme), "--quiet"]
    queries = {
        "join": subprocess.Popen(party_cmd("join", *common, "--out", str(tmp_path / "join.csv"),
                                           "--report", str(tmp_path / "join.json")),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
        "dedup": subprocess.Popen(party_cmd("dedup", *common, "--out", str(tmp_path / "dedup.parquet")),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
        "lookup": subprocess.Popen(party_cmd("lookup", *common, "--out", str(tmp_path / "lookup.csv"),
                                             "--population", "100000"),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
    }
    # the holder serves whatever is pending, in another process, until all three are answered
    served = 0
    while served < 3:
        out = run_party("hold", "--dir", str(hdir), *flags, "--input", str(tmp_path / "h.csv"),
                        "--id-column", "health_no", "--release-columns", "diagnosis,cost", "--once", "--quiet")
        served += int(out.stdout.split()[1])
    for name, process in queries.items():
        stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, f"{name}: {stderr}"
        assert json.loads(stdout)["scheme"] == scheme
    report = json.loads((tmp_path / "join.json").read_text())
    assert (report["scheme"], report["key_bits"]) == (scheme, key_bits_for(scheme) or 256)

    expected = plaintext_join(querier, holder, ["diagnosis", "cost"])
    joined = pd.read_csv(tmp_path / "join.csv", dtype=str, keep_default_na=False)
    assert list(joined.columns) == ["hcn", "age", "diagnosis", "cost", "matched"]
    assert canonical(joined) == canonical(expected)
    assert joined["matched"].eq("True").sum() == expected["matched"].sum() > 50

    expected_flags = plaintext_join(querier, holder, [])[["hcn", "matched"]].drop_duplicates()
    dedup = pd.read_parquet(tmp_path / "dedup.parquet")
    assert list(dedup.columns) == ["hcn", "age", "matched"] and len(dedup) == len(querier)
    assert dedup["matched"].tolist() == expected_flags.set_index("hcn").loc[querier["hcn"], "matched"].tolist()
    lookup = pd.read_csv(tmp_path / "lookup.csv", dtype=str, keep_default_na=False)
    assert lookup["matched"].tolist() == [str(v) for v in dedup["matched"]]

@pytest.mark.parametrize("scheme", REPRESENTATIVE)
def test_python_api_join_and_lookup_session_reuse(keyholder, tmp_path, scheme):
    (qdir, _), (hdir, hname) = make_party(keyholder, tmp_path), make_party(keyholder, tmp_path)
    querier, holder = tables(2)
    q, h = Party(qdir, progress=False), Party(hdir, progress=False)
    options = dict(key_bits=key_bits_for(scheme), scheme=scheme)
    stop = threading.Event()
    thread = serve_in_thread(h, holder, ["diagnosis"], stop)
    try:
        result = q.join(hname, querier, "hcn", timeout=120, **options)
        assert canonical(result.frame) == canonical(plaintext_join(querier, holder, ["diagnosis"]))
        assert result.report["blank_identifiers"] == 1
        assert result.report["scheme"].name == scheme
        first = q.lookup(hname, querier.head(3), "hcn", population=50_000, **options)
        second = q.lookup(hname, querier.head(3), "hcn", population=50_000, **options)
        assert first.report["session_id"] == second.report["session_id"]          # window reuse
        assert first.report["risk"] <= 0.05 and "warning" not in second.report      # same bucket again
        assert first.frame["matched"].tolist() == second.frame["matched"].tolist()
        assert second.report["scheme"].name == scheme
    finally:
        stop.set()
        thread.join(timeout=30)


@pytest.fixture(scope="module")
def linked_pair(keyholder, tmp_path_factory):
    """A querier and a holder registered once for every example of the property test (each example is a
    join of its own tables; party creation is tested by the other tests)."""
    folder = tmp_path_factory.mktemp("prop")
    return make_party(keyholder, folder), make_party(keyholder, folder)


@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_property_random_tables_with_overlaps_and_duplicates(linked_pair, data):
    (qdir, _), (hdir, hname) = linked_pair
    pool = data.draw(st.lists(st.text(alphabet="0123456789-ab ", min_size=0, max_size=6), min_size=1, max_size=25))
    q_ids = data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=30))
    h_ids = data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=30))
    # a table without a single usable identifier is refused before any session (tests/e2e/test_empty_inputs.py)
    assume(any(c.isalnum() for i in q_ids for c in i) and any(c.isalnum() for i in h_ids for c in i))
    scheme = data.draw(st.sampled_from(SCHEMES))
    querier = pd.DataFrame({"hcn": q_ids, "row": [str(i) for i in range(len(q_ids))]})
    holder = pd.DataFrame({"health_no": h_ids, "payload": [f"p{i}" for i in range(len(h_ids))]})
    stop = threading.Event()
    thread = serve_in_thread(Party(hdir, progress=False), holder, ["payload"], stop)
    try:
        result = Party(qdir, progress=False).join(hname, querier, "hcn", key_bits=key_bits_for(scheme),
                                                  scheme=scheme, timeout=120)
    finally:
        stop.set()
        thread.join(timeout=30)
    assert canonical(result.frame) == canonical(plaintext_join(querier, holder, ["payload"]))
