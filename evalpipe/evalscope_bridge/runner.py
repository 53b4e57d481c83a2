"""Parent side of the EvalScope worker: start it, talk to it, show progress, always clean it up.

One worker process serves every benchmark of the stage (one EvalScope import, not one per benchmark).
The run spawns it when it starts (``spawn``), so that the import overlaps sampling, materialising,
preflight and launch, and hands it to the stage, which gives it its tasks (``start``); the lines both ways
are ``protocol``'s.  Its events name their benchmark and are routed to it by a reader thread, so the stage can wait on each
benchmark from its own thread.  The worker (``evalpipe.evalscope_bridge.worker``) runs in its own
session/process group with:

* stdout and stderr appended to ``logs/evalscope.log`` (EvalScope's log, tqdm bars, tracebacks), with
  colours off (``NO_COLOR``), so the terminal only shows evalpipe's own progress display;
* a private HF ``datasets`` cache (``HF_DATASETS_CACHE``), new for each worker: the cache keys a local
  dataset directory by folder name and README, so a second directory named ``gsm8k`` — or this run's own
  directory after a re-materialization — would otherwise silently load the rows of the first (within
  one worker each benchmark has its own folder, ``datasets/<benchmark>``);
* the hub clients offline: every dataset is local, nothing may be fetched;
* an allow-listed environment (``evalpipe.processes.environment``): no API key or other secret of the run's environment —
  the recording proxy adds the server's key to what it forwards.

On any exit path (error, interrupt) the whole process group is terminated, then killed.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, NoReturn, TextIO

from evalpipe.artifacts import RunDir
from evalpipe.artifacts.disk import disk_errors, disk_full, refused_write
from evalpipe.artifacts.schema.sandbox import SandboxRecord
from evalpipe.errors import EvalpipeError
from evalpipe.evalscope_bridge.prestart import (
    WORKER_GRACE_S,
    Prestarted,
    WorkerLeader,
    launch,
    stamp,
    take_prestarted,
)
from evalpipe.evalscope_bridge.protocol import (
    BenchmarkTask,
    CacheIdentity,
    ExitCommand,
    Failed,
    Finished,
    HaltCommand,
    ReleaseCommand,
    Rendered,
    RunCommand,
    WorkerEvent,
    WorkerHome,
    WorkerSpec,
    encode,
    parse_event,
)
from evalpipe.processes.group import stop_group


class EvalscopeFailed(EvalpipeError):
    """EvalScope could not run a benchmark (its traceback is in logs/evalscope.log)."""


ProgressCallback = Callable[[WorkerEvent], None]


@dataclass(frozen=True)
class Ran:
    """How one benchmark's ``run`` ended: its ``Finished`` event, and on a resume its ``CacheIdentity``."""

    finished: Finished
    cache_identity: CacheIdentity | None = None


class WorkerProcess:
    """The EvalScope worker for the stage's benchmarks; use as a context manager.

    ``spawn`` starts the process (it imports EvalScope, then waits: the run does this when it starts);
    ``start`` names every benchmark with its task (spawning first if nobody did); then, per benchmark,
    ``rendered`` → ``run`` (or ``stop``), from any thread (one thread per benchmark when they run together);
    ``wait_exit`` once every benchmark has finished.  ``close`` ends the process on every path, used or not.
    """

    def __init__(self, rundir: RunDir) -> None:
        self.rundir = rundir
        self.benchmarks: list[str] = []
        self.proc: WorkerLeader | None = None
        self._channel: TextIO | None = None
        #: The channel's write end as the worker numbers it (the spec tells the worker).
        self._channel_fd: int | None = None
        self._cache_dir: str | None = None
        self._log: BinaryIO | None = None
        self._spawned_at = ""
        #: Per benchmark, its events in order; ``None`` once the channel has ended (the process is gone).
        self._events: dict[str, queue.SimpleQueue[WorkerEvent | None]] = {}
        #: Guards ``_events`` and ``_gone`` between ``start`` and the reader thread.
        self._routes = threading.Lock()
        self._gone = False
        self._reader: threading.Thread | None = None
        self._send_lock = threading.Lock()
        #: The ``Failed`` event, once the worker reported one: every benchmark waiting raises its error.
        self._failure: Failed | None = None
        #: The worker taken over from ``prestart`` (its temporary home is removed by ``close``).
        self._early: Prestarted | None = None

    # ------------------------------------------------------------------ lifecycle
    def spawn(self) -> None:
        """Start the worker process; it imports EvalScope and waits for ``start``.  Idempotent.

        A worker this process started early (``prestart``) is taken over instead of starting another: its
        import is then already under way or done."""
        if self.proc is not None:
            return
        self.rundir.logs_dir.mkdir(parents=True, exist_ok=True)
        self._log = open(self.rundir.evalscope_log, "ab", buffering=0)  # each banner whole
        early = take_prestarted()
        if early is not None:
            self.proc, self._spawned_at, self._early = early.proc, early.spawned_at, early
            self._channel_fd, read_fd = early.channel_fd, early.read_fd
            self._banner(
                f"\n===== evalpipe: EvalScope worker started {self._spawned_at}, before this run directory "
                f"existed: worker pid {self.proc.pid} (its own process group); its import output follows "
                "once it is given its tasks =====\n".encode()
            )
        else:
            self.rundir.hf_cache_dir.mkdir(parents=True, exist_ok=True)
            self._cache_dir = tempfile.mkdtemp(prefix="evalscope-", dir=self.rundir.hf_cache_dir)
            self._spawned_at = stamp()
            self.proc, self._channel_fd, read_fd = launch(
                self._cache_dir, cwd=str(self.rundir.root.resolve()), log=self._log
            )
            self._banner(
                f"\n===== evalpipe: EvalScope worker started {self._spawned_at}: worker pid {self.proc.pid} "
                "(its own process group) =====\n".encode()
            )
        self._channel = os.fdopen(read_fd, "r", encoding="utf-8")
        self._reader = threading.Thread(target=self._route_events, name="evalscope-events", daemon=True)
        self._reader.start()

    def start(
        self,
        tasks: Sequence[tuple[str, dict[str, Any]]],
        *,
        together: bool = False,
        code_sandbox: SandboxRecord | None = None,
        sequences: dict[str, list[tuple[str, int]]] | None = None,
        attempts: dict[str, list[int]] | None = None,
        request_seeds: dict[str, dict[str, dict[int, int]]] | None = None,
    ) -> None:
        """Give the worker ``tasks`` (benchmark, task), in the order they start: one after another, or side by
        side (``together``); ``sequences``: the
        benchmarks whose rows go in that order and only as far as ``release`` lets them (``halt`` ends them);
        ``attempts``: per row of a sequence, how many of its attempts may be sent (an internal pilot's);
        ``request_seeds``: benchmark → subset → sample index → the seed of that attempt's request."""
        self.spawn()
        assert self._log is not None and self._channel_fd is not None
        with self._routes:  # before the spec is sent: every event the worker emits has its queue
            self.benchmarks = [name for name, _ in tasks]
            self._events = {name: queue.SimpleQueue() for name in self.benchmarks}
            if self._gone:  # the worker ended while it waited for its tasks
                for q in self._events.values():
                    q.put(None)
        names = ", ".join(self.benchmarks)
        how = "side by side" if together else "one after another"
        self._banner(
            f"===== evalpipe: EvalScope worker for {names} ({how}) started {self._spawned_at}, "
            f"given its tasks {stamp()} =====\n".encode()
        )
        spec = WorkerSpec(
            benchmarks=[
                BenchmarkTask(
                    benchmark=name,
                    task=task,
                    sequence=(sequences or {}).get(name),
                    attempts=(attempts or {}).get(name),
                    request_seeds=(request_seeds or {}).get(name),
                )
                for name, task in tasks
            ],
            together=together,
            errors_log=str(self.rundir.evalscope_errors.resolve()),
            channel_fd=self._channel_fd,
            code_sandbox=code_sandbox,
            home=None
            if self._early is None
            else WorkerHome(
                cwd=str(self.rundir.root.resolve()),
                log=str(self.rundir.evalscope_log.resolve()),
                early_log=str(self._early.log_path),
            ),
        )
        self._send(spec, self.benchmarks[0] if self.benchmarks else "")

    def _banner(self, line: bytes) -> None:
        """One evalpipe line in ``logs/evalscope.log`` (between the worker's own output)."""
        assert self._log is not None
        with disk_errors(self.rundir.evalscope_log):
            self._log.write(line)

    def close(self) -> None:
        """Idempotent: end the worker's process group and release its pipes, log and cache."""
        proc, self.proc = self.proc, None
        if proc is not None:
            # SIGTERM, up to 10 s for the worker, then SIGKILL of what it leaves (LiveCodeBench test processes)
            stop_group(proc, WORKER_GRACE_S, leader_only=True)
        if proc is not None and proc.stdin is not None and not proc.stdin.closed:
            try:
                proc.stdin.close()
            except OSError:
                pass
        if self._reader is not None:
            self._reader.join(timeout=30)  # the group is gone: the channel is at EOF
            self._reader = None
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        if self._log is not None:
            # on every path, also a full disk's: a banner that cannot be written must not hide why the run ended
            with contextlib.suppress(OSError):
                if proc is not None and not self.benchmarks:  # an early start the run never reached
                    self._log.write(
                        b"===== evalpipe: the worker was stopped before it was given any task =====\n"
                    )
            self._log.close()
            self._log = None
        if self._cache_dir is not None:
            shutil.rmtree(self._cache_dir, ignore_errors=True)
            self._cache_dir = None
        early, self._early = self._early, None
        if early is not None:
            shutil.rmtree(early.home, ignore_errors=True)

    def __enter__(self) -> WorkerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ protocol
    def _route_events(self) -> None:
        """Reader thread: each event to the queue of the benchmark it names; at EOF, ``None`` to all."""
        assert self._channel is not None
        try:
            for line in self._channel:
                event = parse_event(line)
                if isinstance(event, Failed) and self._failure is None:
                    self._failure = event
                if isinstance(event, Failed) and not event.benchmark:  # the worker's: every benchmark's
                    for q in self._events.values():
                        q.put(event)
                    continue
                target = self._events.get(event.benchmark)
                if target is not None:
                    target.put(event)
        except (OSError, ValueError):  # the channel closed under us (close() during a read), or not a line
            pass
        finally:
            with self._routes:
                self._gone = True
                for q in self._events.values():
                    q.put(None)

    def _send(
        self,
        line: WorkerSpec | RunCommand | ExitCommand | ReleaseCommand | HaltCommand,
        benchmark: str,
        *,
        may_be_gone: bool = False,
    ) -> None:
        """One line to the worker; ``may_be_gone``: a release or halt racing the worker's normal exit after its
        last benchmark finished is not an error (its failure, if any, is raised where the stage waits)."""
        assert self.proc is not None and self.proc.stdin is not None
        try:
            with self._send_lock:
                self.proc.stdin.write((encode(line) + "\n").encode())
                self.proc.stdin.flush()
        except BrokenPipeError:
            if may_be_gone:
                return
            self._fail(benchmark, "the worker exited before it was told what to do")

    def _next_event(self, benchmark: str) -> WorkerEvent:
        event = self._events[benchmark].get()
        if event is None:
            self._events[benchmark].put(None)  # a later call sees the end too
            self._fail(benchmark, "the worker exited unexpectedly")
        if isinstance(event, Failed):
            self._fail(benchmark, event.error or "unknown error")
        return event

    def _fail(self, benchmark: str, why: str) -> NoReturn:
        failure = self._failure
        if failure is not None and failure.refused_path and failure.refused_errno is not None:
            # a refused write: at once (EvalScope itself carries on; the caller ends the worker)
            err = OSError(failure.refused_errno, os.strerror(failure.refused_errno))
            raise disk_full(failure.refused_path, err, stage="evalscope")
        proc = self.proc
        code = None
        if proc is not None:
            try:
                code = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                code = None
        failure = self._failure
        if failure is not None:  # the benchmark that failed, whichever benchmark was waiting
            benchmark, why = failure.benchmark or benchmark, failure.error or "unknown error"
        refused = refused_write(self.rundir.evalscope_dir)
        if refused is not None:  # the worker died without saying why, and its outputs cannot be written
            raise disk_full(self.rundir.evalscope_dir, refused, stage="evalscope")
        raise EvalscopeFailed(
            f"EvalScope failed on {benchmark}: {why}",
            details=[
                f"exit code {code}" if code is not None else "still running",
                f"log: {self.rundir.evalscope_log}",
            ],
        )

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def rendered(self, benchmark: str) -> Rendered:
        """The ``Rendered`` event of ``benchmark`` (blocks until the worker has imported and rendered it)."""
        event = self._next_event(benchmark)
        if not isinstance(event, Rendered):
            self._fail(benchmark, f"unexpected first event {event.event.value!r}")
        return event

    def run(
        self,
        benchmark: str,
        task: dict[str, Any],
        on_event: ProgressCallback | None = None,
        on_sent: Callable[[], None] | None = None,
    ) -> Ran:
        """Let the worker run ``benchmark``'s ``task``; returns how it ended (``Finished``, with
        ``rerun_review``, and the ``CacheIdentity`` of a resume).  ``on_sent`` is called once the run command
        is sent (releases and halts may follow it, never precede it)."""
        self._send(RunCommand(benchmark=benchmark, task=task), benchmark)
        if on_sent is not None:
            on_sent()
        cache_identity: CacheIdentity | None = None
        while True:
            event = self._next_event(benchmark)
            if isinstance(event, CacheIdentity):
                cache_identity = event
            if on_event is not None:
                on_event(event)
            if isinstance(event, Finished):
                return Ran(event, cache_identity)

    def release(self, benchmark: str, units: int) -> None:
        """A gated benchmark may send its rows at sequence positions below ``units``."""
        self._send(ReleaseCommand(benchmark=benchmark, units=units), benchmark, may_be_gone=True)

    def halt(self, benchmark: str) -> None:
        """A gated benchmark sends no further row (the sequential rule stopped)."""
        self._send(HaltCommand(benchmark=benchmark), benchmark, may_be_gone=True)

    def stop(self, benchmark: str) -> None:
        """Tell the worker not to run a rendered ``benchmark``."""
        self._send(ExitCommand(benchmark=benchmark), benchmark)
        while not isinstance(self._next_event(benchmark), Finished):
            pass

    def wait_exit(self) -> None:
        """Once every benchmark has finished: the worker exits, and must exit 0."""
        assert self.proc is not None
        code = self.proc.wait()
        if code != 0:
            self._fail(self.benchmarks[-1] if self.benchmarks else "", "non-zero exit after finishing")
