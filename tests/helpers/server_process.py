"""The one way tests run a server process: its own process group, waited for, always stopped, checked gone.

``ServerProcess`` starts an argv as the leader of a new session (``evalpipe.processes.group``), finds its
port (given, written to a port file, or printed in its log), optionally waits until ``/health`` answers 200,
and on exit stops the group as evalpipe does — SIGTERM, a bounded wait, SIGKILL — then asserts that no
process of the group is left.  ``assert_group_gone`` is the same check for a group a test did not start
itself (a server launched by ``managed_server``).
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from evalpipe.processes.group import StopMethod, signal_group, spawn, stop_group, wait_group_gone

TESTS = Path(__file__).resolve().parents[1]
#: ``python tests/scripted_server.py`` — the scripted OpenAI-compatible server as a process.
SCRIPTED_SERVER = (sys.executable, str(TESTS / "scripted_server.py"))


def assert_group_gone(pgid: int, timeout: float = 10.0) -> None:
    """Fail when anything of process group ``pgid`` is still alive after ``timeout`` seconds (and kill it,
    so a failing test leaves nothing behind)."""
    gone = wait_group_gone(pgid, timeout)
    if not gone:
        signal_group(pgid, signal.SIGKILL)
    assert gone, f"process group {pgid} survived"


def _status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except (urllib.error.URLError, OSError):
        return None


class ServerProcess:
    """A server process for one test (or one module): ``with ServerProcess(argv, …) as srv: srv.base_url``.

    The port comes from ``port`` (already in the argv), else ``port_file`` (written by the server once it
    listens), else the first match of ``listening`` in its log.  ``ready_path`` (None: do not wait) is polled
    until it answers 200.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        log: Path,
        env: Mapping[str, str] | None = None,
        port: int | None = None,
        port_file: Path | None = None,
        listening: re.Pattern[bytes] | None = None,
        ready_path: str | None = "/health",
        timeout: float = 60.0,
        stop_grace_s: float = 10.0,
    ) -> None:
        if sum(x is not None for x in (port, port_file, listening)) != 1:
            raise ValueError("give exactly one of port, port_file, listening")
        self.argv = list(argv)
        self.log = log
        self.env = dict(env) if env is not None else None
        self.port = port
        self.port_file = port_file
        self.listening = listening
        self.ready_path = ready_path
        self.timeout = timeout
        self.stop_grace_s = stop_grace_s
        self.proc: subprocess.Popen[bytes] | None = None
        self.stop_method: StopMethod | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None, "not started"
        return int(self.proc.pid)

    @property
    def base_url(self) -> str:
        assert self.port is not None, "not listening yet"
        return f"http://127.0.0.1:{self.port}"

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.is_file() else ""

    def start(self) -> ServerProcess:
        if self.port_file is not None:
            self.port_file.unlink(missing_ok=True)
        with self.log.open("ab") as fh:
            self.proc = spawn(self.argv, stdout=fh, stderr=subprocess.STDOUT, env=self.env)
        try:
            deadline = time.monotonic() + self.timeout
            while self.port is None:
                if self.port_file is not None and self.port_file.is_file():
                    self.port = int(self.port_file.read_text())
                elif self.listening is not None and (m := self.listening.search(self.log.read_bytes())):
                    self.port = int(m.group(1))
                else:  # (a server may print its port and exit at once: look before asking if it is alive)
                    self._check_alive(deadline, "did not start listening")
                    time.sleep(0.05)
            if self.ready_path is not None:
                while _status(self.base_url + self.ready_path) != 200:
                    self._check_alive(deadline, f"never answered {self.ready_path} with 200")
                    time.sleep(0.05)
        except BaseException:
            self.stop()
            raise
        return self

    def _check_alive(self, deadline: float, what: str) -> None:
        assert self.proc is not None
        if self.proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(
                f"server {self.argv[1:3]} {what} (exit {self.proc.poll()}); log:\n{self.log_text()[-3000:]}"
            )

    def stop(self) -> StopMethod | None:
        """SIGTERM, up to ``stop_grace_s``, SIGKILL — of the whole group; then assert nothing is left."""
        if self.proc is None:
            return None
        if self.stop_method is None:
            self.stop_method = stop_group(self.proc, self.stop_grace_s)
            assert_group_gone(self.proc.pid)
        return self.stop_method

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
