"""A key holder killed and restarted mid-session resumes from its store: the
querier's and holder's clients retry while it is down, batches already
zero-tested are kept, resent batches are recognized."""
from __future__ import annotations

import subprocess
import threading
import time

import pandas as pd
import pytest

from linkhelpers import REPRESENTATIVE, TEST_KEY_BITS, join_with_interrupted_key_holder, make_party, party_cmd, \
    run_party, scheme_flags
from linkhelpers import canonical, plaintext_join, tables


@pytest.mark.parametrize("scheme", REPRESENTATIVE)
def test_restart_between_query_and_holder(fresh_keyholder, tmp_path, scheme):
    """K's private key of either scheme, wrapped at rest, is unwrapped after a SIGKILL and restart."""
    server = fresh_keyholder()
    (qdir, _), (hdir, hname) = make_party(server, tmp_path, cli=False), make_party(server, tmp_path, cli=False)
    querier, holder = tables(7, n=60, m=80, overlap=30)
    querier.to_csv(tmp_path / "q.csv", index=False)
    holder.to_csv(tmp_path / "h.csv", index=False)
    join = subprocess.Popen(party_cmd("join", "--dir", str(qdir), *server.flags(), "--holder", hname,
                                      "--input", str(tmp_path / "q.csv"), "--id-column", "hcn", "--out",
                                      str(tmp_path / "j.csv"), *scheme_flags(scheme), "--quiet"),
                            stderr=subprocess.PIPE, text=True)
    spool = server.data_dir / "spool"
    deadline = time.monotonic() + 120
    while not list(spool.rglob("*.sealed")) and time.monotonic() < deadline:
        time.sleep(0.1)
    server.stop(kill=True)                                # SIGKILL: no clean shutdown
    time.sleep(1.0)
    server.start()                                        # same data dir and passphrase
    run_party("hold", "--dir", str(hdir), *server.flags(), "--input", str(tmp_path / "h.csv"),
              "--id-column", "health_no", "--release-columns", "diagnosis", "--once", "--quiet")
    assert join.wait(timeout=300) == 0, join.stderr.read()
    joined = pd.read_csv(tmp_path / "j.csv", dtype=str, keep_default_na=False)
    assert canonical(joined) == canonical(plaintext_join(querier, holder, ["diagnosis"]))


def test_restart_during_comparisons(fresh_keyholder, tmp_path):
    server = fresh_keyholder()
    restarts = []

    def interrupt():                                      # kill K after the third batch, restart it soon
        server.stop(kill=True)
        restarts.append(threading.Timer(1.5, server.start))
        restarts[-1].start()
    querier, holder, result, submitted = join_with_interrupted_key_holder(server, tmp_path, 8, interrupt,
                                                                          TEST_KEY_BITS)
    for restart in restarts:  # its start has seen K healthy before the fixture stops K (else it raises in its thread)
        restart.join(timeout=60)
    assert len(submitted) >= 13                           # 200 rows / 16 per batch, all went through
    assert canonical(result.frame) == canonical(plaintext_join(querier, holder, ["cost"]))
