"""Parent side of the EvalScope worker: start it, talk to it, show progress, always clean it up.

One worker process serves every benchmark of the stage (one EvalScope import, not one per benchmark);
its events name their benchmark and are routed to it by a reader thread, so the stage can wait on each
benchmark from its own thread.  The worker (``evalpipe.evalscope_bridge.worker``) runs in its own
session/process group with:

* stdout and stderr appended to ``logs/evalscope.log`` (EvalScope's log, tqdm bars, tracebacks), with
  colours off (``NO_COLOR``), so the terminal only shows evalpipe's own progress display;
* a private HF ``datasets`` cache (``HF_DATASETS_CACHE``), new for each worker: the cache keys a local
  dataset directory by folder name and README, so a second directory named ``gsm8k`` — or this run's own
  directory after a re-materialization — would otherwise silently load the rows of the first (within
  one worker each benchmark has its own folder, ``datasets/<benchmark>``);
* the hub clients offline: every dataset is local, nothing may be fetched.

On any exit path (error, interrupt) the whole process group is terminated, then killed.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from evalpipe.artifacts import RunDir
from evalpipe.artifacts.schema.sandbox import SandboxRecord
from evalpipe.errors import EvalpipeError
from evalpipe.processes.group import spawn, stop_group

#: Seconds the worker gets to exit after SIGTERM before its process group is killed.
WORKER_GRACE_S = 10.0


class EvalscopeFailed(EvalpipeError):
    """EvalScope could not run a benchmark (its traceback is in logs/evalscope.log)."""


ProgressCallback = Callable[[dict[str, Any]], None]


def _package_root() -> str:
    import evalpipe

    return str(Path(evalpipe.__file__).resolve().parents[1])


#: What the reader thread hands a benchmark when the worker's channel ends (the process is gone).
_GONE: dict[str, Any] = {"event": "_gone"}


class WorkerProcess:
    """The EvalScope worker for the stage's benchmarks; use as a context manager.

    ``start`` names every benchmark with its task; then, per benchmark, ``rendered`` → ``run`` (or
    ``stop``), from any thread (one thread per benchmark when they run together); ``wait_exit`` once every
    benchmark has finished.
    """

    def __init__(
        self,
        rundir: RunDir,
        *,
        api_key_env: str | None = None,
        code_sandbox: SandboxRecord | None = None,
    ) -> None:
        self.rundir = rundir
        self.api_key_env = api_key_env
        self.code_sandbox = code_sandbox
        self.benchmarks: list[str] = []
        self.proc: subprocess.Popen[bytes] | None = None
        self._channel: TextIO | None = None
        self._cache_dir: str | None = None
        self._log: BinaryIO | None = None
        self._events: dict[str, queue.SimpleQueue[dict[str, Any]]] = {}
        self._reader: threading.Thread | None = None
        self._send_lock = threading.Lock()
        #: The ``failed`` event, once the worker reported one: every benchmark waiting raises its error.
        self._failure: dict[str, Any] | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self, tasks: Sequence[tuple[str, dict[str, Any]]], *, together: bool = False) -> None:
        """Start the worker for ``tasks`` (benchmark, task), in the order they start: one after another,
        or side by side (``together``)."""
        from evalpipe.evalscope_bridge.worker import BenchmarkTask, WorkerSpec

        self.benchmarks = [name for name, _ in tasks]
        self._events = {name: queue.SimpleQueue() for name in self.benchmarks}
        self.rundir.logs_dir.mkdir(parents=True, exist_ok=True)
        self.rundir.hf_cache_dir.mkdir(parents=True, exist_ok=True)
        self._cache_dir = tempfile.mkdtemp(prefix="evalscope-", dir=self.rundir.hf_cache_dir)
        self._log = open(self.rundir.evalscope_log, "ab")
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        names = ", ".join(self.benchmarks)
        how = "side by side" if together else "one after another"
        self._log.write(
            f"\n===== evalpipe: EvalScope worker for {names} ({how}) started {stamp} =====\n".encode()
        )
        self._log.flush()
        read_fd, write_fd = os.pipe()
        env = dict(os.environ)
        env.update(
            {
                "NO_COLOR": "1",
                "PYTHONUNBUFFERED": "1",
                "HF_DATASETS_CACHE": self._cache_dir,
                "HF_DATASETS_OFFLINE": "1",
                "HF_HUB_OFFLINE": "1",
                "TOKENIZERS_PARALLELISM": "false",
                "PYTHONPATH": os.pathsep.join(p for p in (_package_root(), env.get("PYTHONPATH")) if p),
            }
        )
        spec = WorkerSpec(
            benchmarks=[BenchmarkTask(benchmark=name, task=task) for name, task in tasks],
            together=together,
            api_key_env=self.api_key_env,
            errors_log=str(self.rundir.evalscope_errors.resolve()),
            channel_fd=write_fd,
            code_sandbox=self.code_sandbox,
        )
        try:
            self.proc = spawn(
                [sys.executable, "-m", "evalpipe.evalscope_bridge.worker"],
                stdin=subprocess.PIPE,
                stdout=self._log,
                stderr=self._log,
                pass_fds=(write_fd,),
                env=env,
                cwd=str(self.rundir.root.resolve()),
            )
        finally:
            os.close(write_fd)  # the child holds the only write end: EOF means it is gone
        self._log.write(
            f"===== evalpipe: worker pid {self.proc.pid} (its own process group) =====\n".encode()
        )
        self._log.flush()
        self._channel = os.fdopen(read_fd, "r", encoding="utf-8")
        self._reader = threading.Thread(target=self._route_events, name="evalscope-events", daemon=True)
        self._reader.start()
        self._send(spec.model_dump())

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
            self._log.close()
            self._log = None
        if self._cache_dir is not None:
            shutil.rmtree(self._cache_dir, ignore_errors=True)
            self._cache_dir = None

    def __enter__(self) -> WorkerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ protocol
    def _route_events(self) -> None:
        """Reader thread: each event to the queue of the benchmark it names; at EOF, ``_GONE`` to all."""
        assert self._channel is not None
        try:
            for line in self._channel:
                event: dict[str, Any] = json.loads(line)
                if event.get("event") == "failed" and self._failure is None:
                    self._failure = event
                target = self._events.get(event.get("benchmark", ""))
                if target is not None:
                    target.put(event)
        except (OSError, ValueError):  # the channel closed under us (close() during a read)
            pass
        finally:
            for q in self._events.values():
                q.put(_GONE)

    def _send(self, obj: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        try:
            with self._send_lock:
                self.proc.stdin.write((json.dumps(obj, ensure_ascii=False) + "\n").encode())
                self.proc.stdin.flush()
        except BrokenPipeError:
            self._fail(str(obj.get("benchmark", "")), "the worker exited before it was told what to do")

    def _next_event(self, benchmark: str) -> dict[str, Any]:
        event = self._events[benchmark].get()
        if event is _GONE:
            self._events[benchmark].put(_GONE)  # a later call sees the end too
            self._fail(benchmark, "the worker exited unexpectedly")
        if event.get("event") == "failed":
            self._fail(benchmark, event.get("error") or "unknown error")
        return event

    def _fail(self, benchmark: str, why: str) -> None:
        proc = self.proc
        code = None
        if proc is not None:
            try:
                code = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                code = None
        failure = self._failure
        if failure is not None:  # the benchmark that failed, whichever benchmark was waiting
            benchmark, why = (
                str(failure.get("benchmark") or benchmark),
                failure.get("error") or "unknown error",
            )
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

    def rendered(self, benchmark: str) -> dict[str, Any]:
        """The ``rendered`` event of ``benchmark`` (blocks until the worker has imported and rendered it)."""
        event = self._next_event(benchmark)
        if event.get("event") != "rendered":
            self._fail(benchmark, f"unexpected first event {event.get('event')!r}")
        return event

    def run(
        self, benchmark: str, task: dict[str, Any], on_event: ProgressCallback | None = None
    ) -> dict[str, Any]:
        """Let the worker run ``benchmark``'s ``task``; returns its ``finished`` event (with
        ``rerun_review``)."""
        self._send({"benchmark": benchmark, "action": "run", "task": task})
        info: dict[str, Any] = {}
        while True:
            event = self._next_event(benchmark)
            name = event.get("event")
            if name == "cache_identity":
                info["cache_identity"] = event
            if on_event is not None:
                on_event(event)
            if name == "finished":
                return {**event, **info}

    def stop(self, benchmark: str) -> None:
        """Tell the worker not to run a rendered ``benchmark``."""
        self._send({"benchmark": benchmark, "action": "exit"})
        while self._next_event(benchmark).get("event") != "finished":
            pass

    def wait_exit(self) -> None:
        """Once every benchmark has finished: the worker exits, and must exit 0."""
        assert self.proc is not None
        code = self.proc.wait()
        if code != 0:
            self._fail(self.benchmarks[-1] if self.benchmarks else "", "non-zero exit after finishing")
