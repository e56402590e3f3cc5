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
    assert "2048-bit Paillier" in out
    assert "meets 0.2: True" in out
    release = (tmp_path / "demo" / "release.csv").read_text()
    assert "hcn" not in release.splitlines()[0] and "name" not in release.splitlines()[0]
    assert (tmp_path / "demo" / "reports" / "release_report.html").exists()
