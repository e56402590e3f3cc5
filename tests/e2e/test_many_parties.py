"""Many parties on one real ``keyholder serve`` at once, one of them hostile: no party can stall another.

A third party's wrong tokens throttle only failing credentials (before, 21 of them locked every party on
the address out and the holder left the round unserved); a bounded load test has twelve parties -- a
holder, lookup clerks, a joining querier, and one party sending bad tokens and churning sessions --
run at the same time, every result checked against plaintext."""
from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from linkhelpers import canonical, make_parties, plaintext_join, serve_in_thread, stub_for, tables
from party_client import Party
from proto import linkage_pb2 as pb

WRONG = [("authorization", "Bearer not-a-token")]


class Hostile:
    """A registered party that, from the same address as everyone, sends calls with a wrong token and
    (``churn``) opens and closes sessions with its valid token, until stopped."""

    def __init__(self, server, folder, holder: str, churn: bool) -> None:
        self.stub, self.meta = stub_for(server, folder)
        self.holder, self.churn = holder, churn
        self.codes: dict[str, int] = {}
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._bad_tokens, daemon=True)]
        if churn:
            self.threads.append(threading.Thread(target=self._churn, daemon=True))

    def _count(self, code: grpc.StatusCode) -> None:
        self.codes[code.name] = self.codes.get(code.name, 0) + 1

    def _bad_tokens(self) -> None:
        while not self.stop.is_set():
            try:
                self.stub.GetParty(pb.GetPartyRequest(name=self.holder), metadata=WRONG, timeout=10)
                self._count(grpc.StatusCode.OK)
            except grpc.RpcError as error:
                self._count(error.code())
            time.sleep(0.02)

    def _churn(self) -> None:
        while not self.stop.is_set():
            try:
                session = self.stub.OpenSession(pb.OpenSessionRequest(mode=pb.JOIN, holder=self.holder,
                                                                      key_bits=2048), metadata=self.meta, timeout=30)
                self.stub.CloseSession(pb.SessionRef(session_id=session.session_id), metadata=self.meta, timeout=30)
                self._count(grpc.StatusCode.OK)
            except grpc.RpcError as error:            # its own queue full: RESOURCE_EXHAUSTED, retry later
                self._count(error.code())
                time.sleep(0.5)

    def __enter__(self) -> "Hostile":
        for thread in self.threads:
            thread.start()
        deadline = time.monotonic() + 30
        while not self.codes.get("RESOURCE_EXHAUSTED"):        # throttled before the others start
            assert time.monotonic() < deadline, self.codes
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=40)


def test_a_third_partys_bad_tokens_do_not_stall_a_join(fresh_keyholder, tmp_path, caplog):
    server = fresh_keyholder()
    (adir, _), (bdir, bname), (cdir, _) = make_parties(server, tmp_path, 3, cli=False)
    querier, holder = tables(41, n=150, m=400, overlap=80)
    stop = threading.Event()
    serving = Party(bdir, progress=False)
    caplog.set_level(logging.WARNING, logger="party")
    with Hostile(server, cdir, bname, churn=False) as carol:
        thread = serve_in_thread(serving, holder, ["diagnosis"], stop)
        try:
            started = time.monotonic()
            result = Party(adir, progress=False).join(bname, querier, "hcn", scheme="ristretto", timeout=120)
            took = time.monotonic() - started
        finally:
            stop.set()
            thread.join(timeout=30)
        codes = dict(carol.codes)
    assert canonical(result.frame) == canonical(plaintext_join(querier, holder, ["diagnosis"]))
    assert codes.get("RESOURCE_EXHAUSTED", 0) > 0 and codes.get("UNAUTHENTICATED", 0) > 0   # carol was throttled
    assert "not served" not in caplog.text and "RESOURCE_EXHAUSTED" not in caplog.text
    assert took < 60, took
    # the throttle answered carol's bad token with when to retry; her own valid token still works
    with pytest.raises(grpc.RpcError) as caught:
        carol.stub.GetParty(pb.GetPartyRequest(name=bname), metadata=WRONG, timeout=10)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "retry in" in caught.value.details()
    assert carol.stub.GetParty(pb.GetPartyRequest(name=bname), metadata=carol.meta, timeout=10).name == bname


def test_twelve_parties_at_once_with_a_hostile_one(fresh_keyholder, tmp_path, caplog):
    """A holder, nine lookup clerks (two lookups each), a joining querier and one hostile party (bad tokens,
    session churn with Paillier keys) at once; every answer is checked, all within a minute."""
    started = time.monotonic()
    server = fresh_keyholder()
    made = make_parties(server, tmp_path, 12, cli=False)
    (hdir, hname), (jdir, _), (cdir, _) = made[0], made[1], made[2]
    clerks = made[3:]
    querier, holder = tables(43, n=120, m=300, overlap=60)
    expected = plaintext_join(querier, holder, ["diagnosis"])
    flags = dict(zip(expected["hcn"], expected["matched"]))
    stop = threading.Event()
    caplog.set_level(logging.WARNING, logger="party")

    def clerk(index: int) -> list[bool]:
        party = Party(clerks[index][0], progress=False)
        ok = []
        for attempt in range(2):
            rows = querier.iloc[[4 + 2 * index + attempt, 60 + index]]       # a likely match and another row
            found = party.lookup(hname, rows, "hcn", population=50_000, scheme="ristretto", timeout=120)
            ok.append(found.frame["matched"].tolist() == [bool(flags[v]) for v in rows["hcn"]])
        return ok

    with Hostile(server, cdir, hname, churn=True) as hostile:
        thread = serve_in_thread(Party(hdir, progress=False), holder, ["diagnosis"], stop)
        try:
            with ThreadPoolExecutor(len(clerks) + 1) as pool:
                join = pool.submit(lambda: Party(jdir, progress=False).join(hname, querier, "hcn", scheme="ristretto",
                                                                             timeout=120))
                lookups = [pool.submit(clerk, index) for index in range(len(clerks))]
                answers = [future.result(timeout=120) for future in lookups]
                joined = join.result(timeout=120)
        finally:
            stop.set()
            thread.join(timeout=30)
        codes = dict(hostile.codes)
    assert answers == [[True, True]] * len(clerks)
    assert canonical(joined.frame) == canonical(expected)
    assert codes.get("OK", 0) > 0 and codes.get("RESOURCE_EXHAUSTED", 0) > 0, codes   # churned, and throttled
    assert "not served" not in caplog.text
    elapsed = time.monotonic() - started
    print(f"12 parties: {elapsed:.1f} s; hostile party's answers {codes}; load {os.getloadavg()[0]:.1f}")
    assert elapsed < 60, elapsed
