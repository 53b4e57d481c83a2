"""The EvalScope worker process: ``python -m evalpipe.evalscope_bridge.worker``.

One worker process serves every benchmark of the stage (see ``runner``): EvalScope is imported once, not
once per benchmark.  It runs in its own process so that EvalScope's process-wide side effects —
``logging.basicConfig(force=True)`` at import, tqdm bars, the HF ``datasets`` cache location read at
import, the patches below — never leak into evalpipe or a test session, and so that an interrupt can
end it (and the LiveCodeBench test processes it spawns) as one process group.

Every benchmark runs in a thread of its own, started in the order the spec lists them, and what one
benchmark's ``run_task`` does to process-wide state before its first request is serialised by
``LoadLock`` (its docstring says what and why).  Side by side (``together``: the ``pipelined`` schedule;
the parent lists the largest cost first) their requests share the server at once.  One after another
(``together`` false: ``generation.schedule: sequential``) ``GenerationTurns`` lets a benchmark send its
first request only once the benchmark before it in the spec has its last answer: the server still sees
one benchmark at a time, while the next one's set-up, dataset load and render check overlap the previous
one's generation, and the previous one's scoring and report overlap the next one's.

Protocol (one JSON object per line):

* stdin, line 1: ``WorkerSpec`` (its tasks are the ones that run).
* channel → parent, every event naming its ``benchmark``: ``rendered`` — every sample as the adapter
  built it (subset, index, prompt hash, final user message) and the worker's ``pid``, before any request
  is sent.  On a fresh run the samples come from the dataset load of the run itself (EvalScope's
  ``load_dataset``), which then waits for the parent's answer: no separate rendering pass, and what was
  checked is what is sent.  On a resume (``use_cache``) the dataset is loaded once before ``run_task``,
  because EvalScope validates and reads its cache before its own load, and the parent checks prompts and
  repairs the cache before that.
* stdin, then: ``{"benchmark": ..., "action": "run", "task": {...}}`` (the same task) or
  ``{"benchmark": ..., "action": "exit"}`` (do not run it), in any order across benchmarks.
* channel → parent: ``cache_identity`` (resume only), ``start``, one ``sample`` per finished sample,
  ``finished``; ``failed`` (naming the benchmark whose ``run_task`` raised) before a non-zero exit —
  one benchmark's failure ends the process, as it ends the stage.

Inside the worker: NLTK data is never downloaded (EvalScope would try at scoring time), and an
``Evaluator`` subclass per benchmark reports progress and records each sample whose request or review
raised — EvalScope's ``ignore_errors`` only counts them.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evalpipe.artifacts.schema.sandbox import SandboxRecord


class BenchmarkTask(BaseModel):
    """One benchmark the worker runs, with its EvalScope ``TaskConfig`` arguments."""

    model_config = ConfigDict(extra="forbid")

    benchmark: str
    task: dict[str, Any]


class WorkerSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: In the order they start (the parent lists the largest expected cost first).
    benchmarks: list[BenchmarkTask]
    #: Requests of every benchmark at once (the ``pipelined`` schedule); else one benchmark's requests at a
    #: time, in the spec's order (``GenerationTurns``).
    together: bool = False
    api_key_env: str | None = None
    errors_log: str
    channel_fd: int
    #: The run's code sandbox (``code_sandbox.json``): required when a benchmark executes model code.
    code_sandbox: SandboxRecord | None = None


class Channel:
    """Line-oriented JSON events to the parent (thread-safe: EvalScope reports from worker threads)."""

    def __init__(self, fd: int) -> None:
        self._fh = os.fdopen(fd, "w", encoding="utf-8", buffering=1)
        self._lock = threading.Lock()

    def emit(self, event: str, **fields: Any) -> None:
        line = json.dumps({"event": event, **fields}, ensure_ascii=False)
        with self._lock:
            self._fh.write(line + "\n")
            self._fh.flush()

    def close(self) -> None:
        with self._lock:
            self._fh.close()


class BenchmarkChannel:
    """The channel as one benchmark uses it: every event names the benchmark (the parent routes by it)."""

    def __init__(self, channel: Channel, benchmark: str) -> None:
        self.channel = channel
        self.benchmark = benchmark

    def emit(self, event: str, **fields: Any) -> None:
        self.channel.emit(event, benchmark=self.benchmark, **fields)


class Lines:
    """Lines from the parent (the worker's stdin), read with ``os.read``: no Python-level lock is held while
    waiting.

    The command reader waits on stdin for the whole run, and EvalScope's math scoring forks the worker
    (``metrics.math.isolation``): a child forked while a thread sat in ``sys.stdin.readline`` would
    inherit ``sys.stdin``'s buffer lock held, and multiprocessing's child start-up closes ``sys.stdin``
    — it would hang until the scoring deadline.  ``sys.stdin`` is replaced by ``os.devnull`` once this
    reader owns file descriptor 0.
    """

    def __init__(self, fd: int = 0) -> None:
        self._fd = fd
        self._pending = b""
        sys.stdin = open(os.devnull, encoding="utf-8")  # nothing else reads the parent's pipe

    def readline(self) -> str:
        """The next line without its newline; ``""`` at end of input."""
        while b"\n" not in self._pending:
            chunk = os.read(self._fd, 65536)
            if not chunk:
                line, self._pending = self._pending, b""
                return line.decode("utf-8")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode("utf-8")


class Commands:
    """The parent's commands (stdin after the spec), routed to the benchmark each names.

    One reader thread, so that benchmarks waiting side by side never read each other's lines.  End of
    input (the parent is gone) answers every benchmark still waiting with ``exit``.
    """

    def __init__(self, lines: Lines, benchmarks: list[str]) -> None:
        self._lines = lines
        self._queues: dict[str, queue.SimpleQueue[dict[str, Any]]] = {
            b: queue.SimpleQueue() for b in benchmarks
        }
        threading.Thread(target=self._read, name="evalpipe-commands", daemon=True).start()

    def _read(self) -> None:
        while line := self._lines.readline():
            if not line.strip():
                continue
            command = json.loads(line)
            target = self._queues.get(command.get("benchmark"))
            if target is None:  # a parent speaking another protocol: every waiting benchmark refuses
                command = {"action": "invalid", "why": f"command for unknown benchmark: {line.strip()[:200]}"}
                for q in self._queues.values():
                    q.put(command)
                return
            target.put(command)
        for q in self._queues.values():
            q.put({"action": "exit"})

    def next(self, benchmark: str) -> dict[str, Any]:
        command = self._queues[benchmark].get()
        if command.get("action") == "invalid":
            raise RuntimeError(str(command.get("why")))
        return command


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


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def install_nltk_guard(benchmark: str) -> None:
    """Replace EvalScope's "find or download" NLTK check by "find or fail"; forbid ``nltk.download``.

    A missing resource then fails the one review that needs it (IFEval's ``match_score`` turns that
    into an empty score, which the outcome table classifies as ``scoring_error``) instead of trying
    the network in the middle of scoring.
    """
    from evalscope.utils import resource_utils

    mirror_map = resource_utils.MIRROR_MAP

    def find_or_fail(name: str) -> None:
        import nltk

        meta = mirror_map.get(name)
        resource = meta["resource_path"] if meta else name
        try:
            nltk.data.find(resource)
        except LookupError:
            raise LookupError(
                f"NLTK resource {name!r} is not installed and evalpipe does not download at run time "
                f"(install it with `python -m nltk.downloader {name}` or point NLTK_DATA at a copy)"
            ) from None

    def refuse_download(*args: Any, **kwargs: Any) -> bool:
        raise RuntimeError("evalpipe forbids NLTK downloads during a run")

    resource_utils.check_nltk_data = find_or_fail
    from evalpipe.benchmarks import find

    spec = find(benchmark)
    if spec is not None and spec.meta.nltk_module:  # only these import NLTK (slow to import otherwise)
        import importlib

        import nltk

        nltk.download = refuse_download
        nltk_user: Any = importlib.import_module(spec.meta.nltk_module)  # an (untyped) EvalScope module
        nltk_user.check_nltk_data = find_or_fail


def register_adapter(benchmark: str) -> None:
    """Make sure EvalScope knows the benchmark's adapter (one EvalScope does not ship is registered by
    the module the benchmark names)."""
    from evalpipe.benchmarks import find

    spec = find(benchmark)
    if spec is not None:
        spec.register_evalscope_adapter()


def prepare_code_execution(benchmark: str, sandbox: SandboxRecord | None) -> None:
    """A benchmark whose review executes model-written code gets the run's sandbox before EvalScope runs
    (``Benchmark.prepare_review``); without one the worker refuses to run it — never unsandboxed by
    accident."""
    from evalpipe.benchmarks import find
    from evalpipe.sandbox.preflight import launcher_for

    spec = find(benchmark)
    if spec is None or not spec.meta.executes_code:
        return
    if sandbox is None:
        raise RuntimeError(f"{benchmark} executes model-written code and no code sandbox was resolved")
    spec.prepare_review(launcher_for(sandbox))


def rendered_samples(loaded: dict[str, Any], repeats: int) -> list[dict[str, Any]]:
    """Every sample of a loaded dataset (subset → samples) as the parent checks it: position, prompt hash,
    final user message (one per row: with ``repeats`` > 1 EvalScope loads each row that many times)."""
    from evalpipe.hashing import message_text, prompt_sha256

    samples = []
    for subset, dataset in loaded.items():
        for sample in dataset:
            if repeats > 1:
                # attempt copies of one row (id = position × repeats + attempt, group_id = position): the
                # prompt is rendered once per row; every copy must be that row
                if sample.group_id != sample.id // repeats:
                    raise RuntimeError(
                        f"{subset}[{sample.id}]: group_id {sample.group_id} is not id // {repeats}"
                    )
                if sample.id % repeats:
                    continue
            messages = [m.model_dump(mode="json", exclude_none=True) for m in sample.input]
            users = [m for m in messages if m.get("role") == "user"]
            samples.append(
                {
                    "subset": subset,
                    "index": sample.id // repeats,
                    "prompt_sha256": prompt_sha256(messages),
                    "n_messages": len(messages),
                    "user_text": message_text(users[-1].get("content")) if users else None,
                }
            )
    return samples


def load_separately(task_kwargs: dict[str, Any], benchmark: str) -> dict[str, Any]:
    """The dataset as the adapter loads it, outside ``run_task`` (resume only: see ``main``)."""
    from evalscope.api.registry import get_benchmark
    from evalscope.config import TaskConfig
    from evalscope.utils.model_utils import seed_everything

    task = TaskConfig(**task_kwargs)
    if task.seed is not None:  # as run_task does before its own load
        seed_everything(task.seed)
    loaded: dict[str, Any] = get_benchmark(benchmark, task).load_dataset()
    return loaded


class NotRun(BaseException):
    """The parent answered the rendering with ``exit``: leave ``run_task`` before any request.

    A ``BaseException`` so that EvalScope's ``except Exception`` handlers do not turn it into an error.
    """


class RenderGate:
    """Wraps the adapter's ``load_dataset``: report the loaded samples, then wait for the parent's verdict.

    ``loaded`` is called whenever a load returns (before the verdict is awaited): it ends the benchmark's
    ``LoadLock`` turn, so the next benchmark loads while this one waits for the parent.
    """

    def __init__(
        self,
        channel: BenchmarkChannel,
        commands: Commands,
        version: str,
        task: dict[str, Any],
        cache_identity: dict[str, Any] | None,
        turn: Callable[[], None] = lambda: None,
    ):
        self.channel = channel
        self.commands = commands
        self.version = version
        self.task = task
        self.cache_identity = cache_identity
        #: Blocks until this benchmark may send requests (``GenerationTurns.wait``).
        self.turn = turn
        self.passed = False
        self.loaded: Callable[[], None] = lambda: None

    def install(self, adapter: Any) -> None:
        load = adapter.load_dataset

        def gated_load(*args: Any, **kwargs: Any) -> Any:
            loaded = load(*args, **kwargs)
            self.loaded()
            if not self.passed:
                self.wait(loaded)
            return loaded

        adapter.load_dataset = gated_load

    def wait(self, loaded: dict[str, Any]) -> None:
        repeats = int(self.task.get("repeats") or 1)
        self.channel.emit(
            "rendered",
            evalscope_version=self.version,
            pid=os.getpid(),
            samples=rendered_samples(loaded, repeats),
        )
        command = self.commands.next(self.channel.benchmark)
        if command.get("action") != "run":
            raise NotRun
        if command.get("task") != self.task:
            raise RuntimeError(
                "the parent asked to run a different task than the one this worker was started with"
            )
        self.passed = True
        if self.cache_identity is not None:
            self.channel.emit("cache_identity", **self.cache_identity)
        self.turn()


def cache_identity_problem(task_kwargs: dict[str, Any]) -> str | None:
    """Why EvalScope would refuse its own cache (e.g. the api_url changed), or None.

    evalpipe has verified every cached row itself, so a refusal for transport reasons is answered with
    ``rerun_review=True``: predictions are reused, reviews recomputed.
    """
    from evalscope.api.registry import get_benchmark
    from evalscope.config import TaskConfig, load_task_config_snapshot
    from evalscope.evaluation_versioning import (
        ResolvedBenchmarkSpec,
        build_evaluation_identity,
        validate_cached_evaluation_identity,
    )

    from evalpipe.evalscope_bridge.layout import task_snapshot

    snapshot = load_task_config_snapshot(str(task_snapshot(task_kwargs["work_dir"])))
    if snapshot is None:
        return None
    task = TaskConfig(**task_kwargs)
    specs, versions = {}, {}
    for name in task.datasets:
        meta = get_benchmark(name, task).benchmark_meta
        specs[name] = ResolvedBenchmarkSpec.from_meta(meta, task)
        versions[name] = meta.evaluation_version
    try:
        validate_cached_evaluation_identity(snapshot, build_evaluation_identity(specs, versions, task), False)
    except ValueError as exc:
        return str(exc)
    return None


class ErrorsLog:
    """``evalscope_errors.jsonl``, shared by every benchmark of the worker: one line per failed sample."""

    def __init__(self, path: str) -> None:
        from evalpipe.artifacts import JsonlAppender

        self._log = JsonlAppender(Path(path))
        self._lock = threading.Lock()

    def append(self, record: BaseModel) -> None:
        with self._lock:
            self._log.append(record)
            self._log.fsync()


def install_evaluator(
    benchmark: str,
    channel: BenchmarkChannel,
    errors: ErrorsLog,
    gate: RenderGate,
    last_prediction: Callable[[], None] = lambda: None,
) -> None:
    """Register an Evaluator for ``benchmark`` that reports its loaded samples through ``gate`` before any
    request, progress, and per-sample errors, and calls ``last_prediction`` once its last pending
    prediction has returned."""
    from evalscope.api.registry import EVALUATOR_REGISTRY
    from evalscope.evaluator.evaluator import DefaultEvaluator

    from evalpipe.artifacts.schema.evalscope import ErrorPhase, EvalscopeErrorRecord

    # EvalScope ships no type information: its classes, and the work items below, are Any to mypy.
    class EvalpipeEvaluator(DefaultEvaluator):  # type: ignore[misc]  # DefaultEvaluator is Any (untyped EvalScope)
        def __init__(self, benchmark: Any, *args: Any, **kwargs: Any) -> None:
            super().__init__(benchmark, *args, **kwargs)
            gate.install(benchmark)
            self._predictions = PredictionCount(last_prediction)

        def _collect_work_items(self, dataset_dict: Any) -> Any:
            ctx = super()._collect_work_items(dataset_dict)
            channel.emit("start", total=ctx.grand_total, cached=ctx.total_cached)
            self._predictions.expect(sum(1 for item in ctx.work_items if item.needs_predict))
            return ctx

        def _predict_sample(self, sample: Any, model_prediction_dir: str) -> Any:
            try:  # EvalScope's retries happen inside: a return or a raise here is the sample's last request
                return super()._predict_sample(sample, model_prediction_dir)
            finally:
                self._predictions.returned()

        def _process_work_item(self, item: Any, model_prediction_dir: str) -> Any:
            index = item.sample.id if item.sample is not None else item.task_state.sample_id
            try:
                result = super()._process_work_item(item, model_prediction_dir)
            except Exception as exc:
                phase: ErrorPhase = (
                    "predict" if item.needs_predict and not item.prediction_persisted else "review"
                )
                errors.append(
                    EvalscopeErrorRecord(
                        benchmark=benchmark,
                        subset=item.subset,
                        index=int(index),
                        phase=phase,
                        error_type=type(exc).__name__,
                        message=str(exc)[:2000],
                        at=_now(),
                    )
                )
                channel.emit("sample", subset=item.subset, index=int(index), ok=False, phase=phase)
                raise
            channel.emit("sample", subset=item.subset, index=int(index), ok=True)
            return result

    EVALUATOR_REGISTRY[benchmark] = EvalpipeEvaluator


class BenchmarkFailed(Exception):
    """A benchmark's ``run_task`` (or its set-up) raised: the worker reports it and exits non-zero."""

    def __init__(self, benchmark: str, error: BaseException) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.benchmark = benchmark


class Worker:
    """What every benchmark of the process shares: the channel, the commands, the lock, the errors log."""

    def __init__(self, spec: WorkerSpec, channel: Channel, lines: Lines) -> None:
        import evalscope

        self.spec = spec
        self.channel = channel
        self.commands = Commands(lines, [b.benchmark for b in spec.benchmarks])
        self.load_lock = LoadLock()
        self.turns = (
            SideBySide() if spec.together else GenerationTurns([b.benchmark for b in spec.benchmarks])
        )
        self.errors = ErrorsLog(spec.errors_log)
        self.version: str = evalscope.__version__

    def run_benchmark(self, item: BenchmarkTask) -> None:
        """One benchmark, start to ``finished``: set-up, render gate, ``run_task``.  Raises
        ``BenchmarkFailed`` naming it."""
        name = item.benchmark
        channel = BenchmarkChannel(self.channel, name)
        try:
            self.turns.may_prepare(name)
            print(
                f"===== evalpipe: {name}: EvalScope task starts {_now()} =====", file=sys.stderr, flush=True
            )
            with self.load_lock.turn():
                register_adapter(name)
                install_nltk_guard(name)
                task_kwargs: dict[str, Any] = item.task
                cache_identity = None
                if task_kwargs.get("use_cache") and not task_kwargs.get("rerun_review"):
                    problem = cache_identity_problem(task_kwargs)
                    if problem is not None:
                        task_kwargs = {**task_kwargs, "rerun_review": True}
                    cache_identity = {"rerun_review": problem is not None, "reason": problem}
                gate = RenderGate(
                    channel,
                    self.commands,
                    self.version,
                    item.task,
                    cache_identity,
                    turn=lambda: self.turns.wait(name),
                )
                # a resume: EvalScope validates and reads its cache before it loads the dataset, and the
                # parent must see the prompts (recorded hashes) and repair the cache before either happens
                loaded = load_separately(item.task, name) if item.task.get("use_cache") else None
            if loaded is not None:
                gate.wait(loaded)
            with self.load_lock.turn() as end_turn:
                gate.loaded = end_turn  # the turn ends when run_task's own load returns (or run_task does)
                install_evaluator(
                    name, channel, self.errors, gate, last_prediction=lambda: self.turns.done(name)
                )
                prepare_code_execution(name, self.spec.code_sandbox)

                from evalscope import TaskConfig, run_task

                env = self.spec.api_key_env
                api_key = os.environ.get(env) if env else None
                run_task(TaskConfig(**task_kwargs, api_key=api_key or "EMPTY"))
            if not gate.passed:
                raise RuntimeError(f"EvalScope finished without loading the {name} dataset")
            channel.emit("finished", ran=True, rerun_review=bool(task_kwargs.get("rerun_review")))
        except NotRun:
            channel.emit("finished", ran=False)
        except BaseException as exc:
            raise BenchmarkFailed(name, exc) from exc
        finally:
            self.turns.done(name)  # ended in any way: the next benchmark may send

    def run(self) -> None:
        """One thread per benchmark, started in the spec's order; the first failure is raised at once
        (the others are left running: the caller ends the process)."""
        failures: queue.SimpleQueue[BenchmarkFailed | None] = queue.SimpleQueue()

        def run(item: BenchmarkTask) -> None:
            try:
                self.run_benchmark(item)
            except BenchmarkFailed as exc:
                failures.put(exc)
                return
            failures.put(None)

        for item in self.spec.benchmarks:
            threading.Thread(target=run, args=(item,), name=f"evalpipe-{item.benchmark}", daemon=True).start()
        for _ in self.spec.benchmarks:
            failure = failures.get()
            if failure is not None:
                raise failure


def main() -> int:
    lines = Lines()
    spec = WorkerSpec.model_validate_json(lines.readline())
    channel = Channel(spec.channel_fd)
    failed: tuple[str, str] | None = None  # (benchmark, error)
    try:
        Worker(spec, channel, lines).run()
        return 0
    except BenchmarkFailed as exc:
        traceback.print_exception(exc.__cause__ or exc)
        failed = (exc.benchmark, str(exc)[:2000])
        return 1
    except BaseException as exc:  # before any benchmark started (EvalScope import): the first one failed
        traceback.print_exc()
        first = spec.benchmarks[0].benchmark if spec.benchmarks else ""
        failed = (first, f"{type(exc).__name__}: {exc}"[:2000])
        return 1
    finally:
        # a parent that is gone (broken pipe) cannot be told: the worker still ends
        if failed is not None:
            with contextlib.suppress(OSError):
                channel.emit("failed", benchmark=failed[0], error=failed[1])
        with contextlib.suppress(OSError):
            channel.close()
        if failed is not None:
            # the other benchmarks' threads may still be in EvalScope's thread pools, which interpreter exit
            # would wait for: leave now (the parent ends the process group and what it started anyway)
            sys.stderr.flush()
            os._exit(1)


if __name__ == "__main__":  # the guard LiveCodeBench's spawned test processes rely on
    sys.exit(main())
