"""The sequential schedule's turns inside the one EvalScope worker (pure threading, no EvalScope)."""

from __future__ import annotations

import threading
import time

from evalpipe.evalscope_bridge.scheduling import GenerationTurns, PredictionCount, SideBySide


def _in_thread(fn) -> threading.Thread:  # type: ignore[no-untyped-def]
    t = threading.Thread(target=fn, daemon=True)
    t.start()
    return t


def test_a_benchmark_sends_only_after_every_earlier_one_is_done() -> None:
    turns = GenerationTurns(["a", "b", "c"])
    events: list[str] = []
    waiting = [_in_thread(lambda n=n: (turns.wait(n), events.append(n))) for n in ("c", "b")]
    turns.wait("a")  # the first benchmark never waits
    time.sleep(0.2)
    assert events == []  # b and c wait for a
    turns.done("a")
    waiting[1].join(2)
    assert events == ["b"]
    time.sleep(0.1)
    assert events == ["b"]  # c still waits for b
    turns.done("b")
    waiting[0].join(2)
    assert events == ["b", "c"]


def test_the_next_benchmark_prepares_once_the_previous_one_has_begun_sending() -> None:
    turns = GenerationTurns(["a", "b"])
    prepared = threading.Event()
    t = _in_thread(lambda: (turns.may_prepare("b"), prepared.set()))
    turns.may_prepare("a")  # nothing before it
    assert not prepared.wait(0.2)  # a has neither begun nor ended
    turns.wait("a")  # a's turn begins: b loads while a generates
    assert prepared.wait(2)
    t.join(2)


def test_a_benchmark_that_ends_without_sending_passes_its_turn() -> None:
    turns = GenerationTurns(["a", "b"])
    turns.done("a")  # not run, or failed before its first request
    turns.may_prepare("b")
    turns.wait("b")  # returns at once
    turns.done("a")  # idempotent


def test_prediction_count_fires_once_on_the_last_return() -> None:
    fired: list[int] = []
    count = PredictionCount(lambda: fired.append(1))
    count.expect(3)
    barrier = threading.Barrier(3)

    def predict() -> None:
        barrier.wait()
        count.returned()

    threads = [_in_thread(predict) for _ in range(3)]
    for t in threads:
        t.join(2)
    assert fired == [1]
    nothing: list[int] = []
    PredictionCount(lambda: nothing.append(1)).expect(0)  # every answer cached: the turn passes at once
    assert nothing == [1]


def test_side_by_side_never_blocks() -> None:
    turns = SideBySide()
    turns.may_prepare("b")
    turns.wait("b")  # nothing before it is awaited: the pipelined schedule
    turns.done("b")
