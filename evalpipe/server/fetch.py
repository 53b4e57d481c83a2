"""Small blocking HTTP calls to a server, with bounded timeouts (standard library only) — written once.

Readiness polls and info documents (``server.readiness``), the fleet's router and worker calls (the router
kind's ``client``) and the speed stage's context check (``speed.run``) run before and after the evaluation,
a few dozen calls at most: blocking ``urllib`` keeps them free of event loops and usable from any thread.
:func:`request` never raises for HTTP or connection errors (they are in the :class:`HttpResult`, with the
exception that carried them); :func:`read_json` raises them, as ``urllib`` and ``json`` do.
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
    #: What ``urllib`` raised: the ``HTTPError`` of a 4xx/5xx answer, or the transport error (else None).
    exception: Exception | None = field(default=None, compare=False, repr=False)

    @property
    def cause(self) -> str | None:
        """The transport error as ``<reason's type>: <reason>`` (``ConnectionRefusedError: [Errno 111] …``),
        the wording of readiness messages; None when an HTTP answer came back."""
        if self.status is not None or self.exception is None:
            return None
        reason = getattr(self.exception, "reason", self.exception)
        return f"{type(reason).__name__}: {reason}"

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
            exception=exc,
        )
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return HttpResult(
            status=None,
            error=f"{type(exc).__name__}: {reason}",
            elapsed_s=time.perf_counter() - t0,
            exception=exc,
        )


def get(url: str, *, timeout: float = 10.0, api_key: str | None = None) -> HttpResult:
    return request("GET", url, timeout=timeout, api_key=api_key)


def read_json(url: str, api_key: str | None = None, timeout: float = 10.0) -> Any:
    """GET ``url`` and parse the body as JSON; raises what ``urllib`` raises (``HTTPError`` for a 4xx/5xx
    answer, ``URLError``/``OSError`` for a transport error) and ``ValueError`` for a body that is not JSON."""
    res = get(url, timeout=timeout, api_key=api_key)
    if res.exception is not None:
        raise res.exception
    return json.loads(res.body)


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
