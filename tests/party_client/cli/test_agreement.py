"""A role mismatch is named before any work: with a holder serving `--preset person` on some roles, a
querier mapping other roles (or another threshold, or another --id-type) is refused in one line that names
the difference, before it opens a session or encrypts anything.  It used to encrypt and send its whole query
and then read the holder's refusal "matching keys differ (querier: levels/v2/…, holder: levels/v2/…)"."""
from __future__ import annotations

import queue
import signal
import subprocess
import threading
import time

import pandas as pd

from linkhelpers import party_cmd, run_party, stub_for
from proto import linkage_pb2 as pb


def test_the_querier_names_the_roles_it_does_not_share_before_any_work(keyholder, parties, tmp_path):
    (qdir, _), (hdir, hname) = parties(2)
    people = pd.DataFrame({"given": ["anna", "jack", "mia"], "family": ["smith", "jones", "brown"],
                           "born": ["19700102", "19800304", "19900506"], "zip": ["2000", "3000", "4000"],
                           "sex": ["f", "m", "f"]})
    people.to_csv(tmp_path / "t.csv", index=False)
    flags = ["--keyholder", keyholder.address]
    hold = subprocess.Popen(party_cmd("hold", "--dir", str(hdir), *flags, "--input", str(tmp_path / "t.csv"),
                                      "--preset", "person", "--map", "first=given,last=family,dob=born,postcode=zip",
                                      "--poll-seconds", "1", "--quiet"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ready: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [ready.put(line) for line in hold.stderr], daemon=True).start()
    try:
        assert "waiting for queries" in ready.get(timeout=60)
        time.sleep(1.5)                                  # a poll has announced the holder's matching

        def join(*how: str) -> subprocess.CompletedProcess:
            started = time.monotonic()
            done = run_party("join", "--dir", str(qdir), *flags, "--holder", hname, "--input", str(tmp_path / "t.csv"),
                             "--out", str(tmp_path / "j.csv"), "--quiet", "--timeout", "60", *how, check=False)
            done.seconds = time.monotonic() - started
            return done

        other_roles = join("--preset", "person", "--map", "first=given,last=family,dob=born,sex=sex")
        assert other_roles.returncode == 2, other_roles.stderr
        assert other_roles.stderr.strip() == (
            f"party: error: holder '{hname}' links on first, last, dob, postcode; you on first, last, dob, sex "
            "(you do not map postcode; the holder does not link on sex): map the same roles as the holder (--map), "
            "or agree on one rules file")
        other_threshold = join("--preset", "person", "--map", "first=given,last=family,dob=born,postcode=zip",
                               "--match-threshold", "20")
        assert other_threshold.returncode == 2 and "same fields (first, last, dob, postcode)" in other_threshold.stderr
        assert "--match-threshold" in other_threshold.stderr
        exact = join("--id-column", "given")
        assert exact.returncode == 2 and "you on id" in exact.stderr
        assert all(run.seconds < 20 for run in (other_roles, other_threshold, exact))
        assert not (tmp_path / "j.csv").exists()
        listed = run_party("sessions", "list", "--dir", str(qdir), *flags).stdout.strip().splitlines()
        assert len(listed) == 1, listed                  # the header only: no session was opened
        # the agreeing join is test_preset_cli.py's, where both parties announce and link
        # What every registered party can ask K of the holder: its configuration, none of its table's values.
        stub, metadata = stub_for(keyholder, qdir)
        [announced] = stub.GetParty(pb.GetPartyRequest(name=hname), metadata=metadata, timeout=30).matching
        assert list(announced.fields) == ["first", "last", "dob", "postcode"]
        assert announced.spec.startswith("levels/v2/") and len(announced.spec) == len("levels/v2/") + 32
        assert not any(value in announced.SerializeToString().decode("latin-1")       # (dates and codes could
                       for value in people[["given", "family"]].to_numpy().ravel())    # match hex by chance)
    finally:
        hold.send_signal(signal.SIGINT)
        try:
            hold.wait(timeout=30)
        except subprocess.TimeoutExpired:
            hold.kill()
