"""A process-count limit for root: one ``pids`` cgroup per sandboxed program.

RLIMIT_NPROC does not bind root: the kernel exempts processes whose *host* uid is 0 (``copy_process``
checks ``user != INIT_USER``), and a user namespace created by root maps its uids to host uid 0 — so
under ``bwrap``/``unshare`` started by root a fork bomb is not stopped by the rlimit (measured: 500 forks
with ``--nproc=64``).  Root can instead create a cgroup with ``pids.max``.  cgroup v1 (a ``pids``
hierarchy, as on this project's CI machines) and cgroup v2 (the ``pids`` controller enabled at the root of
the unified hierarchy) are both handled; when neither is writable the process limit is reported as not
enforced.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

V1_PIDS = Path("/sys/fs/cgroup/pids")
V2_ROOT = Path("/sys/fs/cgroup")
PREFIX = "evalpipe-sandbox-"


def pids_parent() -> Path | None:
    """The cgroup directory under which per-program pids cgroups can be created, or None."""
    if os.geteuid() != 0:
        return None
    if (V1_PIDS / "pids.max").exists() or (V1_PIDS / "cgroup.procs").exists():
        if os.access(V1_PIDS, os.W_OK):
            return V1_PIDS
    controllers = V2_ROOT / "cgroup.subtree_control"
    with contextlib.suppress(OSError):
        if "pids" in controllers.read_text().split() and os.access(V2_ROOT, os.W_OK):
            return V2_ROOT
    return None


@dataclass
class PidsCgroup:
    """One program's cgroup: created before the launch, joined by the launcher (``run.wrap``'s shim), removed after."""

    path: Path

    @classmethod
    def create(cls, parent: Path, max_pids: int) -> PidsCgroup:
        path = parent / f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
        path.mkdir()
        try:
            (path / "pids.max").write_text(str(max_pids))
        except OSError:
            path.rmdir()
            raise
        return cls(path)

    def hit_limit(self) -> bool:
        """Whether a fork failed in this cgroup because of ``pids.max``."""
        with contextlib.suppress(OSError, ValueError, IndexError):
            for line in (self.path / "pids.events").read_text().splitlines():
                name, _, count = line.partition(" ")
                if name == "max":
                    return int(count) > 0
        return False

    def remove(self, timeout_s: float = 5.0) -> None:
        """Kill whatever is still in the cgroup, then remove it."""
        deadline = time.monotonic() + timeout_s
        while True:
            pids: list[int] = []
            with contextlib.suppress(OSError):
                pids = [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)
