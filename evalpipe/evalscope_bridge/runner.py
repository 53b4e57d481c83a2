"""Parent side of the EvalScope worker: start it, talk to it, show progress, always clean it up.

The worker (``evalpipe.evalscope_bridge.worker``) runs in its own session/process group with:

* stdout and stderr appended to ``logs/evalscope.log`` (EvalScope's log, tqdm bars, tracebacks), with
  colours off (``NO_COLOR``), so the terminal only shows evalpipe's own progress display;
* a private HF ``datasets`` cache (``HF_DATASETS_CACHE``): the cache keys a local dataset directory by
  folder name and README, so a second directory named ``gsm8k`` — or this run's own directory after a
  re-materialization — would otherwise silently load the rows of the first;
* the hub clients offline: every dataset is local, nothing may be fetched.

On any exit path (error, interrupt) the whole process group is terminated, then killed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from evalpipe.errors import EvalpipeError
from evalpipe.process_group import spawn, stop_group
from evalpipe.rundir import RunDir
from evalpipe.schema.sandbox import SandboxRecord

#: Seconds the worker gets to exit after SIGTERM before its process group is killed.
WORKER_GRACE_S = 10.0


class EvalscopeFailed(EvalpipeError):
    """EvalScope could not run a benchmark (its traceback is in logs/evalscope.log)."""


ProgressCallback = Callable[[dict[str, Any]], None]


def _package_root() -> str:
    import evalpipe

    return str(Path(evalpipe.__file__).resolve().parents[1])


class WorkerProcess:
    """One EvalScope worker for one benchmark; use as a context manager."""

    def __init__(
        self,
        rundir: RunDir,
        benchmark: str,
        *,
        api_key_env: str | None = None,
        code_sandbox: SandboxRecord | None = None,
    ) -> None:
        self.rundir = rundir
        self.benchmark = benchmark
        self.api_key_env = api_key_env
        self.code_sandbox = code_sandbox
        self.proc: subprocess.Popen[bytes] | None = None
        self._channel: TextIO | None = None
        self._cache_dir: str | None = None
        self._log: BinaryIO | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self, task: dict[str, Any]) -> None:
        from evalpipe.evalscope_bridge.worker import WorkerSpec

        self.rundir.logs_dir.mkdir(parents=True, exist_ok=True)
        self.rundir.hf_cache_dir.mkdir(parents=True, exist_ok=True)
        self._cache_dir = tempfile.mkdtemp(prefix=f"{self.benchmark}-", dir=self.rundir.hf_cache_dir)
        self._log = open(self.rundir.evalscope_log, "ab")
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        self._log.write(
            f"\n===== evalpipe: EvalScope worker for {self.benchmark} started {stamp} =====\n".encode()
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
            benchmark=self.benchmark,
            task=task,
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
    def _send(self, obj: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(obj, ensure_ascii=False) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            self._fail("the worker exited before it was told what to do")

    def _next_event(self) -> dict[str, Any]:
        assert self._channel is not None
        line = self._channel.readline()
        if not line:
            self._fail("the worker exited unexpectedly")
        event: dict[str, Any] = json.loads(line)
        if event.get("event") == "failed":
            self._fail(event.get("error") or "unknown error")
        return event

    def _fail(self, why: str) -> None:
        code = None
        if self.proc is not None:
            try:
                code = self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                code = None
        raise EvalscopeFailed(
            f"EvalScope failed on {self.benchmark}: {why}",
            details=[
                f"exit code {code}" if code is not None else "still running",
                f"log: {self.rundir.evalscope_log}",
            ],
        )

    def render(self, task: dict[str, Any]) -> dict[str, Any]:
        """Start the worker and return its ``rendered`` event (samples as the adapter built them)."""
        self.start(task)
        return self.rendered()

    def rendered(self) -> dict[str, Any]:
        """The ``rendered`` event of a started worker (blocks until it has imported and rendered)."""
        event = self._next_event()
        if event.get("event") != "rendered":
            self._fail(f"unexpected first event {event.get('event')!r}")
        return event

    def run(self, task: dict[str, Any], on_event: ProgressCallback | None = None) -> dict[str, Any]:
        """Let the worker run ``task``; returns the ``finished`` event (with ``rerun_review``)."""
        self._send({"action": "run", "task": task})
        info: dict[str, Any] = {}
        while True:
            event = self._next_event()
            name = event.get("event")
            if name == "cache_identity":
                info["cache_identity"] = event
            if on_event is not None:
                on_event(event)
            if name == "finished":
                assert self.proc is not None
                code = self.proc.wait()
                if code != 0:
                    self._fail("non-zero exit after finishing")
                return {**event, **info}

    def stop(self) -> None:
        """Tell a rendered worker to exit without running."""
        self._send({"action": "exit"})
        while self._next_event().get("event") != "finished":
            pass
        assert self.proc is not None
        self.proc.wait(timeout=60)
