"""``party link-release`` on a join with multiplicity (one querier patient, several holder claims): the
release is assessed per person, with the querier's key as the person (El Emam & Arbuckle, ch. 4)."""
from __future__ import annotations

import json
import threading

import pandas as pd

import deid_core
from linkhelpers import TEST_KEY_BITS, make_party, run_party
from test_release import serve

SPEC = """
[columns]
hcn = "direct"
sex = "quasi"
age = "quasi"
dx = "quasi"
matched = "other"
[release]
type = "public"
threshold = 0.34
"""


def test_link_release_with_multiplicity_counts_persons(keyholder, tmp_path):
    (qdir, _), (hdir, hname) = make_party(keyholder, tmp_path), make_party(keyholder, tmp_path)
    # ten women of 40 with three C50 claims each, and one man of 70 with three identical C61 claims:
    # counted in rows every class holds >= 3 rows (risk <= 1/3); counted in persons the man is alone (risk 1)
    hcn = [f"{i:010d}" for i in range(11)]
    hospital = pd.DataFrame({"hcn": hcn, "sex": ["F"] * 10 + ["M"], "age": ["40"] * 10 + ["70"]})
    claims = pd.DataFrame({"hcn": [h for h in hcn for _ in range(3)], "dx": ["C50"] * 30 + ["C61"] * 3})
    hospital.to_csv(tmp_path / "hospital.csv", index=False)
    (tmp_path / "spec.toml").write_text(SPEC)
    (tmp_path / "reports").mkdir()
    stop = threading.Event()
    thread = serve(hdir, claims, "hcn", ["dx"], stop)
    try:
        summary = json.loads(run_party(
            "link-release", "--dir", str(qdir), *keyholder.flags(), "--holder", hname, "--input",
            str(tmp_path / "hospital.csv"), "--id-column", "hcn", "--spec", str(tmp_path / "spec.toml"),
            "--key-bits", str(TEST_KEY_BITS), "--quiet", "--report-dir", str(tmp_path / "reports"),
            "--method", "policy", "--policy", str(_keep_all_policy(tmp_path)),
            "--out", str(tmp_path / "release.csv")).stdout)
    finally:
        stop.set()
        thread.join(timeout=60)
    release = pd.read_csv(tmp_path / "release.csv", dtype=str, keep_default_na=False)
    assert len(release) == 33 and "hcn" not in release.columns
    # row counting (the old behaviour) would say k = 3 and max risk 1/3, which meets the threshold
    rows = deid_core.assess(deid_core.read_table(tmp_path / "release.csv"), deid_core.parse_spec(
        {"columns": {"sex": "quasi", "age": "quasi", "dx": "quasi", "matched": "other"},
         "release": {"type": "public", "threshold": 0.34}}))
    assert rows.summary["k_min"] == 3 and rows.attack["meets_threshold"]
    # per person: the man with three identical claims is a class of one
    assert summary["persons"] == 11 and summary["k_min"] == 1 and summary["max_risk"] == 1.0
    assert summary["meets_threshold"] is False
    report = json.loads((tmp_path / "reports" / "release_report.json").read_text())
    lg = report["longitudinal"]
    assert (lg["person"], lg["persons"], lg["events"]) == ("hcn", 11, 33)
    assert (lg["level1"], lg["level2"]) == (["sex", "age"], ["dx"])  # the querier's columns are fixed per person
    assert lg["risk_rows"]["k_min"] == 3 and lg["risk_persons"]["k_min"] == 1
    html = (tmp_path / "reports" / "release_report.html").read_text()
    assert "33 events (rows) of 11 persons" in html and all(h not in html for h in hcn)


def _keep_all_policy(tmp_path):
    """A saved policy that only drops the key: the release keeps every quasi-identifier as it is."""
    path = tmp_path / "policy.json"
    deid_core.Policy([{"op": "drop", "columns": ["hcn"]}]).save(path)
    return path
