"""Run a benchmark client as the leader of its own process group, bounded in wall time.

``evalscope perf`` and ``bench_serving`` start event loops, tokenizer threads and (EvalScope) worker
processes; a round that overruns ``round_timeout_s`` or a Ctrl-C must end all of them, so the client runs in
a new session and the whole group is signalled: SIGTERM, a short grace, then SIGKILL.  Output goes to a log
file in the round's directory, never to evalpipe's console.

(The server refactor adds one process-group module for the whole code base; this stays a thin user of the
same three steps until it lands.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

_GRACE_S = 10.0
_POLL_S = 0.1


@dataclass(frozen=True)
class ClientExit:
    """How a client run ended."""

    returncode: int | None  # None when it had to be killed
    timed_out: bool
    wall_s: float


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _end_group(proc: subprocess.Popen[bytes]) -> None:
    _signal_group(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + _GRACE_S
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(_POLL_S)
    _signal_group(proc.pid, signal.SIGKILL)  # whatever the leader left behind, too
    proc.wait()


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
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _end_group(proc)
            return ClientExit(None, True, time.monotonic() - start)
        except BaseException:  # Ctrl-C / SIGTERM of evalpipe: the client must not outlive it
            _end_group(proc)
            raise
        _signal_group(proc.pid, signal.SIGKILL)  # stray children of a finished client
    return ClientExit(proc.returncode, False, time.monotonic() - start)
