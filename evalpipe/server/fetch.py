"""Small blocking HTTP calls with bounded timeouts (standard library only).

The fleet code runs before and after the evaluation, a few dozen calls at most: blocking ``urllib``
keeps it free of event loops and usable from any thread, like the server lifecycle's own readiness polls.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class HttpResult:
    """One HTTP exchange: ``status`` None when no HTTP answer came back (``error`` says why)."""

    status: int | None
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names
    error: str | None = None
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == 200

    def json(self) -> Any:
        """The body parsed as JSON (``ValueError`` when it is not JSON)."""
        return json.loads(self.body)

    def describe(self) -> str:
        """``HTTP 404: {"error"…}`` or the connection error, for one-line messages."""
        if self.status is None:
            return self.error or "no answer"
        text = self.body[:160].decode("utf-8", errors="replace").strip()
        return f"HTTP {self.status}" + (f": {text}" if text else "")


def request(
    method: str,
    url: str,
    *,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 10.0,
    api_key: str | None = None,
) -> HttpResult:
    """Send one request; never raises for HTTP or connection errors (they are in the result)."""
    all_headers = dict(headers or {})
    if body is not None:
        all_headers.setdefault("Content-Type", "application/json")
    if api_key:
        all_headers["Authorization"] = f"Bearer {api_key}"
    req = urllib.request.Request(url, data=body, method=method, headers=all_headers)
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            data = resp.read()
            return HttpResult(
                status=resp.status,
                body=data,
                headers={k.lower(): v for k, v in resp.headers.items()},
                elapsed_s=time.perf_counter() - t0,
            )
    except urllib.error.HTTPError as exc:
        data = exc.read() if exc.fp is not None else b""
        return HttpResult(
            status=exc.code,
            body=data,
            headers={k.lower(): v for k, v in (exc.headers or {}).items()},
            elapsed_s=time.perf_counter() - t0,
        )
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return HttpResult(
            status=None, error=f"{type(exc).__name__}: {reason}", elapsed_s=time.perf_counter() - t0
        )


def get(url: str, *, timeout: float = 10.0, api_key: str | None = None) -> HttpResult:
    return request("GET", url, timeout=timeout, api_key=api_key)


def post_json(
    url: str,
    payload: Any,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 60.0,
    api_key: str | None = None,
) -> HttpResult:
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    return request("POST", url, body=body, headers=headers, timeout=timeout, api_key=api_key)
