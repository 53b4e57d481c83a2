"""How evalpipe starts a process that runs model-written code: always inside the run's sandbox.

A benchmark whose answers are programs never starts a process itself.  Its hooks receive a
``ProgramLauncher`` — ``Benchmark.prepare_review`` in the EvalScope worker (the review), and
``ReviewContext.launcher`` in ``post_review`` (a re-check) — and start every test process with
``launcher.start(argv, ...)``: the argv wrapped by the run's sandbox (``evalpipe.sandbox.run.wrap``:
namespaces, read-only interpreter view, private tmp as cwd and ``$HOME``, environment allow-list, rlimits,
a pids cgroup when root), and the whole tree killed when the ``with`` block ends, however it ends.  One
place decides how model code runs, whatever the benchmark.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO

import evalpipe
from evalpipe.artifacts.schema.sandbox import Denial
from evalpipe.config.code_execution import SandboxKind, SandboxLimits
from evalpipe.sandbox.run import (
    SandboxedCommand,
    SandboxPolicy,
    classify,
    exception_denial,
    exit_of,
    kill_tree,
    program_pid,
    wrap,
)
from evalpipe.sandbox.view import package_dir

#: How long ``RunningProgram`` waits for the killed tree's launcher to be reaped.
_REAP_TIMEOUT_S = 30.0
File = int | IO[bytes] | None


@dataclass
class RunningProgram:
    """One started test process: its launcher process and what the sandbox can tell about it."""

    proc: subprocess.Popen[bytes]
    sandbox: SandboxKind
    limits: SandboxLimits
    started: float  # time.monotonic() at the launch
    _command: SandboxedCommand
    _pid: int | None = field(default=None, repr=False)
    _stopped: bool = field(default=False, repr=False)

    def program_pid(self) -> int | None:
        """The host pid of the program itself (below bwrap/unshare and the namespace's init), cached."""
        if self._pid is None:
            self._pid = program_pid(self.sandbox, self.proc.pid)
        return self._pid

    def stop(self) -> int | None:
        """Kill the whole tree (if still running) and reap the launcher; its return code.  Idempotent."""
        if not self._stopped:  # once: afterwards the process group id may belong to someone else
            self._stopped = True
            kill_tree(self.proc)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=_REAP_TIMEOUT_S)
        return self.proc.returncode

    def denied(self, exception: str | None = None) -> list[Denial]:
        """What the sandbox refused the program: the way its process ended (a limit's signal, the pids
        cgroup) and ``exception`` — the program's exception as its harness reported it (a ``repr`` or a
        traceback's last line).  Stops the tree first; call inside the ``start`` block.  A time limit the
        caller enforces itself (a harness's timeout) is the caller's to report, not a denial."""
        self.stop()
        code, signum = exit_of(self.sandbox, self.proc.returncode, False)
        # CPU seconds are not known here (the launcher's rusage misses the namespace's processes): the
        # CPU limit shows as SIGXCPU, which ``classify`` reads from the signal alone
        hit_pids = self._command.hit_process_limit()
        out = classify(self.sandbox, code, signum, False, "", self.limits, 0.0, hit_pids)
        found = exception_denial(self.sandbox, exception) if exception else None
        if found is not None and all(d.kind != found.kind for d in out):
            out.append(found)
        return out


@dataclass(frozen=True)
class ProgramLauncher:
    """Starts processes that run model-written code under one sandbox policy (kind, limits, view)."""

    policy: SandboxPolicy

    @classmethod
    def for_sandbox(
        cls, kind: SandboxKind, limits: SandboxLimits | None = None, extra_dirs: Sequence[str] = ()
    ) -> ProgramLauncher:
        """A launcher for ``kind``; the ``evalpipe`` package is visible (read-only) to its processes,
        since evalpipe's test processes are its own modules (``python -m evalpipe...``)."""
        dirs = (package_dir(evalpipe.__file__), *extra_dirs)
        return cls(SandboxPolicy(kind, limits or SandboxLimits(), extra_dirs=tuple(dirs)))

    @property
    def kind(self) -> SandboxKind:
        return self.policy.kind

    @contextlib.contextmanager
    def start(
        self,
        argv: Sequence[str],
        *,
        stdin: File = None,
        stdout: File = None,
        stderr: File = None,
        pass_fds: Sequence[int] = (),
    ) -> Iterator[RunningProgram]:
        """Start ``argv`` in the sandbox (its own session); on leaving the block its whole process tree is
        killed and reaped, and the sandbox's host-side state (tmp dir, pids cgroup) removed."""
        with wrap(argv, self.policy) as command:
            proc = command.popen(stdin=stdin, stdout=stdout, stderr=stderr, pass_fds=tuple(pass_fds))
            running = RunningProgram(proc, self.kind, self.policy.limits, time.monotonic(), command)
            try:
                yield running
            finally:
                running.stop()
                if proc.stdin is not None:
                    with contextlib.suppress(OSError):
                        proc.stdin.close()
