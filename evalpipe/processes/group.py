"""Child processes that lead their own process group, and how evalpipe ends them — written once.

A model server, the EvalScope worker and each LiveCodeBench test process start further processes (SGLang's
scheduler and detokenizer, EvalScope's code-review interpreters, a program's own children).  Each is
started with ``start_new_session=True``, so it leads a new session and process group whose id is its pid,
and everything it starts stays in that group: stopping means signalling the *group*, and "stopped" means
no live (non-zombie) process is left in it — the leader having exited is not enough.

* :func:`spawn` starts such a child; with ``die_with_parent`` the child is also signalled when the process
  that started it dies without stopping it (SIGKILL, a crash): a new session is out of reach of the
  terminal's and the parent's group signals, so without this a killed ``evalpipe run`` leaves its model
  server, router and workers running (Linux ``PR_SET_PDEATHSIG``, ``prctl(2)``; elsewhere nothing changes);
* :func:`stop_group` ends it politely: SIGTERM to the group, a bounded wait, then SIGKILL to the group;
* :func:`kill_group` ends it at once (SIGKILL to the group);
* :func:`group_alive` / :func:`wait_group_gone` answer "is anything left?" (from ``/proc`` on Linux).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Literal, Protocol


class GroupLeader(Protocol):
    """What stopping a process group needs of its leader: a ``subprocess.Popen``, or a child forked by the
    fork server (``processes.forkserver.ForkedChild``)."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


#: How a stop ended: nothing was left to stop, the group exited after SIGTERM, or it had to be SIGKILLed.
StopMethod = Literal["exited", "sigterm", "sigkill"]
_POLL_S = 0.05
_KILL_WAIT_S = 30.0  # for the leader to be reaped after SIGKILL
_GONE_WAIT_S = 10.0  # for the rest of the group to vanish after SIGKILL
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _libc_prctl() -> Any:
    """libc's ``prctl`` (Linux), looked up once in the parent: the child between fork and exec only calls it."""
    if not os.uname().sysname == "Linux":
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _libc_prctl()


def _die_with_parent(sig: int) -> Any:
    """A ``preexec_fn`` asking the kernel to send ``sig`` to the child when its parent thread ends.

    The signal follows the *thread* that forked the child, so a process is spawned this way only from a
    thread that outlives it (evalpipe starts and stops a server in the same thread, in one ``with``).  If
    the parent is already gone by the time the child runs this, the child exits at once.
    """
    parent = os.getpid()

    def preexec() -> None:
        die_with_parent_now(sig)
        if os.getppid() != parent:
            os._exit(1)

    return preexec


def die_with_parent_now(sig: int) -> None:
    """In a child, before exec (``spawn``'s ``die_with_parent``) or without one (``processes.forkserver``):
    ``sig`` when its parent thread ends."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, sig, 0, 0, 0)


def spawn(
    argv: Sequence[str],
    *,
    stdin: int | IO[Any] | None = subprocess.DEVNULL,
    stdout: int | IO[Any] | None = None,
    stderr: int | IO[Any] | None = None,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    pass_fds: Sequence[int] = (),
    die_with_parent: int | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` as the leader of a new session (its pid is the process group id).

    ``die_with_parent``: the signal the leader gets if this process dies without stopping it (SIGKILL for a
    server, whose own children follow their leader; SIGTERM for a child evalpipe that stops its own servers).
    """
    return subprocess.Popen(
        list(argv),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        env=env,
        cwd=cwd,
        pass_fds=tuple(pass_fds),
        start_new_session=True,
        preexec_fn=None if die_with_parent is None else _die_with_parent(die_with_parent),
    )


def group_alive(pgid: int) -> bool:
    """True while any non-zombie process is in process group ``pgid``."""
    proc_dir = Path("/proc")
    if proc_dir.is_dir():
        for entry in proc_dir.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) ": state, ppid, pgrp, …
            if len(fields) >= 3 and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                return True
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_group_gone(pgid: int, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for process group ``pgid`` to be empty; True when it is."""
    deadline = time.monotonic() + timeout
    while group_alive(pgid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_S)
    return True


def signal_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to process group ``pgid``; a group that is already gone is not an error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def kill_group(proc: GroupLeader) -> None:
    """SIGKILL ``proc``'s whole group at once and reap the leader."""
    signal_group(proc.pid, signal.SIGKILL)
    proc.wait()


def stop_group(
    proc: GroupLeader,
    grace_s: float,
    *,
    hurry: threading.Event | None = None,
    leader_only: bool = False,
) -> StopMethod:
    """SIGTERM ``proc``'s group, wait up to ``grace_s`` seconds, then SIGKILL the group.

    The wait is for every member of the group to exit (a server's scheduler children finish their
    in-flight work), or with ``leader_only`` for the leader alone — whatever it leaves behind (a worker's
    test processes) is then SIGKILLed at once.  A Ctrl-C or ``hurry`` during the wait escalates to SIGKILL
    immediately; the KeyboardInterrupt is re-raised once the group is gone.

    Returns ``exited`` (nothing was left to stop), ``sigterm`` or ``sigkill``.
    """
    pgid = proc.pid  # the leader of its own session: its pid is the group id

    def done() -> bool:
        return proc.poll() is not None and (leader_only or not group_alive(pgid))

    if proc.poll() is not None and not group_alive(pgid):
        return "exited"
    method: StopMethod = "sigterm"
    interrupted: KeyboardInterrupt | None = None
    if proc.poll() is None or not leader_only:
        signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    try:
        while not done():
            if time.monotonic() >= deadline or (hurry is not None and hurry.is_set()):
                method = "sigkill"
                break
            time.sleep(_POLL_S)
    except KeyboardInterrupt as exc:
        interrupted = exc
        method = "sigkill"
    if method == "sigkill" or leader_only:
        signal_group(pgid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=_KILL_WAIT_S)
        end = time.monotonic() + _GONE_WAIT_S
        while group_alive(pgid) and time.monotonic() < end:
            signal_group(pgid, signal.SIGKILL)
            time.sleep(_POLL_S)
    proc.wait()
    if interrupted is not None:
        raise interrupted
    return method
