"""The README's first command: ``party demo`` on an embedded key holder (2048-bit keys, mTLS)."""
import subprocess
import sys


def test_party_demo_tells_the_whole_story(tmp_path):
    result = subprocess.run([sys.executable, "-m", "party_client.cli", "demo", "--keep", str(tmp_path / "demo")],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "mTLS" in out and "What each party learned" in out
    for party in ("hospital (querier, link-release)", "registry-west (querier, dedup-many)",
                  "insurer (querier, lookup)", "registry and hospital (holders)", "key holder"):
        assert party in out
    assert "claims matched = [True, True, False]" in out
    assert "60 of its 80 participants linked to the registry (60 pairs; plaintext with the same rules: 60; " \
           "60 of the 60 truly there)" in out
    linked = (tmp_path / "demo" / "cohort_linked.csv").read_text().splitlines()
    assert linked[0].split(",") == ["first_name", "last_name", "birth_date", "participant", "site", "matched",
                                    "matched_by"]
    assert len(linked) == 1 + 80
    assert "2048-bit Paillier" in out
    assert "meets 0.2: True" in out
    release = (tmp_path / "demo" / "release.csv").read_text()
    header = release.splitlines()[0].split(",")
    assert not {"hcn", "given", "surname"} & set(header)
    assert (tmp_path / "demo" / "reports" / "release_report.html").exists()
