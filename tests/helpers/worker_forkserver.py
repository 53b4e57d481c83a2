"""One EvalScope fork server per pytest process, for the integration tier's EvalScope workers.

Every pipeline run starts an EvalScope worker, and its EvalScope import (~2-3 s of CPU) was a third of the
suite's CPU time (``tools/suite_cpu.py``, 2026-12-06: ~110 workers).  When the selected tests include the
integration tier, the session starts ``python -m evalpipe.evalscope_bridge.forkserver`` once and names its
socket in ``EVALPIPE_WORKER_FORKSERVER``, which every run started afterwards — in this process or in the
``evalpipe`` processes the tests start — inherits and asks for its worker.

The spawned worker stays the product's default, so the tests about how a worker process is started and
ended (its environment, interrupts, a killed run) run it spawned: marked ``spawned_worker``, they run with the
variable unset.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from evalpipe.evalscope_bridge import forkserver
from evalpipe.processes.forkserver import FORKSERVER_ENV

_server: subprocess.Popen[bytes] | None = None
_home: str | None = None


def start() -> str:
    """Start this process's fork server (once); its socket's path is also set in ``FORKSERVER_ENV``."""
    global _server, _home
    if _server is not None and os.environ.get(FORKSERVER_ENV):
        return os.environ[FORKSERVER_ENV]
    _home = tempfile.mkdtemp(prefix="evalpipe-fork-")
    address = str(Path(_home) / "sock")
    with open(Path(_home) / "server.log", "wb") as log:
        try:
            _server = forkserver.start(address, log=log)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}: {(Path(_home) / 'server.log').read_text()[-2000:]}") from None
    os.environ[FORKSERVER_ENV] = address
    return address


def stop() -> None:
    """End the fork server (the workers it forked end with it) and remove its socket's folder."""
    global _server, _home
    os.environ.pop(FORKSERVER_ENV, None)
    if _server is not None:
        if _server.poll() is None:
            os.killpg(_server.pid, signal.SIGTERM)
        try:
            _server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(_server.pid, signal.SIGKILL)
            _server.wait()
        _server = None
    if _home is not None:
        shutil.rmtree(_home, ignore_errors=True)
        _home = None


def pytest_collection_finish(session: pytest.Session) -> None:
    if any(item.get_closest_marker("integration") is not None for item in session.items):
        start()


def pytest_sessionfinish(session: pytest.Session) -> None:
    stop()


@pytest.fixture(autouse=True)
def _spawned_worker(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``spawned_worker`` test's runs spawn their worker (the product's default path)."""
    if request.node.get_closest_marker("spawned_worker") is not None:
        monkeypatch.delenv(FORKSERVER_ENV, raising=False)
