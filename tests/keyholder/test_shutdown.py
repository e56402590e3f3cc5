"""``keyholder serve`` stops promptly on SIGTERM/SIGINT (long-polls woken, store closed after the
last call) and loses nothing: a restarted key holder resumes the round it was serving."""
from __future__ import annotations

import signal
import threading
import time

from linkhelpers import TEST_KEY_BITS, join_with_interrupted_key_holder, make_party
from party_client import Party
from linkhelpers import canonical, plaintext_join, tables


def _stop_and_time(server, signum: int) -> float:
    started = time.monotonic()
    server.process.send_signal(signum)
    server.process.wait(timeout=30)
    return time.monotonic() - started


def test_sigterm_mid_round_stops_within_5s_and_restart_resumes(fresh_keyholder, tmp_path):
    server = fresh_keyholder()
    stopped_in = []
    restarts = []

    def interrupt():
        stopped_in.append(_stop_and_time(server, signal.SIGTERM))
        restarts.append(threading.Timer(1.0, server.start))
        restarts[-1].start()
    querier, holder, result, submitted = join_with_interrupted_key_holder(server, tmp_path, 9, interrupt,
                                                                          TEST_KEY_BITS)
    for restart in restarts:  # its start has seen K healthy before the fixture stops K (else it raises in its thread)
        restart.join(timeout=60)
    assert stopped_in and stopped_in[0] < 5.0, stopped_in
    log = server.log_path.read_text()
    assert "SIGTERM received: stopping" in log and "keyholder INFO stopped" in log
    assert "ProgrammingError" not in log and "Traceback" not in log, log
    assert len(submitted) >= 13                           # 200 rows / 16 per batch, all went through
    assert canonical(result.frame) == canonical(plaintext_join(querier, holder, ["cost"]))


def test_sigint_wakes_a_long_poll(fresh_keyholder, tmp_path):
    """A holder waiting 25 s in ListWork does not hold the key holder up."""
    server = fresh_keyholder()
    hdir, _ = make_party(server, tmp_path, cli=False)
    serving = Party(hdir, progress=False).prepare_holder(tables(3, n=20, m=20, overlap=5)[1], "health_no", [])
    serving.connection.retry_seconds = 0.5
    polling = threading.Thread(target=lambda: _swallow(serving.pending, 25.0), daemon=True)
    polling.start()
    time.sleep(1.5)                                       # the poll is now waiting at the key holder
    assert _stop_and_time(server, signal.SIGINT) < 5.0
    polling.join(timeout=10)
    assert not polling.is_alive()
    log = server.log_path.read_text()
    assert "SIGINT received: stopping" in log and "keyholder INFO stopped" in log
    assert "Traceback" not in log, log
    serving.connection.close()


def _swallow(function, *args):
    try:
        function(*args)
    except Exception:
        pass
