"""Is the server up?  Plain HTTP probes straight to the server (never through the recording proxy).

``wait_ready`` polls a kind's readiness paths until one answers 200 — SGLang and evalpipe's own servers answer
``/health`` 503 while loading — and fails fast, with the server log's last lines, when the launched process
exits first.  ``get_json`` reads the info documents (``/server_info`` …) the verification saves.  Both send
their GETs through ``evalpipe.server.fetch``.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from evalpipe.artifacts.redact import REDACTED, redact_text
from evalpipe.errors import ServerError
from evalpipe.server import fetch

LOG_TAIL_LINES = 50


def get_json(
    base_url: str, paths: tuple[str, ...], api_key: str | None
) -> tuple[dict[str, Any] | None, str | None]:
    """First path answering 200 with a JSON object; else (None, why)."""
    errors = []
    for path in paths:
        res = fetch.get(base_url + path, api_key=api_key)
        if res.status == 200:
            try:
                data = json.loads(res.body)
            except json.JSONDecodeError:
                errors.append(f"{path}: not JSON")
                continue
            if isinstance(data, dict):
                return data, None
            errors.append(f"{path}: not a JSON object")
        else:
            errors.append(f"{path}: {res.cause or f'HTTP {res.status}'}")
    return None, "; ".join(errors)


def log_tail(path: Path, lines: int = LOG_TAIL_LINES, secrets: list[str] | None = None) -> list[str]:
    """Last ``lines`` lines of a log, redacted (they are shown on the console and in error messages)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 256 * 1024))
            data = fh.read()
    except OSError:
        return []
    text = data.decode("utf-8", errors="replace")
    out = []
    for line in text.splitlines()[-lines:]:
        for s in secrets or []:
            line = line.replace(s, REDACTED)
        out.append(redact_text(line))
    return out


def wait_ready(
    base_url: str,
    *,
    timeout: float,
    api_key: str | None,
    proc: subprocess.Popen[bytes] | None = None,
    log_path: Path | None = None,
    secrets: list[str] | None = None,
    paths: tuple[str, ...] = ("/health",),
) -> None:
    """Poll ``paths[0]`` until 200 (503 while loading); a path answering 404 (not served) hands over to the
    next one.  Raise ServerError when the process exits first (with the last log lines) or ``timeout``
    passes."""
    deadline = time.monotonic() + timeout
    interval = 0.1
    last = "no answer yet"
    active = list(paths)
    while True:
        if proc is not None and proc.poll() is not None:
            tail = log_tail(log_path, secrets=secrets) if log_path else []
            raise ServerError(
                f"server exited with code {proc.returncode} before becoming ready; last {len(tail)} log lines "
                f"of {log_path}:",
                details=tail,
            )
        path = active[0]
        res = fetch.get(base_url + path, timeout=5.0, api_key=api_key)
        if res.status == 200:
            return
        if res.status == 404 and len(active) > 1:
            active.pop(0)
            continue
        last = f"{path}: {res.cause or f'HTTP {res.status}'}"
        if time.monotonic() >= deadline:
            tail = log_tail(log_path, secrets=secrets) if log_path else []
            where = f"; last {len(tail)} log lines of {log_path}:" if tail else ""
            raise ServerError(
                f"server at {base_url} not ready within {timeout:g} s (last {last}){where}",
                details=tail,
            )
        time.sleep(interval)
        interval = min(interval * 1.5, 2.0)
