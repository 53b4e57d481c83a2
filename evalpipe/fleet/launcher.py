"""Start and stop an ``sglang-router`` process in front of workers that are already up.

Order matters: the router registers a worker only once the worker's ``/health`` answers 200, retrying
with growing back-off (1 s, 2 s, 3 s, 5 s …); a worker that never answers is simply *not listed*, and the
router's ``/readiness`` still says ready as long as one other worker is healthy.  So the workers are
started and waited for first, and readiness here means "every worker evalpipe passed is listed healthy"
in ``/workers`` *and* ``/readiness`` 200 — the router's own ``/readiness`` alone is not enough.

The router is a process group of its own (``start_new_session``) and is stopped as one: SIGTERM (it exits
within about a second when idle), then SIGKILL after the timeout.  The router rewrites its process title
to ``sglang::router``: find it by pid, never by name.

Importable without sglang-router installed; ``require_router`` fails with one line naming the extra.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from evalpipe.fleet.client import FleetMember, RouterClient
from evalpipe.fleet.errors import NotARouter, RouterLaunchError, RouterNotInstalled, RouterUnreachable
from evalpipe.fleet.sglang_router import (
    INSTALL_HINT,
    METRICS_PATH,
    MODULE,
    PACKAGE,
    RouterLaunchSpec,
    installed_version,
    router_argv,
    split_rank,
)

_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the router colours its log even into a file


def require_router() -> str:
    """The installed sglang-router version; RouterNotInstalled (one line) when it is missing."""
    if importlib.util.find_spec(MODULE) is None:
        raise RouterNotInstalled(
            f"launching a router needs {PACKAGE}, which is not installed: {INSTALL_HINT}"
        )
    return installed_version() or "unknown"


def log_tail(path: Path, lines: int = 15) -> list[str]:
    """The last lines of a router log without colour codes."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [_ANSI.sub("", line) for line in text.splitlines()[-lines:]]


class RouterProcess:
    """A router evalpipe started: ``url``, ``metrics_url``, ``wait_ready``, ``stop`` (also on ``with`` exit)."""

    def __init__(self, spec: RouterLaunchSpec, log_path: Path, *, python: str = sys.executable) -> None:
        self.spec = spec
        self.version = require_router()
        self.log_path = log_path
        self.argv = router_argv(spec, python)
        self.url = f"http://{spec.host}:{spec.port}"
        self.metrics_url = f"http://{spec.prometheus_host}:{spec.prometheus_port}{METRICS_PATH}"
        self.started_at = time.monotonic()
        self.ready_after_s: float | None = None
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.pgid = self.proc.pid

    def client(
        self, *, api_key: str | None = None, rewrites: Mapping[str, str] | None = None
    ) -> RouterClient:
        """A client for this router that also reads its Prometheus counters."""
        return RouterClient(self.url, metrics_url=self.metrics_url, api_key=api_key, rewrites=rewrites)

    def wait_ready(self, timeout_s: float = 60.0, poll_s: float = 0.1) -> list[FleetMember]:
        """Block until every worker of the spec is listed healthy and ``/readiness`` answers 200 (which alone
        would not do: it is 200 while a configured worker is missing).  RouterLaunchError (one line, then
        the log's last lines) when the router exits or ``timeout_s`` passes, naming the workers missing."""
        expected = {split_rank(u)[0] for u in self.spec.worker_urls}
        client = RouterClient(self.url, timeout_s=min(5.0, max(timeout_s, 0.5)))
        deadline = time.monotonic() + timeout_s
        last = "no answer yet"
        while True:
            if self.proc.poll() is not None:
                raise RouterLaunchError(
                    f"router exited with code {self.proc.returncode} before it was ready; log {self.log_path}",
                    details=log_tail(self.log_path),
                )
            try:
                members = client.members()
            except (RouterUnreachable, NotARouter) as exc:
                last = str(exc)
            else:
                healthy = {m.url for m in members if m.healthy}
                missing = sorted(expected - healthy)
                if missing:
                    last = "not listed healthy yet: " + ", ".join(missing)
                else:
                    readiness = client.readiness()
                    if readiness.ready:
                        self.ready_after_s = time.monotonic() - self.started_at
                        return members
                    last = f"/readiness: {readiness.detail}"
            if time.monotonic() >= deadline:
                raise RouterLaunchError(
                    f"router {self.url} not ready within {timeout_s:g} s ({last}); a worker is registered "
                    f"only once its /health answers 200; log {self.log_path}",
                    details=log_tail(self.log_path),
                )
            time.sleep(poll_s)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout_s: float = 20.0) -> str:
        """SIGTERM the router's process group, SIGKILL it after ``timeout_s``; returns how it ended."""
        if self.proc.poll() is not None and not _group_alive(self.pgid):
            return "exited"
        method = "sigterm"
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None and not _group_alive(self.pgid):
                break
            time.sleep(0.05)
        else:
            method = "sigkill"
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pgid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        return method

    def __enter__(self) -> RouterProcess:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _group_alive(pgid: int) -> bool:
    """True while any process of the group exists (zombies of our own child excepted once reaped)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
