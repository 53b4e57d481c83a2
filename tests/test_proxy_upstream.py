"""The proxy's upstream HTTP/1.1 client: body framings, keep-alive reuse, servers that drop connections."""

from __future__ import annotations

import asyncio

import pytest

from evalpipe.server.upstream import UpstreamClient, UpstreamProtocolError

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
        try:
            for _ in range(5):
                assert (await _fetch(client, "/sized"))[0] == 200
        finally:
            await client.close()
            server.close()
            await server.wait_closed()
        # every request answered once; the 2nd..5th first hit a connection the server then dropped
        assert seen.count(b"DROPPED") == 4 and len(seen) - 4 == 5

    asyncio.run(main())
