"""The sequential schedule's turns inside the one EvalScope worker (pure threading, no EvalScope)."""

from __future__ import annotations

import threading
import time

from evalpipe.evalscope_bridge.scheduling import GenerationTurns, PredictionCount, SideBySide

#: How long a call that must not block may take before the test fails (a bound, not a measurement: a
#: passing call returns at once, a blocking one fails the test here instead of at the suite's timeout).
RETURNS_WITHIN_S = 10.0


def _in_thread(fn) -> threading.Thread:  # type: ignore[no-untyped-def]
    t = threading.Thread(target=fn, daemon=True)
    t.start()
    return t


def _returns(what: str, fn) -> None:  # type: ignore[no-untyped-def]
    """Call ``fn`` in a thread; fail with ``what`` if it has not returned within ``RETURNS_WITHIN_S``."""
    t = _in_thread(fn)
    t.join(RETURNS_WITHIN_S)
    assert not t.is_alive(), f"{what}: still blocked after {RETURNS_WITHIN_S:.0f} s"


def test_a_benchmark_sends_only_after_every_earlier_one_is_done() -> None:
    turns = GenerationTurns(["a", "b", "c"])
    events: list[str] = []
    waiting = [_in_thread(lambda n=n: (turns.wait(n), events.append(n))) for n in ("c", "b")]
    turns.wait("a")  # the first benchmark never waits
    time.sleep(0.2)
    assert events == []  # b and c wait for a
    turns.done("a")
    waiting[1].join(RETURNS_WITHIN_S)
    assert events == ["b"]
    time.sleep(0.1)
    assert events == ["b"]  # c still waits for b
    turns.done("b")
    waiting[0].join(RETURNS_WITHIN_S)
    assert events == ["b", "c"]


def test_the_next_benchmark_prepares_once_the_previous_one_has_begun_sending() -> None:
    turns = GenerationTurns(["a", "b"])
    prepared = threading.Event()
    t = _in_thread(lambda: (turns.may_prepare("b"), prepared.set()))
    turns.may_prepare("a")  # nothing before it
    assert not prepared.wait(0.2)  # a has neither begun nor ended
    turns.wait("a")  # a's turn begins: b loads while a generates
    assert prepared.wait(RETURNS_WITHIN_S)
    t.join(RETURNS_WITHIN_S)


def test_a_benchmark_that_ends_without_sending_passes_its_turn() -> None:
    turns = GenerationTurns(["a", "b"])
    turns.done("a")  # not run, or failed before its first request
    _returns("b may prepare once a has ended without sending", lambda: turns.may_prepare("b"))
    _returns("b's turn comes once a has ended without sending", lambda: turns.wait("b"))
    turns.done("a")  # idempotent
    _returns("a second done(a) changes nothing", lambda: turns.wait("b"))


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
        t.join(RETURNS_WITHIN_S)
    assert fired == [1]
    nothing: list[int] = []
    PredictionCount(lambda: nothing.append(1)).expect(0)  # every answer cached: the turn passes at once
    assert nothing == [1]


def test_side_by_side_never_blocks() -> None:
    """The pipelined schedule: every benchmark prepares and sends at once, whichever started first and
    whether or not another has ended.  Three benchmarks must all be past ``may_prepare`` and ``wait`` at the
    same time (a barrier of three); turns taken in any order — ``GenerationTurns`` would keep b and c waiting
    for a, which waits at the barrier for them — fail the barrier instead of hanging."""
    turns = SideBySide()
    sending = threading.Barrier(3, timeout=RETURNS_WITHIN_S)
    errors: list[BaseException] = []

    def benchmark(name: str) -> None:
        try:
            turns.may_prepare(name)
            turns.wait(name)
            sending.wait()  # all three are sending together
            turns.done(name)
        except BaseException as exc:
            errors.append(exc)
            sending.abort()

    threads = [_in_thread(lambda n=n: benchmark(n)) for n in ("c", "a", "b")]
    for t in threads:
        t.join(RETURNS_WITHIN_S * 2)
    assert not any(t.is_alive() for t in threads), f"a benchmark is still blocked in SideBySide ({errors!r})"
    assert errors == [], f"the benchmarks were not sending side by side: {errors!r}"
    # a benchmark no schedule has heard of, before or after the others ended: still never blocked
    _returns("may_prepare of an unknown benchmark", lambda: turns.may_prepare("z"))
    _returns("wait of an unknown benchmark", lambda: turns.wait("z"))
