"""A hostile querier cannot make the holder (and K) work without bound: an exact join whose header asks for
255 hash functions per cuckoo table (each holder row compared with 255 bins instead of 2) is refused by a
real `party hold` before any comparison; it used to be served, 127,500 comparisons instead of 1,000."""
from __future__ import annotations

import dataclasses
import subprocess

import pytest

from linkhelpers import TEST_KEY_BITS, party_cmd, tables
from party_client.api import Party
from party_client.crypto.cuckoo import CuckooParams
from party_client.errors import PartyError


def test_the_holder_refuses_a_header_asking_for_unbounded_work(keyholder, parties, tmp_path, monkeypatch):
    (qdir, _), (hdir, hname) = parties(2)
    querier, holder = tables(21, n=30, m=60, overlap=10)
    holder.to_csv(tmp_path / "h.csv", index=False)
    options = Party._options

    def hostile(self, *args):                    # the querier's own code, changed by its owner
        return dataclasses.replace(options(self, *args), cuckoo=CuckooParams(hash_functions=255))
    monkeypatch.setattr(Party, "_options", hostile)
    hold = subprocess.Popen(party_cmd("hold", "--dir", str(hdir), "--keyholder", keyholder.address, "--input",
                                      str(tmp_path / "h.csv"), "--id-column", "health_no", "--poll-seconds", "1",
                                      "--quiet"), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        with pytest.raises(PartyError, match="refused the query: a cuckoo table may have at most 4 hash functions"):
            Party(qdir, progress=False).join(hname, querier, "hcn", key_bits=TEST_KEY_BITS, timeout=120)
    finally:
        hold.terminate()
        out, _ = hold.communicate(timeout=30)
    assert '"comparisons"' not in out                    # no round was served
