"""``party link-release`` against a real key holder: unlisted joined columns and detected identifiers are
refused (exit 2, one line, nothing written); ``--accept-column`` lets one through with its reason in the report."""
from __future__ import annotations

import json
import threading

import numpy as np

from linkhelpers import TEST_KEY_BITS, make_party, refusal_line, run_party
from test_release import SPEC, people, serve


def test_link_release_refuses_unlisted_and_identifier_columns(keyholder, tmp_path):
    (qdir, _), (hdir, hname) = make_party(keyholder, tmp_path), make_party(keyholder, tmp_path)
    hospital = people(21, 60)
    hospital["email"] = [f"patient{i}@example.org" for i in range(len(hospital))]
    registry = hospital[["hcn"]].iloc[:40].copy()
    registry["diagnosis"] = np.random.default_rng(4).choice(["C50", "C61"], len(registry))
    hospital.to_csv(tmp_path / "hospital.csv", index=False)
    (tmp_path / "reports").mkdir()
    stop = threading.Event()
    thread = serve(hdir, registry, "hcn", ["diagnosis"], stop)

    def link(spec: str, *extra: str, check: bool = False):
        (tmp_path / "spec.toml").write_text(spec)
        return run_party("link-release", "--dir", str(qdir), *keyholder.flags(), "--holder", hname, "--input",
                         str(tmp_path / "hospital.csv"), "--id-column", "hcn", "--spec", str(tmp_path / "spec.toml"),
                         "--key-bits", str(TEST_KEY_BITS), "--quiet", "--report-dir", str(tmp_path / "reports"),
                         "--method", "safe-harbor", "--out", str(tmp_path / "release.csv"), *extra, check=check)
    try:
        p = link(SPEC)
        assert p.returncode == 2 and "not in the spec's [columns]: 'email'" in refusal_line(p.stderr)
        assert not (tmp_path / "release.csv").exists() and not (tmp_path / "reports" / "release_report.json").exists()
        p = link(SPEC.replace("[columns]\n", '[columns]\ndefault = "other"\n'))
        assert p.returncode == 2 and refusal_line(p.stderr)
        assert "'email' (other) looks like e-mail addresses" in p.stderr and "example.org" not in p.stderr
        assert not (tmp_path / "release.csv").exists()
        link(SPEC.replace("[columns]\n", '[columns]\ndefault = "other"\n'), "--accept-column",
             "email:addresses of a test mailbox, no real person", check=True)
        report = json.loads((tmp_path / "reports" / "release_report.json").read_text())
        assert report["accepted_columns"]["email"] == {"reason": "addresses of a test mailbox, no real person",
                                                      "detected": ["email"]}
        assert report["column_fates"]["email"] == "other" and report["deidentification"]["policy"]["columns"]
        link(SPEC.replace("[columns]\n", '[columns]\ndefault = "drop"\n'), check=True)
        assert "email" not in (tmp_path / "release.csv").read_text().splitlines()[0].split(",")
    finally:
        stop.set()
        thread.join(timeout=60)
