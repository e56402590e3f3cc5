"""Every enum value the key-holder core keeps as a plain int equals the one in proto/linkage.proto."""
from __future__ import annotations

from keyholder import proto_enums as states
from proto import linkage_pb2 as pb


def test_session_statuses_are_the_protos():
    assert (states.OPEN, states.CLOSED, states.EXPIRED) == (pb.OPEN, pb.CLOSED, pb.EXPIRED)
    assert set(pb.SessionStatus.values()) - {pb.SESSION_STATUS_UNSPECIFIED} == {
        states.OPEN, states.CLOSED, states.EXPIRED}


def test_round_statuses_are_the_protos():
    assert (states.PENDING, states.DONE, states.ABORTED) == (pb.PENDING, pb.DONE, pb.ABORTED)
    assert set(pb.RoundStatus.values()) - {pb.ROUND_STATUS_UNSPECIFIED} == {
        states.PENDING, states.DONE, states.ABORTED}


def test_modes_are_the_protos_by_value_and_name():
    proto_modes = {value: name.lower() for name, value in pb.Mode.items() if value != pb.MODE_UNSPECIFIED}
    assert states.MODES == proto_modes


def test_the_core_and_validation_use_these_values():
    from keyholder import core, validation
    assert validation.MODES is states.MODES
    assert (core.OPEN, core.CLOSED, core.EXPIRED, core.PENDING, core.DONE, core.ABORTED) == (
        pb.OPEN, pb.CLOSED, pb.EXPIRED, pb.PENDING, pb.DONE, pb.ABORTED)
