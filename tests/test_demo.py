"""The README's first command: ``party demo`` on an embedded key holder (2048-bit keys, mTLS)."""
import subprocess
import sys


def test_party_demo_tells_the_whole_story(tmp_path):
    result = subprocess.run([sys.executable, "-m", "party_client.cli", "demo", "--keep", str(tmp_path / "demo")],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "mTLS" in out and "What each party learned" in out
    for party in ("hospital (querier, join)", "hospital (querier, dedup)", "insurer (querier, lookup)",
                  "registry (holder)", "key holder"):
        assert party in out
    assert "claims matched = [True, True, False]" in out
    assert "2048-bit Paillier" in out
    assert (tmp_path / "demo" / "hospital_joined.csv").exists()
