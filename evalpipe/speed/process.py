"""Run a benchmark client as the leader of its own process group, bounded in wall time.

``evalscope perf`` and ``bench_serving`` start event loops, tokenizer threads and (EvalScope) worker
processes; a round that overruns ``round_timeout_s`` or a Ctrl-C must end all of them, so the client is
started with :func:`evalpipe.processes.group.spawn` (a new session) and ended with ``stop_group`` (SIGTERM to the
group, a short grace, then SIGKILL).  Output goes to a log file in the round's directory, never to evalpipe's
console.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from evalpipe.processes.group import kill_group, spawn, stop_group

#: Seconds a client stopped for overrunning (or an interrupt) gets between SIGTERM and SIGKILL.
GRACE_S = 10.0


@dataclass(frozen=True)
class ClientExit:
    """How a client run ended."""

    returncode: int | None  # None when it had to be killed
    timed_out: bool
    wall_s: float


def run_bounded(
    argv: Sequence[str],
    *,
    log_path: Path,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> ClientExit:
    """Run ``argv`` to completion or until ``timeout_s``; stdout+stderr appended to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(log_path, "ab") as log:
        proc = spawn(
            argv, stdout=log, stderr=subprocess.STDOUT, env=dict(env) if env is not None else None, cwd=cwd
        )
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            stop_group(proc, GRACE_S)
            return ClientExit(None, True, time.monotonic() - start)
        except BaseException:  # Ctrl-C / SIGTERM of evalpipe: the client must not outlive it
            stop_group(proc, GRACE_S)
            raise
        kill_group(proc)  # stray children of a finished client; the leader is already reaped
    return ClientExit(proc.returncode, False, time.monotonic() - start)
