"""Server utilisation from the request log: time-weighted in-flight ÷ concurrency, idle slot-seconds split
into between benchmarks / in tails / other, on hand-computed timelines."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.audit.utilisation import server_utilisation

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _at(s: float) -> str:
    return (T0 + timedelta(seconds=s)).isoformat()


def _attempt(
    prompt: str, arrived: float, admitted: float | None, ended: float, seq: int = 0
) -> RequestAttempt:
    return RequestAttempt(
        attempt_id=f"a-{prompt}-{arrived}",
        seq=seq,
        started_at=_at(arrived),
        admitted_at=_at(admitted) if admitted is not None else None,
        ended_at=_at(ended),
        method="POST",
        path="/v1/chat/completions",
        body_sha256="0" * 64,
        messages_sha256=prompt,
        status=200,
        queue_wait_s=(admitted - arrived) if admitted is not None else None,
    )


def test_sequential_timeline_with_a_tail_and_a_gap() -> None:
    # concurrency 2.  A: two requests 0–2 and 0–6 (its tail: 2–6 one slot idle);
    # gap 6–7 (both idle, between benchmarks); B: two requests 7–9.
    attempts = [
        _attempt("a1", 0, 0, 2),
        _attempt("a2", 0, 0, 6),
        _attempt("b1", 7, 7, 9),
        _attempt("b2", 7, 7, 9),
    ]
    used = server_utilisation(attempts, {"a1": "A", "a2": "A", "b1": "B", "b2": "B"}, 2)
    assert used is not None
    assert used.window_s == pytest.approx(9)
    assert used.busy_slot_s == pytest.approx(2 + 6 + 2 + 2)
    assert used.mean_in_flight == pytest.approx(12 / 9, abs=1e-3)
    assert used.utilisation == pytest.approx(12 / 18, abs=1e-3)
    assert used.idle_slot_s == pytest.approx(6)
    assert used.idle_in_tails_slot_s == pytest.approx(4)  # 2–6, one slot
    assert used.idle_between_benchmarks_slot_s == pytest.approx(2)  # 6–7, two slots
    assert used.idle_other_slot_s == pytest.approx(0)
    assert used.max_in_flight == 2
    assert used.mean_queue_wait_s == pytest.approx(0)


def test_overlapping_benchmarks_fill_the_tail_and_queue_time_is_not_busy() -> None:
    # A's tail 0–6 overlaps B's two requests (arrived at 0, queued until 2 and 4)
    attempts = [
        _attempt("a1", 0, 0, 2),
        _attempt("a2", 0, 0, 6),
        _attempt("b1", 0, 2, 4),
        _attempt("b2", 0, 4, 6),
    ]
    used = server_utilisation(attempts, {"a1": "A", "a2": "A", "b1": "B", "b2": "B"}, 2)
    assert used is not None
    assert used.utilisation == pytest.approx(1.0)
    assert used.idle_slot_s == pytest.approx(0)
    assert used.mean_queue_wait_s == pytest.approx((0 + 0 + 2 + 4) / 4)


def test_ramp_up_is_other_and_old_logs_use_arrival() -> None:
    # B sends one request 0–4 and its second only at 2 (client-side ramp-up): 0–2 one slot idle is "other";
    # the second has no admitted_at (a log from before admission control): its arrival counts as its start
    attempts = [_attempt("b1", 0, 0, 4), _attempt("b2", 2, None, 4)]
    used = server_utilisation(attempts, {"b1": "B", "b2": "B"}, 2)
    assert used is not None
    assert used.idle_other_slot_s == pytest.approx(2)
    assert used.idle_in_tails_slot_s == pytest.approx(0)
    assert used.busy_slot_s == pytest.approx(6)


def test_no_timed_attempts() -> None:
    assert server_utilisation([], {}, 8) is None
