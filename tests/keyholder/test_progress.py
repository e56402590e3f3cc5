"""The progress K tells a waiting querier: a share in 10 % steps, never the holder's comparison count."""
from __future__ import annotations

from hypothesis import given, strategies as st

from keyholder.core import progress_percent
from party_client.waiting import TimeLeft


@given(st.integers(0, 10**12), st.integers(0, 10**12))
def test_progress_is_a_tenth_step_below_a_hundred(done, planned):
    shown = progress_percent(done, planned)
    assert shown in range(0, 100, 10)
    if 0 < planned and done <= planned:
        assert shown <= 100 * done / planned < shown + 10 or shown == 90


def test_nothing_announced_or_inconsistent_shows_nothing():
    assert progress_percent(5, 0) == progress_percent(7, 5) == 0
    assert progress_percent(5, 10) == 50 and progress_percent(10, 10) == 90


def test_time_left_from_the_rate_since_the_round_was_seen_under_way():
    now = [100.0]
    left = TimeLeft(clock=lambda: now[0])
    assert left.seconds(False, 0) is None
    assert left.seconds(True, 0) is None                  # under way from t = 100
    now[0] = 130.0
    assert left.seconds(True, 30) == 70.0                 # 30 % in 30 s: 70 s for the rest


def test_the_querier_s_view_of_a_pending_round_never_carries_the_comparison_count():
    """What K actually sends the waiting querier (``round_info`` for the querier): the count that would tell
    the holder's table size is absent; only whether comparing began and the share in tenths."""
    from keyholder.proto_convert import round_info
    from keyholder.proto_enums import PENDING
    from keyholder.store import Round
    pending = Round("s" * 32, 1, PENDING, "m" * 32, comparisons=123_457, matched_rows=0, batches=None,
                    holder_note=None, reason=None)
    told = round_info(pending, for_querier=True, progress=(True, progress_percent(123_457, 300_000)))
    assert told.comparisons == 0 and told.comparing and told.progress_percent == 40
    assert "123457" not in str(told) and round_info(pending, for_querier=False).comparisons == 123_457
