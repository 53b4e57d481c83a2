"""A full (or read-only, or over-quota) file system under the run directory: one line, files left valid.

Every writer of run-directory files — ``io`` (atomic writes, JSONL appends), the recorder process
(``requests.jsonl``, ``responses.jsonl.gz``) and the EvalScope worker's prediction/review caches — turns
ENOSPC / EDQUOT / EROFS into :class:`~evalpipe.errors.DiskFull`: the file, the stage that was writing and the
space left on that file system (``shutil.disk_usage``).  An append that failed part-way is cut back to the
file's length before it (``append_whole``), so no log ever holds a partial line, and ``--resume`` finds
only whole lines — except after a crash mid-write (``kill -9``), whose torn last line ``repair_torn_tail``
removes (logged); a malformed line in the middle is refused by the readers, never parsed.

The stage is the one ``StageClock.stage`` entered last in this thread (a context variable; "run" outside).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

from evalpipe.errors import DiskFull

#: The errors that mean "this file system takes no more writes", not a bug of the writer.
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})

_stage: ContextVar[str] = ContextVar("evalpipe_stage", default="run")


def is_disk_error(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in DISK_ERRNOS


def disk_error_in(exc: BaseException) -> OSError | None:
    """The disk error an exception was raised from (its own, its cause or its context), if any."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if is_disk_error(cur):
            assert isinstance(cur, OSError)
            return cur
        cur = cur.__cause__ or cur.__context__
    return None


@contextlib.contextmanager
def stage(name: str) -> Iterator[None]:
    """Name the stage that writes for the duration of the block (``StageClock.stage`` does this)."""
    token = _stage.set(name)
    try:
        yield
    finally:
        _stage.reset(token)


def current_stage() -> str:
    return _stage.get()


def free_bytes(path: Path) -> int | None:
    """Free bytes on the file system holding ``path`` (its nearest existing parent); None if unknown."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free
    except OSError:
        return None


def human(n: int | None) -> str:
    if n is None:
        return "unknown"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def disk_full(path: Path | str, err: OSError, *, stage: str | None = None) -> DiskFull:
    """The one-line error for a write to ``path`` that the file system refused."""
    why = os.strerror(err.errno) if err.errno is not None else str(err)
    name = errno.errorcode.get(err.errno or 0, "EIO")
    where = stage or current_stage()
    free = human(free_bytes(Path(path)))
    return DiskFull(f"{why} ({name}) writing {path} (stage {where}; {free} free on its file system)")


@contextlib.contextmanager
def disk_errors(path: Path | str) -> Iterator[None]:
    """Turn a disk error raised in the block into :class:`DiskFull` naming ``path``."""
    try:
        yield
    except OSError as exc:
        if not is_disk_error(exc):
            raise
        raise disk_full(path, exc) from None


#: Bytes the probe writes: more than a file system's reserve for an empty file, less than any real output.
PROBE_BYTES = 64 * 1024


def refused_write(directory: Path) -> OSError | None:
    """Whether ``directory``'s file system refuses a small write now (the disk error, or None).

    Asked after a process that writes there (the EvalScope worker) died without naming the cause: its own
    output about the failure may have been the write that failed."""
    directory = Path(directory)
    while not directory.is_dir() and directory != directory.parent:
        directory = directory.parent
    try:
        fd, tmp = tempfile.mkstemp(prefix=".evalpipe-space-probe.", dir=directory)
    except OSError as exc:
        return exc if is_disk_error(exc) else None
    try:
        append_whole(fd, b"\0" * PROBE_BYTES)
        os.fsync(fd)
    except OSError as exc:
        return exc if is_disk_error(exc) else None
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return None


def append_whole(fd: int, data: bytes) -> None:
    """Append ``data`` to the open file ``fd`` completely, or not at all: a write the file system refuses
    part-way is cut back to the file's length before it (shrinking needs no space), then re-raised."""
    start = os.fstat(fd).st_size
    view = memoryview(data)
    try:
        while view:
            n = os.write(fd, view)
            view = view[n:]
    except OSError:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, start)
        raise


def repair_torn_tail(path: Path) -> int:
    """Cut a JSONL file back to its last complete line; the bytes removed (0: nothing was torn)."""
    path = Path(path)
    if not path.is_file():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with open(path, "rb+") as fh:
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) == b"\n":
            return 0
        # read backwards to the last newline (a line is at most a few MB: one response)
        chunk = 1 << 16
        end = size
        keep = 0
        while end > 0:
            start = max(0, end - chunk)
            fh.seek(start)
            block = fh.read(end - start)
            i = block.rfind(b"\n")
            if i >= 0:
                keep = start + i + 1
                break
            end = start
        fh.truncate(keep)
    return size - keep
