"""The EvalScope worker started before anything else of ``evalpipe run`` (``prestart``), and how it starts.

EvalScope's import takes ~1.5-2 s; everything ``evalpipe run`` does before its EvalScope stage (its own
imports, the config, sampling, materialising, preflight, launch) takes less on a short run.  Started first,
the worker's import overlaps all of it: the console script starts it before it even parses the command line
(``cli.entry``), in a temporary home of its own (its private HF datasets cache, the log of its import)
since the run directory does not exist yet.  The first ``runner.WorkerProcess`` of the process takes it over
and moves it into the run directory (``protocol.WorkerHome``); ``discard_prestarted`` ends it when no stage
did (a refused config, variants at once, a run stopped before its EvalScope stage).

Standard library only (and ``processes``' modules): this runs before the CLI's own imports.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

import evalpipe
from evalpipe.processes.environment import worker_environment
from evalpipe.processes.forkserver import FORKSERVER_ENV, ForkedChild, ForkRefused, fork_child
from evalpipe.processes.group import spawn, stop_group

#: The worker process: spawned (``subprocess.Popen``) or forked by a fork server.
WorkerLeader = subprocess.Popen[bytes] | ForkedChild

#: Seconds the worker gets to exit after SIGTERM before its process group is killed.
WORKER_GRACE_S = 10.0


def _package_root() -> str:
    return str(Path(evalpipe.__file__).resolve().parents[1])


def stamp() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def worker_env(cache_dir: str) -> dict[str, str]:
    """The worker's environment: the allow-listed host variables (``processes.environment``), never the run's
    whole environment (no key or token reaches EvalScope), then its own settings."""
    return worker_environment(
        {
            "NO_COLOR": "1",
            "PYTHONUNBUFFERED": "1",
            "HF_DATASETS_CACHE": cache_dir,
            "HF_DATASETS_OFFLINE": "1",
            "HF_HUB_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "PYTHONPATH": os.pathsep.join(p for p in (_package_root(), os.environ.get("PYTHONPATH")) if p),
        }
    )


#: The worker's command line (a forked worker runs the same ``main``).
WORKER_ARGV = (sys.executable, "-m", "evalpipe.evalscope_bridge.worker")


def _forked(cache_dir: str, *, cwd: str, log: BinaryIO, channel_fd: int) -> WorkerLeader | None:
    """The worker, forked by the fork server ``EVALPIPE_WORKER_FORKSERVER`` names (with EvalScope imported
    already); None when none is named or it refused (the log says so), and the caller spawns one."""
    address = os.environ.get(FORKSERVER_ENV)
    if not address:
        return None
    try:
        child = fork_child(
            address, WORKER_ARGV, stdout=log.fileno(), stderr=log.fileno(), env=worker_env(cache_dir),
            cwd=cwd, pass_fds=(channel_fd,),
        )  # fmt: skip
    except ForkRefused as exc:
        log.write(f"===== evalpipe: {exc}; the worker is started instead =====\n".encode())
        return None
    log.write(
        f"===== evalpipe: EvalScope worker forked by the fork server at {address} (EvalScope imported "
        "there once) =====\n".encode()
    )
    return child


def launch(cache_dir: str, *, cwd: str, log: BinaryIO) -> tuple[WorkerLeader, int, int]:
    """Start the worker (``python -m evalpipe.evalscope_bridge.worker``, or forked by a fork server); returns
    it, and its event channel's write end (as the worker numbers it) and read end (this process's)."""
    read_fd, write_fd = os.pipe()
    try:
        proc = _forked(cache_dir, cwd=cwd, log=log, channel_fd=write_fd) or spawn(
            WORKER_ARGV,
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=log,
            pass_fds=(write_fd,),
            env=worker_env(cache_dir),
            cwd=cwd,
            # it writes into the run directory: it must not outlive a killed run (nor overlap its resume)
            die_with_parent=signal.SIGKILL,
        )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)  # the child holds the only write end: EOF means it is gone
    return proc, write_fd, read_fd


@dataclass
class Prestarted:
    """A worker started before the run directory existed, in a temporary ``home`` of its own (its private HF
    datasets cache and the log of its import), until a ``WorkerProcess`` takes it over."""

    proc: WorkerLeader
    channel_fd: int
    read_fd: int
    home: Path
    log_path: Path
    spawned_at: str


_prestarted: Prestarted | None = None
_prestarted_lock = threading.Lock()


def prestart() -> None:
    """Start this process's EvalScope worker now, before the config is read and the run directory exists.

    The console script calls this first for ``evalpipe run`` (``cli.entry``): the worker's EvalScope import
    then overlaps the CLI's own imports, config loading, sampling and materialising instead of only what
    follows sampling.  The first ``WorkerProcess.spawn`` in this process
    takes it over and moves it into its run directory (``protocol.WorkerHome``); ``discard_prestarted`` ends
    it if no stage did (a refused config, parallel variants, a run that stopped before its EvalScope stage).
    """
    global _prestarted
    with _prestarted_lock:
        if _prestarted is not None:
            return
        home = Path(tempfile.mkdtemp(prefix="evalpipe-worker-"))
        log_path = home / "import.log"
        cache = home / "hf-datasets"
        cache.mkdir()
        try:
            with open(log_path, "ab") as log:
                proc, channel_fd, read_fd = launch(str(cache), cwd=str(home), log=log)
        except BaseException:
            shutil.rmtree(home, ignore_errors=True)
            raise
        _prestarted = Prestarted(proc, channel_fd, read_fd, home, log_path, stamp())


def take_prestarted() -> Prestarted | None:
    global _prestarted
    with _prestarted_lock:
        early, _prestarted = _prestarted, None
    if early is not None and early.proc.poll() is not None:  # it died (its log says why): start afresh
        if early.proc.stdin is not None:
            early.proc.stdin.close()
        os.close(early.read_fd)
        shutil.rmtree(early.home, ignore_errors=True)
        return None
    return early


def discard_prestarted() -> None:
    """End a prestarted worker nobody took over (idempotent): its stdin closes, it exits, its home goes."""
    early = take_prestarted()
    if early is None:
        return
    with contextlib.suppress(OSError):
        assert early.proc.stdin is not None
        early.proc.stdin.close()  # end of input before the spec: it ends at once (once its import is done)
    stop_group(early.proc, WORKER_GRACE_S, leader_only=True)
    os.close(early.read_fd)
    shutil.rmtree(early.home, ignore_errors=True)
