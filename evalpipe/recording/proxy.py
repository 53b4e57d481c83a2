"""Recording reverse proxy between EvalScope and the server.

Every evaluation request passes through it, so the run keeps its own account of what reached the server:
one ``RequestAttempt`` line per attempt in ``requests.jsonl`` and the response body in
``responses.jsonl.gz`` (replay without a GPU).  Bodies and responses are forwarded unchanged (streaming
SSE included) except that chat/completions JSON bodies get a unique SGLang ``rid`` per attempt, which
SGLang returns as the response ``id`` — so a response identifies the attempt that produced it, retries
included — and carry an ``X-Request-Id`` derived from the attempt id (``evalpipe.recording.request_id``): SGLang's
router drops the body ``rid`` but forwards the header to the worker and echoes it.  With ``api_key`` the
proxy sends the server's key itself (``Authorization: Bearer``, replacing the client's): the EvalScope
worker never holds it (``processes.environment``).

Design for low overhead (profiled with perf/bench_proxy.py): the proxy runs on its own event loop
in a background thread, on aiohttp's low-level server (no router) and a minimal keep-alive HTTP/1.1
client to the one upstream (``evalpipe.recording.upstream``; aiohttp's client was half the CPU).  The hot
path reads the body, splices in the ``rid`` without re-serialising and passes bytes through.  Each
finished attempt is written as one raw frame into a pipe to the recorder process
(``evalpipe.recording.recorder``) *before* the client gets its response; parsing, hashing, compression and
file writes happen there, outside this process's GIL, and the recorder drains the pipe in batches so the
proxy's writes do not wake it per attempt.  Health and info calls never come through here (the
lifecycle talks to the server directly).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import fcntl
import itertools
import json
import os
import secrets
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import evalpipe
from evalpipe.artifacts import RunDir
from evalpipe.artifacts.disk import disk_full
from evalpipe.artifacts.lock import inheritable_fds
from evalpipe.errors import ServerError
from evalpipe.processes.environment import worker_environment
from evalpipe.recording.recorder import (
    DISK_FULL,
    DISK_FULL_EXIT,
    FLUSH,
    M_CENC,
    M_CLIENT_GONE,
    M_CTYPE,
    M_ENDED,
    M_ERROR,
    M_LATENCY,
    M_RESENT,
    M_STATUS,
    M_STREAM,
    encode_frame,
)
from evalpipe.recording.request_id import HEADER as X_REQUEST_ID
from evalpipe.recording.request_id import x_request_id
from evalpipe.recording.upstream import UpstreamClient, UpstreamProtocolError

RID_PATHS = frozenset({"/v1/chat/completions", "/v1/completions"})
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "expect",
    }
)
# aiohttp's web server sets its own; forwarding the upstream's too would duplicate them.
RESPONSE_DROP = HOP_BY_HOP | {"date", "server"}
#: ``transport_error`` of an attempt the proxy ended because the server exceeded the request timeout.
UPSTREAM_TIMEOUT = "UpstreamTimeout"
#: Ended attempts kept for ``in_flight_ids(since)`` (a watch interval's worth at any realistic rate).
_ENDED_KEPT = 4096
#: Router answers a fleet's proxy re-sends (``resend_failed``): sglang-router 0.3.2 answers 500 for a request
#: whose worker died under it (measured), 502/503 when it has no worker to send it to.
RESEND_STATUSES = frozenset({500, 502, 503})
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
#: While the recorder's pipe is full, how often an answer waiting for its record to be handed over looks again.
_HANDOVER_POLL_S = 0.005
_UPSTREAM_ERRORS = (
    OSError,
    asyncio.IncompleteReadError,
    asyncio.LimitOverrunError,
    UpstreamProtocolError,
    ValueError,
)


def inject_rid(body: bytes, rid: str) -> bytes:
    """``body`` (a JSON object) with ``"rid": rid`` set.

    Fast path: splice the key in after the opening brace (no parse, no re-serialisation; JSON objects
    keep the bytes of every other field).  A body that already has a ``"rid"`` is parsed and rewritten.
    Non-object or unparseable bodies are returned unchanged (the server will answer them as it would).
    """
    stripped = body.lstrip()
    if not stripped.startswith(b"{"):
        return body
    if b'"rid"' not in body:
        rest = stripped[1:].lstrip()
        head = b'{"rid":' + json.dumps(rid).encode("ascii")
        return head + rest if rest.startswith(b"}") else head + b"," + rest
    try:
        obj = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return body
    if not isinstance(obj, dict):
        return body
    obj["rid"] = rid
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


class _RecorderPipe:
    """The recorder process and the non-blocking pipe feeding it (written only from the proxy's loop)."""

    def __init__(self, rundir: RunDir) -> None:
        rundir.logs_dir.mkdir(parents=True, exist_ok=True)
        pkg_root = str(Path(evalpipe.__file__).resolve().parents[1])
        host_path = os.environ.get("PYTHONPATH")
        # an allow-list like the EvalScope worker's: the recorder needs no key (the proxy holds it)
        env = worker_environment({"PYTHONPATH": pkg_root + (os.pathsep + host_path if host_path else "")})
        self.log_path = rundir.recorder_log
        with open(self.log_path, "ab") as errfh:
            # a session of its own: a kill of the run's process group leaves it to write what the pipe holds
            # (it ends at end of input), holding the run directory's lock until it has
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "evalpipe.recording.recorder", str(rundir.root)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errfh,
                env=env,
                start_new_session=True,
                pass_fds=inheritable_fds(),
            )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.fd = self.proc.stdin.fileno()
        with contextlib.suppress(OSError):
            fcntl.fcntl(self.fd, _F_SETPIPE_SZ, 1 << 20)
        os.set_blocking(self.fd, False)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._frames: list[bytes] = []
        self._pending = bytearray()
        self._scheduled = False
        self._watching = False
        self.broken: str | None = None
        #: The write the recorder's file system refused: (errno, path), from its ``diskfull`` line.
        self.refused: tuple[int, str] | None = None

    def gone(self) -> bool:
        """The recorder has exited (it only does at end of input, or after a refused write)."""
        return self.broken is not None or self.proc.poll() is not None

    def _note(self, data: bytes) -> None:
        """Keep the recorder's ``diskfull<TAB>errno<TAB>path`` line when ``data`` holds it."""
        for line in data.decode("utf-8", errors="replace").splitlines():
            parts = line.split("\t", 2)
            if len(parts) == 3 and parts[0] == DISK_FULL and parts[1].isdigit():
                self.refused = (int(parts[1]), parts[2])

    # --- proxy loop thread only
    def submit(self, frame: bytes) -> None:
        """Hand a frame to the recorder now (one non-blocking write); queue it if the pipe is full.

        Writing before the client gets its response means an attempt the client saw is in the pipe even
        if evalpipe dies the next instant.
        """
        if self._pending or self._frames or self._watching or self.broken:
            self._frames.append(frame)
            if not self._scheduled and self.loop is not None:
                self._scheduled = True
                self.loop.call_soon(self._drain)
            return
        self._pending += frame
        self._write_some()

    def _drain(self) -> None:
        self._scheduled = False
        if self._frames:
            self._pending += b"".join(self._frames)
            self._frames.clear()
        if not self._watching:
            self._write_some()

    async def handed_over(self) -> None:
        """Until every frame submitted so far is in the pipe (the recorder's to write, whatever becomes of this
        process), or the recorder is gone: an answer goes to its client only after its record is."""
        while (self._pending or self._frames) and not self.gone():
            await asyncio.sleep(_HANDOVER_POLL_S)

    def _on_writable(self) -> None:
        if self._frames:
            self._pending += b"".join(self._frames)
            self._frames.clear()
        self._write_some()

    def _write_some(self) -> None:
        if self.broken:
            self._pending.clear()
        if not self._pending:
            self._unwatch()
            return
        try:
            n = os.write(self.fd, self._pending)
        except BlockingIOError:
            n = 0
        except OSError as exc:  # recorder died: keep proxying, report at close
            self.broken = f"{type(exc).__name__}: {exc}"
            self._pending.clear()
            self._unwatch()
            return
        del self._pending[:n]
        if self._pending and not self._watching and self.loop is not None:
            self.loop.add_writer(self.fd, self._on_writable)
            self._watching = True
        elif not self._pending:
            self._unwatch()

    def _unwatch(self) -> None:
        if self._watching and self.loop is not None:
            self.loop.remove_writer(self.fd)
            self._watching = False

    def finish(self) -> None:
        """Blocking write of everything still queued (loop thread, at shutdown)."""
        self._unwatch()
        data = bytes(self._pending) + b"".join(self._frames)
        self._pending.clear()
        self._frames.clear()
        if self.broken or not data:
            return
        os.set_blocking(self.fd, True)
        try:
            view = memoryview(data)
            while view:
                n = os.write(self.fd, view)
                view = view[n:]
        except OSError as exc:
            self.broken = f"{type(exc).__name__}: {exc}"

    # --- caller thread
    def wait_flushed(self, token: str, timeout: float | None) -> bool:
        """Read recorder acks until ``token`` (sent after everything to be flushed) comes back."""
        assert self.proc.stdout is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        buf = b""
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return False
            chunk = os.read(fd, 4096)
            if not chunk:
                self._note(buf)
                return False
            buf += chunk
            self._note(buf)
            if f"{token}\n".encode() in buf:
                return True

    def close(self, timeout: float = 120) -> list[str]:
        """Close the pipe, wait for the recorder to write everything; problems found (empty when fine)."""
        problems = []
        if self.broken:
            problems.append(f"recorder pipe broke: {self.broken}")
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            problems.append(f"recorder did not finish within {timeout:g} s (killed)")
        if self.proc.stdout is not None:
            with contextlib.suppress(OSError, ValueError):
                self._note(self.proc.stdout.read())
            self.proc.stdout.close()
        if rc == DISK_FULL_EXIT and self.refused is not None:
            return problems  # the caller raises DiskFull naming the file
        if rc != 0:
            problems.append(f"recorder exited with code {rc}; see {self.log_path}")
        return problems


@dataclass
class ProxyHandle:
    """A running proxy: point EvalScope at ``base_url`` (instead of the server's URL)."""

    base_url: str
    upstream: str
    _proxy: _Proxy = field(repr=False)

    @property
    def attempts(self) -> int:
        """Attempts received so far."""
        return self._proxy.received

    def flush(self, timeout: float | None = 60) -> None:
        """Block until every attempt completed so far is on disk (e.g. before reading requests.jsonl)."""
        self._proxy.flush(timeout)

    def in_flight_ids(self, since: float | None = None) -> list[str]:
        """X-Request-Id of every evaluation attempt at the server right now and, with ``since`` (``time.time()``),
        of those that ended after it (callable from any thread)."""
        return self._proxy.in_flight_ids(since)

    def refuse(self, reason: str) -> None:
        """Forward nothing more and let no further answer reach the client (the run is stopping)."""
        self._proxy.refuse(reason)

    def set_gate(self, gate: Callable[[float], bool] | None) -> None:
        """Hold every answer until ``gate(its end time)`` is True — a sized one whole, a stream before its
        end — or the run stops: then it is refused (a stream never ends) and recorded as not delivered;
        None: deliver at once."""
        self._proxy.gate = gate


@dataclass(frozen=True)
class Forwarding:
    """How the proxy forwards the run's requests: never more than ``concurrency`` attempts at the server at
    once, whichever benchmark sends them (None: no bound; ``generation.concurrency``), each attempt within
    ``upstream_timeout_s`` of server time, queue wait excluded (``generation.request_timeout_s``), and — a
    fleet behind a router — a chat request answered 5xx, or not forwarded at all, re-sent up to
    ``resend_failed`` times ``resend_delay_s`` apart, each attempt recorded."""

    concurrency: int | None = None
    upstream_timeout_s: float | None = None
    resend_failed: int = 0
    resend_delay_s: float = 1.0


class _Proxy:
    def __init__(
        self,
        upstream: str,
        rundir: RunDir,
        *,
        set_rid: bool,
        host: str,
        api_key: str | None = None,
        forwarding: Forwarding = Forwarding(),
    ) -> None:
        self.upstream = upstream.rstrip("/")
        #: The ``Authorization`` header every forwarded request carries instead of the client's.
        self._auth = ("Authorization", f"Bearer {api_key}") if api_key else None
        self.resend_failed = forwarding.resend_failed
        self.resend_delay_s = forwarding.resend_delay_s
        self.refused: str | None = None
        #: Fleet gate (``on_mismatch: abort`` behind a router): ``gate(t)`` is True once a fleet poll that
        #: began after time ``t`` found every worker as verified; answers wait for it.  None: no gate.
        self.gate: Callable[[float], bool] | None = None
        self._in_flight: dict[str, str] = {}
        #: (time.time() it ended, X-Request-Id) of the latest attempts (``in_flight_ids(since)``)
        self._ended: collections.deque[tuple[float, str]] = collections.deque(maxlen=_ENDED_KEPT)
        self._in_flight_lock = threading.Lock()
        self.concurrency = forwarding.concurrency
        self.upstream_timeout_s = forwarding.upstream_timeout_s
        self.in_flight = 0
        self._slots: asyncio.Semaphore | None = None
        self.set_rid = set_rid
        self.host = host
        self.prefix = secrets.token_hex(4)
        self._seq = itertools.count()
        self.received = 0
        self.port = 0
        self.recorder = _RecorderPipe(rundir)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None

    # --- caller thread
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="evalpipe-proxy", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._startup_error is not None:
            self._thread.join()
            self.recorder.close()
            raise self._startup_error

    def flush(self, timeout: float | None) -> None:
        loop = self._loop
        if loop is None:
            return
        token = secrets.token_hex(8)
        frame = encode_frame([FLUSH, token], b"", b"")
        loop.call_soon_threadsafe(self.recorder.submit, frame)
        if not self.recorder.wait_flushed(token, timeout):
            if self.recorder.refused is not None:  # the recorder stopped at a refused write
                code, path = self.recorder.refused
                raise disk_full(path, OSError(code, os.strerror(code)), stage="evalscope")
            raise ServerError(f"recording proxy: records not flushed within {timeout} s")

    def stop(self) -> list[str]:
        loop = self._loop
        if loop is not None and self._thread is not None and self._thread.is_alive():
            fut = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
            with contextlib.suppress(Exception):
                fut.result(timeout=60)
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(timeout=60)
        return self.recorder.close()

    # --- proxy thread
    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self.recorder.loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._startup())
        except BaseException as exc:
            self._startup_error = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            # handlers still waiting on the upstream (a run interrupted mid-request): cancel and await
            # them, so none is destroyed pending with the loop (noise on stderr after the resume line)
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _startup(self) -> None:
        # import cost: aiohttp, only on this path
        from aiohttp import web

        self._web = web
        self._client = UpstreamClient(self.upstream)
        if self.concurrency is not None:
            self._slots = asyncio.Semaphore(self.concurrency)
        # import cost: aiohttp, only on this path
        from aiohttp.web_request import BaseRequest

        loop = asyncio.get_running_loop()

        def make_request(message: Any, payload: Any, protocol: Any, writer: Any, task: Any) -> BaseRequest:
            return BaseRequest(message, payload, protocol, writer, task, loop, client_max_size=1 << 30)

        # the low-level server: no router or middlewares on the hot path (every path is proxied anyway)
        server = web.Server(self._handle, request_factory=make_request, access_log=None)
        self._runner = web.ServerRunner(server, handle_signals=False, shutdown_timeout=5.0)
        await self._runner.setup()
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, 0))
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock, backlog=1024).start()

    async def _shutdown(self) -> None:
        await self._runner.cleanup()
        await self._client.close()
        self.recorder.finish()

    async def _handle(self, request: Any) -> Any:
        """One client request: one attempt, or several when a fleet's router answered 5xx (``resend_failed``)."""
        arrived = time.perf_counter()
        try:
            body = await request.read()
        except ConnectionResetError:  # the client went away mid-body (its worker ended): nothing was sent on
            return self._web.Response(status=499, text="client closed the request before its body arrived")
        resent = 0
        while True:
            resp, ex = await self._attempt(request, body, arrived)
            if ex is not None and ex.held is not None:
                resp = await self._release(ex, resp)
            rec = ex.rec if ex is not None else None
            if not self._resend(resp, rec, request.path) or resent >= self.resend_failed:
                return resp
            resent += 1
            await asyncio.sleep(self.resend_delay_s)
            arrived = time.perf_counter()

    def _resend(self, resp: Any, rec: list[Any] | None, path: str) -> bool:
        """Re-send a chat request the router could not serve (a worker died under it): a 5xx or transport
        error answered whole (nothing streamed to the client yet), not the proxy's own timeout, and the run
        not stopping."""
        if rec is None or not self.resend_failed or self.refused is not None or path not in RID_PATHS:
            return False
        if rec[M_ERROR] == UPSTREAM_TIMEOUT or getattr(resp, "prepared", False):
            return False
        return rec[M_STATUS] in RESEND_STATUSES or (rec[M_STATUS] is None and rec[M_ERROR] is not None)

    async def _release(self, ex: _Exchange, resp: Any) -> Any:
        """A held answer (sized): ``resp`` once the gate lets it through, else the refusal."""
        return resp if await self._released(ex) else self._refusal()

    async def _released(self, ex: _Exchange) -> bool:
        """Wait for the gate: True once a fleet poll that began after the answer ended found every worker
        as verified; False when the run is stopping (recorded as not delivered).  Recorded whatever
        happens, also when the handler is cancelled while it waits."""
        delivered = False
        try:
            delivered = await self._gate_passed(ex.rec[M_ENDED])
        finally:
            ex.rec[M_CLIENT_GONE] = ex.rec[M_CLIENT_GONE] or not delivered
            self.recorder.submit(encode_frame(ex.rec, ex.body, ex.held or b""))
            ex.held = None
        if delivered:
            await self.recorder.handed_over()  # written ahead, as an answer that was never held
        return delivered

    async def _gate_passed(self, ended: float) -> bool:
        while (gate := self.gate) is not None and self.refused is None:
            if gate(ended):
                return True
            await asyncio.sleep(0.05)
        return self.refused is None

    def in_flight_ids(self, since: float | None = None) -> list[str]:
        """X-Request-Id of every evaluation attempt at the server now (any thread) and, with ``since``
        (``time.time()``), of every one that ended after it: a worker's death is seen up to a watch interval
        late, when the router has already failed the requests it caught."""
        with self._in_flight_lock:
            ids = set(self._in_flight.values())
            if since is not None:
                ids.update(xrid for ended, xrid in self._ended if ended >= since)
            return sorted(ids)

    def refuse(self, reason: str) -> None:
        """From now on no request is forwarded and no answer reaches the client (503 instead): the run is
        stopping because the fleet changed (``on_mismatch: abort``)."""
        self.refused = reason

    def _refusal(self) -> Any:
        return self._web.json_response(
            {"error": {"message": f"evalpipe proxy: run stopping: {self.refused}", "type": "run_stopping"}},
            status=503,
        )

    async def _attempt(self, request: Any, body: bytes, arrived: float) -> tuple[Any, _Exchange | None]:
        """One recorded attempt of ``request``: the response for the client and the attempt (None: refused,
        nothing forwarded)."""
        if self.refused is not None:
            return self._refusal(), None
        if self.recorder.gone():  # nothing more can be recorded (a full disk): nothing more is answered
            return self._web.Response(status=503, text="evalpipe: the request log cannot be written\n"), None
        seq = next(self._seq)
        self.received += 1
        attempt_id = f"{self.prefix}-{seq:06d}"
        started = time.time()
        path = request.path
        fwd = body
        xrid = None
        if request.method == "POST" and path in RID_PATHS:
            xrid = x_request_id(attempt_id)
            if self.set_rid and body:
                fwd = inject_rid(body, attempt_id)
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP]
        if self._auth is not None:
            headers = [(k, v) for k, v in headers if k.lower() != "authorization"]
            headers.append(self._auth)
        if xrid is not None:  # ours replaces the client's: a router forwards it and echoes it back
            headers = [(k, v) for k, v in headers if k.lower() != "x-request-id"]
            headers.append((X_REQUEST_ID, xrid))
        rec = [
            attempt_id, seq, started, 0.0, 0.0, request.method, path, None, None, None, False, None, False, xrid,
        ]  # fmt: skip
        # admission: at most `concurrency` attempts at the server; the rest wait here, first come first
        # served (asyncio.Semaphore wakes its waiters in FIFO order), and the wait is recorded on its own
        if self._slots is not None:
            await self._slots.acquire()
        rec += [time.perf_counter() - arrived, time.time(), None]  # M_QUEUE_WAIT, M_ADMITTED, M_RESENT
        exchange = _Exchange(rec, body, time.perf_counter())
        self.in_flight += 1
        if xrid is not None:
            with self._in_flight_lock:
                self._in_flight[attempt_id] = xrid
        try:
            if self.upstream_timeout_s is None:
                return await self._exchange(request, headers, fwd, exchange), exchange
            try:
                async with asyncio.timeout(self.upstream_timeout_s):
                    return await self._exchange(request, headers, fwd, exchange), exchange
            except TimeoutError:
                # generation.request_timeout_s counts server time only (never the queue): the proxy ends
                # the attempt itself and answers 504, which EvalScope retries like any server error
                rec[M_ERROR] = UPSTREAM_TIMEOUT
                if exchange.response is not None:  # timed out mid-stream: the client has a truncated stream
                    if not exchange.recorded:
                        self._record(exchange, b"")
                    return exchange.response, exchange
                rec[M_STATUS] = None
                self._record(exchange, b"")
                return self._web.json_response(
                    {
                        "error": {
                            "message": f"evalpipe proxy: no complete answer from the server within "
                            f"{self.upstream_timeout_s:g} s (generation.request_timeout_s)",
                            "type": "proxy_timeout",
                        }
                    },
                    status=504,
                ), exchange
        finally:
            self.in_flight -= 1
            with self._in_flight_lock:
                if self._in_flight.pop(attempt_id, None) is not None and xrid is not None:
                    self._ended.append((time.time(), xrid))
            if self._slots is not None:
                self._slots.release()

    def _record(self, exchange: _Exchange, data: bytes, *, hold: bool = False) -> None:
        """End the attempt's record and hand it to the recorder — or, ``hold``, keep it (and the answer)
        until the fleet gate decides whether the client gets the answer (``_release``)."""
        rec = exchange.rec
        rec[M_ENDED] = time.time()
        rec[M_LATENCY] = time.perf_counter() - exchange.t0
        exchange.recorded = True
        if hold:
            exchange.held = data
            return
        self.recorder.submit(encode_frame(rec, exchange.body, data))

    async def _exchange(self, request: Any, headers: list[tuple[str, str]], fwd: bytes, ex: _Exchange) -> Any:
        web = self._web
        rec = ex.rec
        try:

            def resent(exc: BaseException) -> None:  # the first send failed on a reused connection
                rec[M_RESENT] = type(exc).__name__

            up, chunks_in = await self._client.request(
                request.method, request.raw_path, headers, fwd, on_resend=resent
            )
            rec[M_STATUS] = up.status
            ctype = rec[M_CTYPE] = up.content_type
            rec[M_CENC] = up.content_encoding
            rec[M_STREAM] = ctype is not None and ctype.startswith("text/event-stream")
            out_headers = [(k, v) for k, v in up.headers if k.lower() not in RESPONSE_DROP]
            if up.length is not None:  # a sized body: read it whole, answer in one write
                data = b"".join([c async for c in chunks_in])
                transport = request.transport
                # the client gave up (timeout) while the server worked: the answer will not reach it
                rec[M_CLIENT_GONE] = transport is None or transport.is_closing() or self.refused is not None
                self._record(ex, data, hold=self.gate is not None and up.status < 400)
                await self.recorder.handed_over()  # written ahead: the client never has an unrecorded answer
                if self.refused is not None:  # the run is stopping: this answer must not be used
                    return self._refusal()
                return web.Response(status=up.status, reason=up.reason, body=data, headers=out_headers)
            resp = ex.response = web.StreamResponse(status=up.status, reason=up.reason, headers=out_headers)
            await resp.prepare(request)
            chunks = []
            try:
                async for chunk in chunks_in:
                    chunks.append(chunk)
                    await resp.write(chunk)
            except ConnectionError:
                rec[M_CLIENT_GONE] = True  # the stream did not reach the client whole
            finally:
                await chunks_in.aclose()
            gated = self.gate is not None and up.status < 400 and not rec[M_CLIENT_GONE]
            self._record(ex, b"".join(chunks), hold=gated)
            if gated and not await self._released(ex):
                # the run is stopping: the stream never ends, so the client cannot take it as an answer
                if request.transport is not None:
                    request.transport.close()
                return resp
            if not rec[M_CLIENT_GONE]:
                await self.recorder.handed_over()  # the stream ends only once its record is in the pipe
                await resp.write_eof()
            return resp
        except _UPSTREAM_ERRORS as exc:
            rec[M_ERROR] = type(exc).__name__
            if ex.response is not None:  # failed mid-stream: the client has a truncated stream
                self._record(ex, b"")
                return ex.response
            rec[M_STATUS] = None
            self._record(ex, b"")
            return web.json_response(
                {
                    "error": {
                        "message": f"evalpipe proxy: upstream {rec[M_ERROR]}: {exc}",
                        "type": "proxy_error",
                    }
                },
                status=502,
            )


@dataclass
class _Exchange:
    """One attempt's record-in-progress, shared between the handler and its (cancellable) exchange."""

    rec: list[Any]
    body: bytes
    t0: float  # perf_counter at admission: latency_s is server time, not queue time
    response: Any = None  # the StreamResponse once streaming to the client has begun
    recorded: bool = False
    held: bytes | None = None  # an answer (and its record) waiting for the fleet gate


@contextlib.contextmanager
def recording_proxy(
    upstream: str,
    rundir: RunDir,
    *,
    set_rid: bool = True,
    host: str = "127.0.0.1",
    api_key: str | None = None,
    forwarding: Forwarding = Forwarding(),
) -> Iterator[ProxyHandle]:
    """Run the recording proxy for the duration of the block.

    ``upstream`` is the server's base URL (``http://127.0.0.1:30000``); the handle's ``base_url`` replaces
    it for evaluation traffic.  ``set_rid=False`` for servers that reject unknown body fields.  On exit
    the listener stops, in-flight requests get a few seconds, and the recorder writes and fsyncs every
    record; a recorder failure then raises ServerError (unless another exception is already propagating).

    ``forwarding`` (``Forwarding``) makes the proxy the run's admission point — at most ``concurrency``
    attempts at the server, each within its timeout — and, behind a router, re-sends a failed chat request,
    so a worker that died under the router loses no sample.  ``api_key``: the server's key, sent by the proxy
    on every forwarded request (the client's ``Authorization`` is dropped).
    """
    proxy = _Proxy(
        upstream,
        rundir,
        set_rid=set_rid,
        host=host,
        api_key=api_key,
        forwarding=forwarding,
    )
    proxy.start()
    shown = f"[{host}]" if ":" in host else host
    handle = ProxyHandle(base_url=f"http://{shown}:{proxy.port}", upstream=proxy.upstream, _proxy=proxy)
    try:
        yield handle
    except BaseException:
        proxy.stop()
        raise
    problems = proxy.stop()
    if proxy.recorder.refused is not None:
        code, path = proxy.recorder.refused
        raise disk_full(path, OSError(code, os.strerror(code)), stage="evalscope")
    if problems:
        raise ServerError("recording proxy: the request log may be incomplete", details=problems)
