"""The proxy's upstream HTTP/1.1 client: body framings, keep-alive reuse, servers that drop connections."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from evalpipe.artifacts import RunDir, read_jsonl
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.audit.linkage import link
from evalpipe.audit.request_metrics import request_audit
from evalpipe.recording.proxy import recording_proxy
from evalpipe.recording.upstream import UpstreamClient, UpstreamProtocolError

RESPONSES = {
    b"/sized": b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{"ok": true}',
    b"/chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n"
    b"6\r\ndata: \r\n3;ext=1\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n",
    b"/close": b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close",
    b"/nobody": b"HTTP/1.1 204 No Content\r\n\r\n",
    b"/garbage": b"SSH-2.0-OpenSSH\r\n\r\n",
}


async def _serve(close_after_each: bool) -> tuple[asyncio.AbstractServer, int, list[bytes]]:
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        answered = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = await reader.readexactly(length)
                if close_after_each and answered:
                    seen.append(b"DROPPED")
                    break  # like a keep-alive timeout racing the client: drop the request unanswered
                answered += 1
                seen.append(head + body)
                path = head.split(b" ")[1].removeprefix(b"/prefix")
                writer.write(RESPONSES[path])
                await writer.drain()
                if path in (b"/close", b"/garbage"):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], seen


async def _fetch(client: UpstreamClient, path: str, body: bytes = b"") -> tuple[int, bytes, str | None]:
    resp, chunks = await client.request("POST", path, [("X-A", "1")], body)
    data = b"".join([c async for c in chunks])
    return resp.status, data, resp.content_type


def test_framings_and_keep_alive_reuse() -> None:
    async def main() -> None:
        server, port, seen = await _serve(close_after_each=False)
        client = UpstreamClient(f"http://127.0.0.1:{port}/prefix")
        try:
            assert await _fetch(client, "/sized", b'{"q": 1}') == (200, b'{"ok": true}', "application/json")
            assert await _fetch(client, "/chunked") == (200, b"data: abc", "text/event-stream")
            assert (await _fetch(client, "/nobody"))[:2] == (204, b"")
            assert await _fetch(client, "/close") == (200, b"until close", "text/plain")
            with pytest.raises(UpstreamProtocolError):
                await _fetch(client, "/garbage")
        finally:
            await client.close()
            server.close()
            await server.wait_closed()
        # three requests on the first connection (keep-alive), prefix and Host applied, body sized
        assert seen[0].startswith(b"POST /prefix/sized HTTP/1.1\r\nHost: 127.0.0.1:" + str(port).encode())
        assert b"X-A: 1\r\n" in seen[0] and seen[0].endswith(b'Content-Length: 8\r\n\r\n{"q": 1}')

    asyncio.run(main())


def test_stale_keep_alive_connection_is_retried_once() -> None:
    async def main() -> None:
        server, port, seen = await _serve(close_after_each=True)  # one answer per connection
        client = UpstreamClient(f"http://127.0.0.1:{port}")
        resends: list[str] = []
        try:
            for _ in range(5):
                resp, chunks = await client.request(
                    "POST", "/sized", [], b"", on_resend=lambda exc: resends.append(type(exc).__name__)
                )
                assert resp.status == 200 and b"".join([c async for c in chunks]) == b'{"ok": true}'
        finally:
            await client.close()
            server.close()
            await server.wait_closed()
        # every request answered once; the 2nd..5th first hit a connection the server then dropped after
        # reading the request — each of those re-sends is reported, none is silent
        assert seen.count(b"DROPPED") == 4 and len(seen) - 4 == 5
        assert resends == ["IncompleteReadError"] * 4

    asyncio.run(main())


COMPLETION = json.dumps(
    {"id": "c1", "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "4"}}]}
).encode()


@contextmanager
def _dropping_server() -> Iterator[tuple[int, list[bytes]]]:
    """A server on its own thread that answers the first request of each connection and, on a kept-alive
    connection, reads the next request whole and then drops the connection without a byte of answer."""
    ready: list[tuple[int, list[bytes]]] = []
    started = threading.Event()
    loop = asyncio.new_event_loop()

    async def start() -> asyncio.AbstractServer:
        seen: list[bytes] = []

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                for n in range(2):
                    head = await reader.readuntil(b"\r\n\r\n")
                    length = next(
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    )
                    body = await reader.readexactly(length)
                    seen.append(body if n == 0 else b"DROPPED " + body)
                    if n == 1:
                        break  # read, never answered
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        + f"Content-Length: {len(COMPLETION)}\r\n\r\n".encode()
                        + COMPLETION
                    )
                    await writer.drain()
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        ready.append((server.sockets[0].getsockname()[1], seen))
        return server

    def run() -> None:
        asyncio.set_event_loop(loop)
        server = loop.run_until_complete(start())
        started.set()
        loop.run_forever()
        server.close()
        loop.run_until_complete(server.wait_closed())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert started.wait(10)
    try:
        yield ready[0]
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def test_a_request_the_server_read_and_dropped_is_recorded_as_re_sent(tmp_path: Path) -> None:
    """The proxy's second request reuses the kept-alive connection; the server reads it and drops the
    connection; the proxy re-sends it once on a fresh connection, which answers.  One attempt for the
    client, two for the server: requests.jsonl says so, and the request audit counts it."""
    rundir = RunDir(tmp_path / "run")
    with _dropping_server() as (port, seen), recording_proxy(f"http://127.0.0.1:{port}", rundir) as proxy:
        for question in ("first", "second"):
            body = {"model": "m", "messages": [{"role": "user", "content": question}], "max_tokens": 4}
            req = urllib.request.Request(
                proxy.base_url + "/v1/chat/completions",
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(req, timeout=30) as r:
                assert r.status == 200 and json.loads(r.read())["id"] == "c1"
        proxy.flush()
    assert [b.startswith(b"DROPPED") for b in seen] == [False, True, False]  # the server read "second" twice
    assert b"second" in seen[1] and b"second" in seen[2]
    attempts = sorted(read_jsonl(rundir.requests_log, RequestAttempt), key=lambda a: a.seq)
    assert [(a.status, a.resent_after) for a in attempts] == [(200, None), (200, "IncompleteReadError")]
    audit = request_audit([], link([], attempts), None, False)
    assert audit.hidden_resends == 1 and audit.unlinked == 2


def test_request_logs_without_the_re_send_field_still_read() -> None:
    """Files written before re-sends were recorded have no ``resent_after``: read as sent once."""
    old = {
        "schema_version": 1,
        "attempt_id": "a",
        "seq": 0,
        "started_at": "2026-01-01T00:00:00+00:00",
        "method": "POST",
        "path": "/v1/chat/completions",
        "body_sha256": "0" * 64,
    }
    assert RequestAttempt.model_validate(old).resent_after is None
