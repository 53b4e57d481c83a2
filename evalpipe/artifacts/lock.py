"""One process at a time in a run directory: ``RUN/run.lock``, held with ``flock`` by the process that runs
there, its PID written inside.

The lock lives on the open file: a child that was handed the descriptor (the recorder, which outlives a killed
run long enough to write what it was handed) holds it until it exits too.  A second ``evalpipe run`` on the
directory (a ``--resume`` started while the first still runs) is refused in one line naming the holder's PID.
When the PID in the file is gone and only such a child still holds the lock, the new run waits for it, a
bounded time (``CHILD_WAIT_S``), then proceeds — or is refused naming the file.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from evalpipe.artifacts.rundir import RunDir
from evalpipe.errors import ConfigError

#: How long a run waits for the children of a dead run (its recorder, flushing) to let go of the directory.
CHILD_WAIT_S = 30.0
_POLL_S = 0.05

#: Descriptors of the locks this process holds (``inheritable_fds``: handed to the children that must keep them).
_held: dict[Path, int] = {}


def _pid_alive(pid: int) -> bool:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return raw[raw.rindex(")") + 2 :].split()[0] != "Z"


def _holder(path: Path) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        return int(path.read_text().split()[0])
    return None


@contextlib.contextmanager
def hold_run_dir(rundir: RunDir) -> Iterator[None]:
    """Hold ``rundir``'s lock for the ``with`` block (re-entrant within this process)."""
    path = rundir.lock
    if path in _held:
        yield
        return
    rundir.root.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _acquire(fd, path)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except BaseException:
        os.close(fd)
        raise
    _held[path] = fd
    try:
        yield
    finally:
        del _held[path]
        os.close(fd)


def _acquire(fd: int, path: Path) -> None:
    deadline = time.monotonic() + CHILD_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pid = _holder(path)
            if pid is not None and pid != os.getpid() and _pid_alive(pid):
                raise ConfigError(
                    f"{path.parent}: in use by evalpipe process {pid} (lock {path}); wait for it to end or stop "
                    "it, then run again"
                ) from None
            if time.monotonic() >= deadline:
                raise ConfigError(
                    f"{path.parent}: still held after {CHILD_WAIT_S:g} s by a child of the run of process {pid} "
                    f"(lock {path}); wait for it to end, then run again"
                ) from None
            time.sleep(_POLL_S)


def inheritable_fds() -> tuple[int, ...]:
    """The lock descriptors a child that may outlive this process must hold (``pass_fds``)."""
    return tuple(_held.values())
