"""The EvalScope worker process: ``python -m evalpipe.evalscope_bridge.worker``.

One worker process serves every benchmark of the stage (see ``runner``): EvalScope is imported once, not
once per benchmark, and — the worker being started when the run starts — while the run samples,
materialises, checks and launches.  It runs in its own process so that EvalScope's process-wide side
effects — ``logging.basicConfig(force=True)`` at import, tqdm bars, the HF ``datasets`` cache location read
at import, the patches of ``patches`` — never leak into evalpipe or a test session, and so that an
interrupt can end it (and the LiveCodeBench test processes it spawns) as one process group.

Every benchmark runs in a thread of its own, started in the order the spec lists them; how they share the
process and the server is ``scheduling``'s.  The lines exchanged with the parent are ``protocol``'s.  On a
fresh run the samples the parent checks come from the dataset load of the run itself (EvalScope's
``load_dataset``, wrapped by ``RenderGate``), which then waits for the parent's answer: no separate
rendering pass, and what was checked is what is sent.  On a resume (``use_cache``) the dataset is loaded
once before ``run_task``, because EvalScope validates and reads its cache before its own load, and the
parent checks prompts and repairs the cache before that.  EvalScope 1.14 refuses ``use_cache`` when its
task snapshot is missing, so a resumed task it never began runs afresh, and one whose cached outputs lost
their snapshot reuses the checked predictions and re-scores them.  One benchmark's failure ends the
process, as it ends the stage.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import queue
import shutil
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError

from evalpipe.artifacts.disk import disk_error_in
from evalpipe.evalscope_bridge.layout import nothing_cached
from evalpipe.evalscope_bridge.patches import (
    ONLY_THE_ADDRESS,
    ErrorsLog,
    cache_identity_problem,
    install_disk_guard,
    install_evaluator,
    install_nltk_guard,
    load_separately,
    now,
    preload,
    prepare_code_execution,
    register_adapter,
    rendered_samples,
    skip_html_report,
)
from evalpipe.evalscope_bridge.protocol import (
    BenchmarkTask,
    CacheIdentity,
    Channel,
    Command,
    ExitCommand,
    Failed,
    Finished,
    ReleaseCommand,
    Rendered,
    RunCommand,
    WorkerHome,
    WorkerSpec,
    parse_command,
)
from evalpipe.evalscope_bridge.scheduling import GenerationTurns, LoadLock, SequenceGate, SideBySide


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


class _Invalid:
    """What every waiting benchmark receives when the parent sent a line this protocol cannot route."""

    def __init__(self, why: str) -> None:
        self.why = why


class Commands:
    """The parent's commands (stdin after the spec), routed to the benchmark each names.

    One reader thread, so that benchmarks waiting side by side never read each other's lines.  End of
    input (the parent is gone) answers every benchmark still waiting with ``ExitCommand``.
    """

    def __init__(self, lines: Lines, benchmarks: list[str]) -> None:
        self._lines = lines
        self._queues: dict[str, queue.SimpleQueue[Command | _Invalid]] = {
            b: queue.SimpleQueue() for b in benchmarks
        }
        threading.Thread(target=self._read, name="evalpipe-commands", daemon=True).start()

    def _read(self) -> None:
        while line := self._lines.readline():
            if not line.strip():
                continue
            try:
                command = parse_command(line)
            except ValidationError:
                command = None
            target = self._queues.get(command.benchmark) if command is not None else None
            if command is None or target is None:  # another protocol: every waiting benchmark refuses
                invalid = _Invalid(f"command this worker cannot route: {line.strip()[:200]}")
                for q in self._queues.values():
                    q.put(invalid)
                return
            target.put(command)
        for name, q in self._queues.items():
            q.put(ExitCommand(benchmark=name))

    def next(self, benchmark: str) -> Command:
        command = self._queues[benchmark].get()
        if isinstance(command, _Invalid):
            raise RuntimeError(command.why)
        return command


class NotRun(BaseException):
    """The parent answered the rendering with ``ExitCommand``: leave ``run_task`` before any request.

    A ``BaseException`` so that EvalScope's ``except Exception`` handlers do not turn it into an error.
    """


class RenderGate:
    """Wraps the adapter's ``load_dataset``: report the loaded samples, then wait for the parent's verdict.

    ``loaded`` is called whenever a load returns (before the verdict is awaited): it ends the benchmark's
    ``LoadLock`` turn, so the next benchmark loads while this one waits for the parent.
    """

    def __init__(
        self,
        benchmark: str,
        channel: Channel,
        commands: Commands,
        version: str,
        task: dict[str, Any],
        cache_identity: CacheIdentity | None,
        turn: Callable[[], None] = lambda: None,
    ):
        self.benchmark = benchmark
        self.channel = channel
        self.commands = commands
        self.version = version
        self.task = task
        self.cache_identity = cache_identity
        #: Blocks until this benchmark may send requests (``GenerationTurns.wait``).
        self.turn = turn
        self.passed = False
        self.loaded: Callable[[], None] = lambda: None
        #: Called once the parent said run (before the turn is awaited): a gated benchmark follows its releases.
        self.on_run: Callable[[], None] = lambda: None

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
            Rendered(
                benchmark=self.benchmark,
                evalscope_version=self.version,
                pid=os.getpid(),
                samples=rendered_samples(loaded, repeats),
            )
        )
        command = self.commands.next(self.benchmark)
        if not isinstance(command, RunCommand):
            raise NotRun
        if command.task != self.task:
            raise RuntimeError(
                "the parent asked to run a different task than the one this worker was started with"
            )
        self.passed = True
        if self.cache_identity is not None:
            self.channel.emit(self.cache_identity)
        self.on_run()
        self.turn()


class BenchmarkFailed(Exception):
    """A benchmark's ``run_task`` (or its set-up) raised: the worker reports it and exits non-zero."""

    def __init__(self, benchmark: str, error: BaseException) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.benchmark = benchmark


class Worker:
    """What every benchmark of the process shares: the channel, the commands, the lock, the errors log."""

    def __init__(self, spec: WorkerSpec, channel: Channel, lines: Lines) -> None:
        # import cost: evalscope, only on this path
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
        install_disk_guard(channel)
        skip_html_report()

    def run_benchmark(self, item: BenchmarkTask) -> None:
        """One benchmark, start to ``Finished``: set-up, render gate, ``run_task``.  Raises
        ``BenchmarkFailed`` naming it."""
        name = item.benchmark
        try:
            self.turns.may_prepare(name)
            print(f"===== evalpipe: {name}: EvalScope task starts {now()} =====", file=sys.stderr, flush=True)
            with self.load_lock.turn():
                register_adapter(name)
                install_nltk_guard(name)
                task_kwargs: dict[str, Any] = item.task
                cache_identity = None
                if task_kwargs.get("use_cache") and nothing_cached(Path(task_kwargs["work_dir"])):
                    # EvalScope refuses use_cache without its snapshot, even with nothing to restore
                    task_kwargs = {**task_kwargs, "use_cache": None, "rerun_review": False}
                if task_kwargs.get("use_cache") and not task_kwargs.get("rerun_review"):
                    problem = cache_identity_problem(task_kwargs)
                    if problem is not None:
                        task_kwargs = {**task_kwargs, "rerun_review": True}
                    cache_identity = CacheIdentity(
                        benchmark=name,
                        rerun_review=problem is not None,
                        reason=None if problem == ONLY_THE_ADDRESS else problem,
                    )
                gate = RenderGate(
                    name,
                    self.channel,
                    self.commands,
                    self.version,
                    item.task,
                    cache_identity,
                    turn=lambda: self.turns.wait(name),
                )
                sequence = (
                    SequenceGate(
                        {row: place for place, row in enumerate(item.sequence)},
                        dict(zip(item.sequence, item.attempts, strict=True)) if item.attempts else None,
                    )
                    if item.sequence is not None
                    else None
                )
                if sequence is not None:
                    gate.on_run = lambda: self.follow_releases(name, sequence)
                # a resume: EvalScope validates and reads its cache before it loads the dataset, and the
                # parent must see the prompts (recorded hashes) and repair the cache before either happens
                loaded = load_separately(item.task, name) if item.task.get("use_cache") else None
            if loaded is not None:
                gate.wait(loaded)
            with self.load_lock.turn() as end_turn:
                gate.loaded = end_turn  # the turn ends when run_task's own load returns (or run_task does)
                install_evaluator(
                    name,
                    self.channel,
                    self.errors,
                    gate.install,
                    last_prediction=lambda: self.turns.done(name),
                    gate=sequence,
                    repeats=int(item.task.get("repeats") or 1),
                    request_seeds=item.request_seeds,
                )
                prepare_code_execution(name, self.spec.code_sandbox)

                # import cost: evalscope, only on this path
                from evalscope import TaskConfig, run_task

                # the worker holds no key: the recording proxy adds the server's to what it forwards
                run_task(TaskConfig(**task_kwargs, api_key="EMPTY"))
            if not gate.passed:
                raise RuntimeError(f"EvalScope finished without loading the {name} dataset")
            self.channel.emit(
                Finished(benchmark=name, ran=True, rerun_review=bool(task_kwargs.get("rerun_review")))
            )
        except NotRun:
            self.channel.emit(Finished(benchmark=name, ran=False))
        except BaseException as exc:
            raise BenchmarkFailed(name, exc) from exc
        finally:
            self.turns.done(name)  # ended in any way: the next benchmark may send

    def follow_releases(self, name: str, gate: SequenceGate) -> None:
        """A thread applying the parent's ``ReleaseCommand``/``HaltCommand`` to ``gate`` until it halts; any
        other command (end of input included) halts it too — nothing is sent without the parent."""

        def follow() -> None:
            while True:
                try:
                    command = self.commands.next(name)
                except RuntimeError:
                    gate.halt()
                    return
                if isinstance(command, ReleaseCommand):
                    gate.release(command.units)
                    continue
                gate.halt()  # HaltCommand, or anything else (end of input): nothing more is sent
                return

        threading.Thread(target=follow, name=f"evalpipe-{name}-releases", daemon=True).start()

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
    # EvalScope is imported before the spec is read: the parent starts the worker when the run starts and
    # sends the spec when its EvalScope stage does; a failed import is reported once the spec names the
    # benchmarks, as the first benchmark's failure
    try:
        preload()
        early: BaseException | None = None
    except Exception as exc:
        early = exc
    first = lines.readline()
    if not first.strip():  # the run ended before its EvalScope stage: nothing to do
        return 0
    spec = WorkerSpec.model_validate_json(first)
    if spec.home is not None:
        move_home(spec.home)
    channel = Channel(spec.channel_fd)
    failed: Failed | None = None
    try:
        if early is not None:
            raise early
        Worker(spec, channel, lines).run()
        return 0
    except BenchmarkFailed as exc:
        # the event first: the traceback goes to the log, which may be on the file system that is full
        failed = failed_event(exc.benchmark, str(exc), exc.__cause__ or exc)
        with contextlib.suppress(OSError):
            traceback.print_exception(exc.__cause__ or exc)
        return 1
    except BaseException as exc:  # before any benchmark started (EvalScope import): the first one failed
        first_benchmark = spec.benchmarks[0].benchmark if spec.benchmarks else ""
        failed = failed_event(first_benchmark, f"{type(exc).__name__}: {exc}", exc)
        with contextlib.suppress(OSError):
            traceback.print_exception(exc)
        return 1
    finally:
        # a parent that is gone (broken pipe) cannot be told: the worker still ends
        if failed is not None:
            with contextlib.suppress(OSError):
                channel.emit(failed)
        with contextlib.suppress(OSError):
            channel.close()
        if failed is not None:
            # the other benchmarks' threads may still be in EvalScope's thread pools, which interpreter exit
            # would wait for: leave now (the parent ends the process group and what it started anyway), once
            # the children EvalScope forked (math scoring) are reaped here — not orphans for init to reap
            _end_children()
            sys.stderr.flush()
            os._exit(1)


def move_home(home: WorkerHome) -> None:
    """A worker started before its run directory existed moves into it: what its import wrote so far is
    appended to the run's EvalScope log, which then takes stdout and stderr (file descriptors 1 and 2, so
    EvalScope's logging handlers, tqdm and tracebacks follow), and the run directory becomes the working
    directory.  Nothing else runs yet (the spec is the first line), so no line is lost or reordered."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    with open(home.log, "ab") as log, open(home.early_log, "rb") as early:
        shutil.copyfileobj(early, log)
        log.flush()
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    os.chdir(home.cwd)


def failed_event(benchmark: str, error: str, exc: BaseException) -> Failed:
    """The ``Failed`` event of ``exc``, naming the file a refused write was for (full disk, quota, read-only)."""
    disk = disk_error_in(exc)
    path = disk.filename if disk is not None and isinstance(disk.filename, str) else None
    return Failed(
        benchmark=benchmark,
        error=error[:2000],
        refused_path=path,
        refused_errno=disk.errno if disk is not None else None,
    )


def _end_children() -> None:
    """Kill and reap the processes this worker's EvalScope started through ``multiprocessing``."""
    import multiprocessing  # import cost: 9 modules the worker's import does without (EvalScope loads them)

    for child in multiprocessing.active_children():
        with contextlib.suppress(Exception):
            child.kill()
            child.join(timeout=5)


def leave(code: int) -> NoReturn:
    """End the worker as a normal exit would, without tearing down the ~2,000 modules EvalScope's scoring
    imported: the parent waits for this exit at the end of its EvalScope stage, and that teardown took
    0.5-0.9 s of every run.  What a normal exit does that matters is done first — the other non-daemon
    threads joined, the exit handlers run (multiprocessing's children and pools, logging, thread pools), the
    standard streams flushed — then ``os._exit`` with the same code."""
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":  # the guard LiveCodeBench's spawned test processes rely on
    leave(main())
