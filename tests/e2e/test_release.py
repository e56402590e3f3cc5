"""Link, then de-identify (``party link-release``) and many-registry
de-duplication (``party dedup-many``) against a real key holder."""
from __future__ import annotations

import json
import threading

import numpy as np
import pandas as pd

import deid_core
from linkhelpers import TEST_KEY_BITS, make_party, run_party, scheme_flags
from party_client import Party

SPEC = """
[columns]
hcn = "direct"
name = "direct"
zip = "quasi"
age = "quasi"
sex = "quasi"
diagnosis = "sensitive"
matched = "other"
[types]
zip = "zip"
age = "age"
[release]
type = "non-public"
threshold = 0.2
"""


def people(seed: int, count: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "hcn": [f"{v:010d}" for v in rng.choice(10 ** 10, count, replace=False)],
        "name": [f"Person{i:04d} Surname{i:04d}" for i in range(count)],
        "zip": rng.choice(["02139", "02140", "10001", "94110", "03601"], count),
        "age": rng.integers(18, 99, count).astype(str),
        "sex": rng.choice(["F", "M"], count),
    })


def serve(party_dir, frame, id_column, release, stop):
    holder = Party(party_dir, progress=False).prepare_holder(frame, id_column, release)
    thread = threading.Thread(target=holder.serve, kwargs={"once": False, "poll_seconds": 0.5, "stop": stop.is_set},
                              daemon=True)
    thread.start()
    return thread


def test_link_release_safe_harbor_then_saved_policy(keyholder, tmp_path):
    (qdir, _), (hdir, hname) = make_party(keyholder, tmp_path), make_party(keyholder, tmp_path)
    hospital = people(1, 120)
    registry = hospital[["hcn"]].iloc[:80].copy()
    registry["diagnosis"] = np.random.default_rng(2).choice(["C50", "C61", "C34"], len(registry))
    registry["internal_note"] = [f"never-release-{i}" for i in range(len(registry))]
    hospital.to_csv(tmp_path / "hospital.csv", index=False)
    (tmp_path / "spec.toml").write_text(SPEC)
    (tmp_path / "reports").mkdir()
    stop = threading.Event()
    thread = serve(hdir, registry, "hcn", ["diagnosis"], stop)
    try:
        command = ["link-release", "--dir", str(qdir), *keyholder.flags(), "--holder", hname, "--input",
                   str(tmp_path / "hospital.csv"), "--id-column", "hcn", "--spec", str(tmp_path / "spec.toml"),
                   "--key-bits", str(TEST_KEY_BITS), "--quiet", "--report-dir", str(tmp_path / "reports")]
        summary = json.loads(run_party(*command, "--method", "safe-harbor", "--out",
                                       str(tmp_path / "release.csv")).stdout)
        release = pd.read_csv(tmp_path / "release.csv", dtype=str, keep_default_na=False)
        assert set(release.columns) == {"zip", "age", "sex", "diagnosis", "matched"}
        raw = (tmp_path / "release.csv").read_text()
        for value in list(hospital["hcn"]) + list(hospital["name"]) + list(registry["internal_note"]):
            assert value not in raw
        assert set(release["zip"]) <= {"021", "100", "941", "000"} and summary["matched_records"] == 80
        report = json.loads((tmp_path / "reports" / "release_report.json").read_text())
        assert report["linkage"]["holder"] == hname and report["linkage"]["key_bits"] == TEST_KEY_BITS
        assert report["linkage"]["scheme"] == "paillier"
        assert report["linkage"]["matched_records"] == 80 and report["deidentification"]["method"] == "safe-harbor"
        fresh = deid_core.assess(deid_core.read_table(tmp_path / "release.csv"), deid_core.parse_spec(
            {"columns": {"zip": "quasi", "age": "quasi", "sex": "quasi", "diagnosis": "sensitive"},
             "release": {"type": "non-public", "threshold": 0.2}}))
        assert fresh.summary["prosecutor"]["max"] == summary["max_risk"]
        assert fresh.attack["meets_threshold"] == summary["meets_threshold"]
        html = (tmp_path / "reports" / "release_report.html").read_text()
        assert "Linkage" in html and all(v not in html for v in hospital["hcn"])

        # next year's data, the same saved policy (El Emam & Arbuckle, ch. 3, "Year on Year: Reusing Risk Analyses")
        (tmp_path / "policy.json").write_text(json.dumps(report["deidentification"]["policy"]))
        nxt = people(3, 50)
        nxt.to_csv(tmp_path / "hospital2.csv", index=False)
        command[command.index(str(tmp_path / "hospital.csv"))] = str(tmp_path / "hospital2.csv")
        ristretto_command = [c for c in command if c not in ("--key-bits", str(TEST_KEY_BITS))] + ["--scheme", "ristretto"]
        run_party(*ristretto_command, "--method", "policy", "--policy", str(tmp_path / "policy.json"), "--out",
                  str(tmp_path / "release2.csv"))                  # and the elliptic-curve scheme this time
        again = pd.read_csv(tmp_path / "release2.csv", dtype=str, keep_default_na=False)
        assert set(again.columns) == set(release.columns) and len(again) == 50
        linkage = json.loads((tmp_path / "reports" / "release_report.json").read_text())["linkage"]
        assert (linkage["scheme"], linkage["key_bits"]) == ("ristretto", 256)
        assert "exponential ElGamal on ristretto255, 256-bit keys" in (tmp_path / "reports" / "release_report.html").read_text()
        assert set(again["zip"]) <= {"021", "100", "941", "000"}

        bad_spec = SPEC.replace('hcn = "direct"', 'hcn = "other"')
        (tmp_path / "bad.toml").write_text(bad_spec)
        refused = run_party(*[c if c != str(tmp_path / "spec.toml") else str(tmp_path / "bad.toml") for c in command],
                            "--method", "safe-harbor", "--out", str(tmp_path / "r3.csv"), check=False)
        assert refused.returncode == 2 and "declare it \"direct\"" in refused.stderr
        assert not (tmp_path / "r3.csv").exists()
    finally:
        stop.set()
        thread.join(timeout=60)


def test_three_registries_dedup(keyholder, tmp_path):
    names = []
    dirs = []
    for _ in range(3):
        directory, name = make_party(keyholder, tmp_path)
        dirs.append(directory)
        names.append(name)
    everyone = people(7, 200)["hcn"].tolist()
    rng = np.random.default_rng(8)
    holdings = {name: sorted(rng.choice(everyone, 90, replace=False)) for name in names}
    stop = threading.Event()
    threads = [serve(d, pd.DataFrame({"hcn": holdings[n]}), "hcn", [], stop) for d, n in zip(dirs, names)]
    try:
        for me, directory, scheme in zip(names, dirs, ["paillier", "ristretto", "ristretto"]):
            own = pd.DataFrame({"hcn": holdings[me]})
            own.to_csv(tmp_path / f"{me}.csv", index=False)
            others = [n for n in names if n != me]
            run_party("dedup-many", "--dir", str(directory), *keyholder.flags(), "--registries", ",".join(others),
                      "--input", str(tmp_path / f"{me}.csv"), "--id-column", "hcn", "--out",
                      str(tmp_path / f"{me}-dedup.csv"), *scheme_flags(scheme), "--quiet")
            out = pd.read_csv(tmp_path / f"{me}-dedup.csv", dtype=str, keep_default_na=False)
            assert out["hcn"].tolist() == holdings[me]                          # only its own records
            expected = [";".join(o for o in others if h in set(holdings[o])) for h in holdings[me]]
            assert out["also_held_by"].tolist() == expected                     # exactly its true overlaps
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)


def test_link_release_threshold_finds_the_optimal_node_and_meets_it(keyholder, tmp_path):
    (qdir, _), (hdir, hname) = make_party(keyholder, tmp_path), make_party(keyholder, tmp_path)
    hospital = people(11, 150)
    registry = hospital[["hcn"]].iloc[::2].copy()
    registry["diagnosis"] = "C50"
    hospital.to_csv(tmp_path / "hospital.csv", index=False)
    spec = SPEC.replace("[types]", '[hierarchies]\nzip = { builder = "prefix", levels = 5 }\n'
                                   'age = { builder = "interval", widths = [5, 10, 20], top_code = 90 }\n[types]')
    spec = spec.replace('type = "non-public"\nthreshold = 0.2', 'type = "public"\nthreshold = 0.1')
    (tmp_path / "spec.toml").write_text(spec)
    (tmp_path / "reports").mkdir()
    stop = threading.Event()
    thread = serve(hdir, registry, "hcn", ["diagnosis"], stop)
    try:
        summary = json.loads(run_party(
            "link-release", "--dir", str(qdir), *keyholder.flags(), "--holder", hname, "--input",
            str(tmp_path / "hospital.csv"), "--id-column", "hcn", "--spec", str(tmp_path / "spec.toml"),
            "--key-bits", str(TEST_KEY_BITS), "--quiet", "--report-dir", str(tmp_path / "reports"),
            "--method", "threshold", "--max-suppression", "0.05", "--out", str(tmp_path / "release.csv")).stdout)
    finally:
        stop.set()
        thread.join(timeout=60)
    assert summary["meets_threshold"] and summary["max_risk"] <= 0.1
    release = deid_core.read_table(tmp_path / "release.csv")
    fresh = deid_core.assess(release, deid_core.parse_spec(
        {"columns": {"zip": "quasi", "age": "quasi", "sex": "quasi"}, "release": {"type": "public", "threshold": 0.1}}))
    assert fresh.attack["meets_threshold"] and fresh.summary["k_min"] >= 10
    report = json.loads((tmp_path / "reports" / "release_report.json").read_text())
    assert report["deidentification"]["method"] == "threshold" and report["deidentification"]["nodes_evaluated"] > 0
    assert set(release.columns) == {"zip", "age", "sex", "diagnosis", "matched"}
