"""A minimal HTTP/1.1 keep-alive client for the recording proxy's upstream side.

The proxy only ever talks to one origin (the model server) and forwards bytes, so a general client is
mostly overhead: profiling showed aiohttp's ClientSession at over half of the proxy's CPU per request.
This client writes the request head and body in one go and parses just what forwarding needs — the
status line, headers, and the body framing (Content-Length, chunked, or until close) — over a pool of
idle connections.  The body is yielded chunk by chunk, so SSE streams pass through as they arrive.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

_NO_BODY_STATUS = frozenset({204, 304})
_MAX_IDLE = 256


class UpstreamProtocolError(Exception):
    """The upstream answered with something that is not HTTP/1.x."""


@dataclass
class UpstreamResponse:
    status: int
    reason: str
    headers: list[tuple[str, str]]
    content_type: str | None
    content_encoding: str | None
    chunked: bool
    length: int | None  # Content-Length, None when chunked or delimited by close


class _Conn:
    __slots__ = ("reader", "reused", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.reused = False


class UpstreamClient:
    """Keep-alive connection pool to one ``http(s)://host:port[/prefix]`` origin."""

    def __init__(self, base_url: str, *, connect_timeout: float = 60.0) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"upstream must be an http(s) URL, got {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.prefix = parts.path.rstrip("/")
        self.ssl = ssl.create_default_context() if parts.scheme == "https" else None
        default_port = self.port == (443 if parts.scheme == "https" else 80)
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.host_header = host if default_port else f"{host}:{self.port}"
        self.connect_timeout = connect_timeout
        self._idle: list[_Conn] = []

    async def _connect(self) -> _Conn:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port, ssl=self.ssl, limit=1 << 20), self.connect_timeout
        )
        return _Conn(reader, writer)

    async def _acquire(self) -> _Conn:
        while self._idle:
            conn = self._idle.pop()
            if not conn.writer.is_closing() and not conn.reader.at_eof():
                conn.reused = True
                return conn
            conn.writer.close()
        return await self._connect()

    def _release(self, conn: _Conn, reusable: bool) -> None:
        if reusable and len(self._idle) < _MAX_IDLE and not conn.writer.is_closing():
            self._idle.append(conn)
        else:
            conn.writer.close()

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.writer.close()

    def _head(self, method: str, target: str, headers: list[tuple[str, str]], body_len: int) -> bytes:
        lines = [f"{method} {self.prefix}{target} HTTP/1.1", f"Host: {self.host_header}"]
        lines += [f"{k}: {v}" for k, v in headers]
        if body_len or method not in ("GET", "HEAD", "DELETE", "OPTIONS"):
            lines.append(f"Content-Length: {body_len}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "surrogateescape")

    async def request(
        self,
        method: str,
        target: str,
        headers: list[tuple[str, str]],
        body: bytes,
        *,
        on_resend: Callable[[BaseException], None] | None = None,
    ) -> tuple[UpstreamResponse, AsyncGenerator[bytes, None]]:
        """Send one request; returns the response head and an iterator over its body chunks.

        The body iterator must be consumed (or closed) before the connection can be reused.  A reused
        keep-alive connection that fails before any response byte is retried once on a fresh one: most
        often the server had closed the idle connection (a keep-alive timeout) and never saw the request,
        but a server that read the request and then dropped the connection did see it — the two cannot be
        told apart from here, so ``on_resend`` is called with the first send's error before the re-send
        (the proxy records it on the attempt).
        """
        payload = self._head(method, target, headers, len(body)) + body
        conn = await self._acquire()
        try:
            conn.writer.write(payload)
            head = await conn.reader.readuntil(b"\r\n\r\n")
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            conn.writer.close()
            partial = getattr(exc, "partial", b"")
            if not conn.reused or partial:
                raise
            if on_resend is not None:
                on_resend(exc)
            conn = await self._connect()
            conn.writer.write(payload)
            head = await conn.reader.readuntil(b"\r\n\r\n")
        except BaseException:
            conn.writer.close()
            raise
        resp = _parse_head(head)
        no_body = method == "HEAD" or resp.status in _NO_BODY_STATUS or 100 <= resp.status < 200
        return resp, self._body(conn, resp, no_body)

    async def _body(self, conn: _Conn, resp: UpstreamResponse, no_body: bool) -> AsyncGenerator[bytes, None]:
        reader = conn.reader
        reusable = False
        try:
            if no_body:
                reusable = True
            elif resp.chunked:
                while True:
                    size_line = await reader.readuntil(b"\r\n")
                    size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                    if size == 0:
                        while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                            pass
                        break
                    data = await reader.readexactly(size + 2)
                    yield data[:-2]
                reusable = True
            elif resp.length is not None:
                if resp.length:
                    yield await reader.readexactly(resp.length)
                reusable = True
            else:  # delimited by connection close
                while chunk := await reader.read(1 << 16):
                    yield chunk
            reusable = reusable and not _wants_close(resp)
        finally:
            self._release(conn, reusable)


def _wants_close(resp: UpstreamResponse) -> bool:
    return any(k.lower() == "connection" and "close" in v.lower() for k, v in resp.headers)


def _parse_head(head: bytes) -> UpstreamResponse:
    lines = head.decode("latin-1").split("\r\n")
    status_line = lines[0].split(" ", 2)
    if len(status_line) < 2 or not status_line[0].startswith("HTTP/1."):
        raise UpstreamProtocolError(f"bad status line {lines[0][:80]!r}")
    status = int(status_line[1])
    reason = status_line[2] if len(status_line) > 2 else ""
    headers: list[tuple[str, str]] = []
    ctype = cenc = None
    chunked = False
    length: int | None = None
    for line in lines[1:]:
        if not line:
            continue
        name, _, value = line.partition(":")
        name, value = name.strip(), value.strip()
        low = name.lower()
        if low == "transfer-encoding":
            chunked = "chunked" in value.lower()
        elif low == "content-length":
            length = int(value)
        elif low == "content-type":
            ctype = value
        elif low == "content-encoding":
            cenc = value
        headers.append((name, value))
    if status_line[0] == "HTTP/1.0":
        headers.append(("Connection", "close"))
    return UpstreamResponse(status, reason, headers, ctype, cenc, chunked, None if chunked else length)
