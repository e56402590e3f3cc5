"""The parties' tables as users have them (party_client.files over deid_core.io)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FEBRL = Path(__file__).resolve().parents[1] / "data" / "febrl"


def test_the_shipped_febrl_files_link_as_shipped(tmp_path):
    """The FEBRL files shipped gzipped, with spaces after their commas, are read as they are: the preset's
    --map names their columns and the dry-run plans a join (no key holder needed)."""
    result = subprocess.run([sys.executable, "-m", "party_client.cli", "join", "--dir", str(tmp_path / "p"),
                             "--keyholder", "127.0.0.1:1", "--insecure", "--holder", "h",
                             "--input", str(FEBRL / "dataset4a.csv.gz"), "--out", str(tmp_path / "o.csv"),
                             "--preset", "person", "--map", "first=given_name,last=surname,dob=date_of_birth,"
                             "id=soc_sec_id,postcode=postcode", "--dry-run"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "fields are separated by ', '" in result.stderr and "first+last" not in result.stderr
    assert result.stderr.count("fields are separated by") == 1          # once, though the table is read twice
    assert " per record) and " in result.stdout and not (tmp_path / "o.csv").exists()
