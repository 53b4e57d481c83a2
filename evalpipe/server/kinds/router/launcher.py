"""Start an ``sglang-router`` in front of workers that are already up, and know when it is really ready.

Order matters: the router registers a worker only once the worker's ``/health`` answers 200, retrying
with growing back-off (1 s, 2 s, 3 s, 5 s …); a worker that never answers is simply *not listed*, and the
router's ``/readiness`` still says ready as long as one other worker is healthy.  So the workers are
started and waited for first, and readiness here (:func:`wait_registered`) means "every worker evalpipe
passed is listed healthy" in ``/workers`` *and* ``/readiness`` 200 — the router's own ``/readiness`` alone
is not enough.

``evalpipe run`` launches the router through the server lifecycle (``server.kind: router``); the
:class:`RouterProcess` here is the same thing for tests and scripts that need a router of their own.  Both
start it as a process group of its own (``evalpipe.processes.group``) and stop it as one: SIGTERM (it exits
within about a second when idle), then SIGKILL after the timeout.  The router rewrites its process title
to ``sglang::router``: find it by pid, never by name.

Importable without sglang-router installed; :func:`require_router` fails with one line naming the extra.
"""

from __future__ import annotations

import importlib.util
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from evalpipe.processes.group import StopMethod, spawn, stop_group
from evalpipe.server.kinds.router.client import FleetMember, RouterClient
from evalpipe.server.kinds.router.errors import (
    NotARouter,
    RouterLaunchError,
    RouterNotInstalled,
    RouterUnreachable,
)
from evalpipe.server.kinds.router.sglang_router import (
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


def wait_registered(
    client: RouterClient,
    worker_urls: Sequence[str],
    *,
    proc: subprocess.Popen[bytes] | None,
    log_path: Path | None,
    timeout_s: float,
    poll_s: float = 0.1,
) -> list[FleetMember]:
    """Block until every worker in ``worker_urls`` is listed healthy and ``/readiness`` answers 200 (which
    alone would not do: it is 200 while a configured worker is missing).  RouterLaunchError — one line naming
    the workers missing, then the log's last lines — when the router exits or ``timeout_s`` passes."""
    expected = {split_rank(u)[0] for u in worker_urls}
    log_note = f"; log {log_path}" if log_path is not None else ""
    deadline = time.monotonic() + timeout_s
    last = "no answer yet"
    while True:
        if proc is not None and proc.poll() is not None:
            raise RouterLaunchError(
                f"router exited with code {proc.returncode} before it was ready{log_note}",
                details=log_tail(log_path) if log_path else [],
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
                    return members
                last = f"/readiness: {readiness.detail}"
        if time.monotonic() >= deadline:  # the missing workers are named; the log tail would only add noise
            raise RouterLaunchError(
                f"router {client.url} not ready within {timeout_s:g} s ({last}); a worker is registered only "
                f"once its /health answers 200 from the router's host{log_note}"
            )
        time.sleep(poll_s)


class RouterProcess:
    """A router of its own (tests, scripts): ``url``, ``metrics_url``, ``wait_ready``, ``stop`` (also on
    ``with`` exit)."""

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
            self.proc = spawn(self.argv, stdout=log, stderr=subprocess.STDOUT, die_with_parent=signal.SIGKILL)
        self.pgid = self.proc.pid

    def client(
        self, *, api_key: str | None = None, rewrites: Mapping[str, str] | None = None
    ) -> RouterClient:
        """A client for this router that also reads its Prometheus counters."""
        return RouterClient(self.url, metrics_url=self.metrics_url, api_key=api_key, rewrites=rewrites)

    def wait_ready(self, timeout_s: float = 60.0, poll_s: float = 0.1) -> list[FleetMember]:
        """:func:`wait_registered` for the workers of the spec."""
        client = RouterClient(self.url, timeout_s=min(5.0, max(timeout_s, 0.5)))
        members = wait_registered(
            client,
            self.spec.worker_urls,
            proc=self.proc,
            log_path=self.log_path,
            timeout_s=timeout_s,
            poll_s=poll_s,
        )
        self.ready_after_s = time.monotonic() - self.started_at
        return members

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout_s: float = 20.0) -> StopMethod:
        """SIGTERM the router's process group, SIGKILL it after ``timeout_s``; returns how it ended."""
        return stop_group(self.proc, timeout_s)

    def __enter__(self) -> RouterProcess:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
