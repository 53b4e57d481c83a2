"""How the benchmarks inside the one EvalScope worker share the process and the server.

* ``LoadLock``: what one benchmark's start does to process-wide state (seeding, logging, dataset load) never
  interleaves with another's — its prompts are what a process of its own would render.
* ``GenerationTurns`` (``generation.schedule: sequential``): one benchmark's requests at a time, in the spec's
  order, each benchmark's set-up and load overlapping the previous one's requests; ``SideBySide``
  (``pipelined``): every benchmark at once.
* ``PredictionCount``: when a benchmark's last prediction has returned (its turn then passes on).

Pure threading: no EvalScope here (``tests/evalscope_bridge/test_generation_turns.py`` runs them without it).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator


class LoadLock:
    """Serialises, across benchmarks run side by side in this process, everything one benchmark's start
    does to process-wide state — from its set-up through the end of its dataset load.

    Read in EvalScope 1.14 (``run.run_single_task``, ``utils.model_utils.seed_everything``,
    ``utils.logger.configure_logging``, ``api.dataset.loader``): ``run_task`` first seeds the global
    generators (``random.seed``, ``numpy.random.seed``, ``torch.manual_seed`` when torch is installed),
    then points the ``evalscope`` logger's file handler at the task's ``logs/eval_log.log``, builds the
    adapter (``get_benchmark``: a deep copy of the registry entry), and the evaluator's first act is the
    adapter's ``load_dataset``: local files through HF ``datasets`` and its on-disk cache, rows shuffled
    or few-shot examples drawn from the global ``random`` when no seed is given, ``random.Random(seed)``
    when one is (evalpipe always gives ``sampling_seed``).  The worker's own set-up before that patches
    module globals (adapter registration, the NLTK guard, the code sandbox hook) and, on a resume, seeds
    and loads once more.  A benchmark separated from the seed of its own ``run_task`` by another
    benchmark's seeding or load could see a different generator state, so its prompts could differ
    from what it renders on its own; under this lock each benchmark's seeding and load follow each other
    exactly as in a process of its own, and its prompts are byte-identical to that (prompt hashes are
    recorded and compared on resume; the tests compare them with one process per benchmark).

    What is not serialised, and why that is safe: the requests and reviews of benchmarks already past
    their load.  They do not draw on the global generators for anything a prompt is made of (prompts
    are fixed once the load returns); EvalScope's reviews run in its own thread pool, in completion
    order, so any draw there was never ordered in one process either.  ``logs/eval_log.log`` in a work
    directory is EvalScope's own copy of its log, pointed at the benchmark that started last (one
    logger); evalpipe never reads it, and ``logs/evalscope.log`` (the worker's stderr) has every line.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def turn(self) -> Iterator[Callable[[], None]]:
        """Hold the lock; the yielded callable ends the turn early (idempotent), leaving ends it anyway."""
        self._lock.acquire()
        ended = False

        def end() -> None:
            nonlocal ended
            if not ended:
                ended = True
                self._lock.release()

        try:
            yield end
        finally:
            end()


class GenerationTurns:
    """One benchmark's requests at a time, in a fixed order (the ``sequential`` schedule).

    A benchmark starts its set-up and dataset load once the benchmark before it has begun sending requests
    (so the first benchmark's requests are not delayed by the others' loads), waits for its turn after its
    render check passed and before its first request, and passes its turn to the next benchmark when its
    last prediction has returned (answered, or failed after EvalScope's retries) — not when its
    ``run_task`` returns: its scoring, aggregation and report then overlap the next benchmark's requests,
    as the next one's set-up and load overlapped its own.  A benchmark that ends in any other way (not
    run, failed) passes its turn too.
    """

    def __init__(self, order: list[str]) -> None:
        self._order = order
        self._started: set[str] = set()
        self._done: set[str] = set()
        self._cond = threading.Condition()

    def _before(self, benchmark: str) -> list[str]:
        return self._order[: self._order.index(benchmark)]

    def may_prepare(self, benchmark: str) -> None:
        """Block until the benchmark before ``benchmark`` has begun sending requests (or has ended)."""
        before = self._before(benchmark)
        if before:
            with self._cond:
                self._cond.wait_for(lambda: bool({before[-1]} & (self._started | self._done)))

    def wait(self, benchmark: str) -> None:
        """Block until every benchmark before ``benchmark`` has passed its turn; then it is ``benchmark``'s."""
        before = set(self._before(benchmark))
        with self._cond:
            self._cond.wait_for(lambda: before <= self._done)
            self._started.add(benchmark)
            self._cond.notify_all()

    def done(self, benchmark: str) -> None:
        """``benchmark`` sends no more requests (idempotent)."""
        with self._cond:
            self._done.add(benchmark)
            self._cond.notify_all()


class SideBySide(GenerationTurns):
    """The ``pipelined`` schedule's turns: every benchmark prepares and sends at once."""

    def __init__(self) -> None:
        super().__init__([])

    def may_prepare(self, benchmark: str) -> None:
        pass

    def wait(self, benchmark: str) -> None:
        pass

    def done(self, benchmark: str) -> None:
        pass


class PredictionCount:
    """Calls ``on_last`` once the last of a benchmark's pending predictions has returned (or at once when
    none is pending, e.g. a resume with every answer cached)."""

    def __init__(self, on_last: Callable[[], None]) -> None:
        self._on_last = on_last
        self._pending = 0
        self._lock = threading.Lock()

    def expect(self, pending: int) -> None:
        with self._lock:
            self._pending = pending
        if pending == 0:
            self._on_last()

    def returned(self) -> None:
        with self._lock:
            self._pending -= 1
            last = self._pending == 0
        if last:
            self._on_last()


class NotSent(Exception):
    """A sample the sequential rule stopped before its request was sent (``SequenceGate.admit``)."""


class SequenceGate:
    """Prefix batches of one benchmark in the seeded sequence order (``generation.sequential``).

    ``positions`` maps a row ``(subset, index)`` to its place in the order the rule consumes units
    (``evalpipe.hashing.sequence_key``).  The evaluator's work items are sorted by it, so EvalScope's thread
    pool takes them in that order; ``admit`` lets a row's request go once the parent has released its
    position (``release``), and refuses it once the parent has halted the benchmark (``halt``: the rule
    stopped).  Rows already past ``admit`` finish and are recorded — what is in flight is never cut — so the
    waste beyond the stop is at most what the parent released ahead of the judged prefix.  Deadlock-free
    because the pool is FIFO: a thread waits only on a row later than every released row, all of which were
    taken from the queue before it.
    """

    def __init__(
        self, positions: dict[tuple[str, int], int], asked: dict[tuple[str, int], int] | None = None
    ) -> None:
        """``asked``: row → the attempts of it that may be sent at all (an internal pilot's decision:
        ``evalpipe.stats.pilot``); a row without one may send every attempt."""
        self._positions = positions
        self._asked = asked or {}
        self._released = 0
        self._halted = False
        self._cond = threading.Condition()

    def position(self, subset: str, index: int) -> int:
        """The row's place in the order (rows outside it come last, in their own order)."""
        return self._positions.get((subset, index), len(self._positions))

    def release(self, units: int) -> None:
        """Rows at positions below ``units`` may be sent (never shrinks)."""
        with self._cond:
            self._released = max(self._released, units)
            self._cond.notify_all()

    def halt(self) -> None:
        """No further row is sent; waiting rows are refused."""
        with self._cond:
            self._halted = True
            self._cond.notify_all()

    def admit(self, subset: str, index: int, attempt: int = 0) -> bool:
        """Block until the row is released (True) or the benchmark halted (False); an attempt the row is not
        asked (``asked``) is refused at once."""
        asked = self._asked.get((subset, index))
        if asked is not None and attempt >= asked:
            return False
        place = self.position(subset, index)
        with self._cond:
            self._cond.wait_for(lambda: self._halted or place < self._released)
            return place < self._released and not self._halted
