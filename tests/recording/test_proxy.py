"""Recording proxy: forwards unchanged (plain, SSE, gzip), one rid per attempt, append-only logs."""

from __future__ import annotations

import gzip
import hashlib
import http.client
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fake_sglang.support import FAKE_SGLANG_DIR
from helpers.server_process import ServerProcess

from evalpipe.artifacts import RunDir, read_jsonl
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.engines.http_base import ServerThread
from evalpipe.hashing import prompt_sha256
from evalpipe.processes.ports import free_port
from evalpipe.recording.proxy import Forwarding, ProxyHandle, inject_rid, recording_proxy
from evalpipe.recording.responses import read_response_records, read_responses

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 6*7?"}]


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The fake SGLang server (its own process group), shared by this module's tests."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(FAKE_SGLANG_DIR), "FAKE_SGLANG_STARTUP_S": "0"}
    argv = [sys.executable, "-m", "sglang.launch_server", "--model-path", "m", "--port", str(port)]
    log = tmp_path_factory.mktemp("upstream") / "server.log"
    with ServerProcess(argv, log=log, env=env, port=port, timeout=30) as server:
        yield server.base_url


def _post(url: str, body: dict | bytes, headers: dict[str, str] | None = None) -> tuple[int, dict, bytes]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def _attempts(rundir: RunDir) -> list[RequestAttempt]:
    return list(read_jsonl(rundir.requests_log, RequestAttempt))


def test_inject_rid_keeps_other_bytes() -> None:
    body = b'{"model": "m",  "messages": [], "x": 1.50}'
    assert inject_rid(body, "a-1") == b'{"rid":"a-1","model": "m",  "messages": [], "x": 1.50}'
    assert inject_rid(b"  { }", "a-1") == b'{"rid":"a-1"}'
    assert json.loads(inject_rid(b'{"rid": "old", "a": 1}', "a-2")) == {"rid": "a-2", "a": 1}
    assert inject_rid(b"[1, 2]", "a-3") == b"[1, 2]"
    assert inject_rid(b"not json", "a-4") == b"not json"


def test_chat_completion_recorded(tmp_path: Path, upstream: str) -> None:
    rundir = RunDir(tmp_path / "run")
    body = {"model": "fake-model", "messages": MESSAGES, "max_tokens": 64, "temperature": 0.0}
    raw = json.dumps(body).encode()
    with recording_proxy(upstream, rundir) as proxy:
        status, _, got = _post(proxy.base_url + "/v1/chat/completions", raw)
        assert status == 200
        _, _, direct = _post(upstream + "/v1/chat/completions", raw)
        proxy.flush()
        (a,) = _attempts(rundir)  # readable mid-run after flush()
    resp = json.loads(got)
    assert resp["id"] == a.attempt_id  # the rid came back as the response id
    assert {**resp, "id": None} == {**json.loads(direct), "id": None}  # otherwise forwarded unchanged
    assert a.seq == 0 and a.method == "POST" and a.path == "/v1/chat/completions"
    assert a.body_sha256 == hashlib.sha256(raw).hexdigest()
    assert a.messages_sha256 == prompt_sha256(MESSAGES)
    assert (a.model, a.max_tokens, a.stream, a.status) == ("fake-model", 64, False, 200)
    assert a.response_id == a.attempt_id and a.finish_reason == "stop"
    assert a.usage is not None and a.usage.prompt_tokens == 7
    assert a.response_sha256 == hashlib.sha256(b"echo: What is 6*7?").hexdigest()
    assert a.latency_s is not None and a.latency_s > 0 and a.transport_error is None
    assert a.started_at <= a.ended_at
    assert read_responses(rundir) == {a.attempt_id: got.decode()}


def test_streaming_sse_forwarded_and_parsed(tmp_path: Path, upstream: str) -> None:
    rundir = RunDir(tmp_path / "run")
    body = {
        "model": "fake-model",
        "messages": MESSAGES,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    with recording_proxy(upstream, rundir) as proxy:
        status, headers, got = _post(proxy.base_url + "/v1/chat/completions", body)
    assert status == 200 and headers["Content-Type"].startswith("text/event-stream")
    (a,) = _attempts(rundir)
    assert got.count(b"data: ") == 7 and got.endswith(b"data: [DONE]\n\n")
    assert f'"id": "{a.attempt_id}"'.encode() in got
    assert a.stream and a.response_id == a.attempt_id and a.finish_reason == "stop"
    assert a.usage is not None and a.usage.total_tokens == 11
    assert a.response_sha256 == hashlib.sha256(b"echo: What is 6*7? ").hexdigest()
    assert read_responses(rundir)[a.attempt_id] == got.decode()


def test_retries_get_distinct_ids_and_paths_without_rid(tmp_path: Path, upstream: str) -> None:
    rundir = RunDir(tmp_path / "run")
    body = {"model": "fake-model", "messages": MESSAGES}
    with recording_proxy(upstream, rundir) as proxy:
        ids = [json.loads(_post(proxy.base_url + "/v1/chat/completions", body)[2])["id"] for _ in range(2)]
        _post(proxy.base_url + "/v1/completions", {"model": "fake-model", "prompt": "hi"})
        with urllib.request.urlopen(proxy.base_url + "/model_info") as r:
            assert json.loads(r.read())["model_path"] == "m"
    rows = _attempts(rundir)
    assert [r.seq for r in rows] == [0, 1, 2, 3]
    assert ids == [rows[0].attempt_id, rows[1].attempt_id] and ids[0] != ids[1]
    assert rows[0].body_sha256 == rows[1].body_sha256 and rows[0].messages_sha256 == rows[1].messages_sha256
    assert rows[2].response_id == rows[2].attempt_id and rows[2].messages_sha256 is None
    assert (rows[3].method, rows[3].path, rows[3].status) == ("GET", "/model_info", 200)


def test_set_rid_off_leaves_body_alone(tmp_path: Path, upstream: str) -> None:
    rundir = RunDir(tmp_path / "run")
    with recording_proxy(upstream, rundir, set_rid=False) as proxy:
        resp = json.loads(_post(proxy.base_url + "/v1/chat/completions", {"messages": MESSAGES})[2])
    (a,) = _attempts(rundir)
    assert resp["id"].startswith("fake-") and a.response_id == resp["id"] != a.attempt_id


def test_upstream_down_is_a_recorded_transport_error(tmp_path: Path) -> None:
    rundir = RunDir(tmp_path / "run")
    with recording_proxy(f"http://127.0.0.1:{free_port()}", rundir) as proxy:
        status, _, got = _post(proxy.base_url + "/v1/chat/completions", {"messages": MESSAGES})
    assert status == 502 and b"evalpipe proxy" in got
    (a,) = _attempts(rundir)
    assert a.status is None and a.transport_error == "ConnectionRefusedError"
    assert a.messages_sha256 == prompt_sha256(MESSAGES)


def test_concurrent_attempts_all_logged(tmp_path: Path, upstream: str) -> None:
    rundir = RunDir(tmp_path / "run")
    n = 48
    with recording_proxy(upstream, rundir) as proxy:

        def one(i: int) -> str:
            msgs = [{"role": "user", "content": f"question {i}"}]
            return json.loads(_post(proxy.base_url + "/v1/chat/completions", {"messages": msgs})[2])["id"]

        with ThreadPoolExecutor(16) as pool:
            ids = list(pool.map(one, range(n)))
        assert proxy.attempts == n
    rows = _attempts(rundir)
    assert sorted(r.seq for r in rows) == list(range(n))
    assert sorted(ids) == sorted(r.attempt_id for r in rows) and len(set(ids)) == n
    assert set(read_responses(rundir)) == set(ids)


def test_headers_and_gzip_bodies_pass_through(tmp_path: Path) -> None:
    from aiohttp import web

    seen: dict[str, str] = {}

    async def handler(request: web.Request) -> web.Response:
        seen.update(request.headers)
        payload = json.dumps({"id": (await request.json())["rid"], "choices": [{"finish_reason": "length"}]})
        return web.Response(
            body=gzip.compress(payload.encode()),
            headers={"Content-Type": "application/json", "Content-Encoding": "gzip", "X-Upstream": "yes"},
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    rundir = RunDir(tmp_path / "run")
    with ServerThread(app) as upstream, recording_proxy(f"http://127.0.0.1:{upstream.port}", rundir) as proxy:
        req = urllib.request.Request(
            proxy.base_url + "/v1/chat/completions?trace=1",
            data=json.dumps({"messages": MESSAGES}).encode(),
            headers={"Authorization": "Bearer k", "Accept-Encoding": "gzip", "X-Custom": "v"},
        )
        with urllib.request.urlopen(req) as r:
            raw, headers = r.read(), dict(r.headers)
    assert (
        seen["Authorization"] == "Bearer k" and seen["X-Custom"] == "v" and seen["Accept-Encoding"] == "gzip"
    )
    assert headers["Content-Encoding"] == "gzip" and headers["X-Upstream"] == "yes"
    (a,) = _attempts(rundir)
    assert json.loads(gzip.decompress(raw))["id"] == a.attempt_id == a.response_id
    assert a.finish_reason == "length" and a.path == "/v1/chat/completions"
    assert json.loads(read_responses(rundir)[a.attempt_id])["id"] == a.attempt_id  # stored decompressed


def test_readers_tolerate_a_torn_tail(tmp_path: Path, upstream: str) -> None:
    rundir = RunDir(tmp_path / "run")
    with recording_proxy(upstream, rundir) as proxy:
        for i in range(3):
            _post(
                proxy.base_url + "/v1/chat/completions", {"messages": [{"role": "user", "content": str(i)}]}
            )
    complete = rundir.responses_log.read_bytes()
    with open(rundir.requests_log, "a") as fh:
        fh.write('{"schema_version": 1, "attempt_id": "torn')
    rundir.responses_log.write_bytes(complete + gzip.compress(b'{"attempt_id": "torn"}\n')[:15])
    rows = read_jsonl(rundir.requests_log, RequestAttempt)
    assert len(rows) == 3 and rows.torn_last_line
    records = read_response_records(rundir.responses_log)
    assert len(records) == 3 and records.torn_last_member
    assert set(records) == {r.attempt_id for r in rows}


_CRASHER = r"""
import json, os, sys, urllib.request
from evalpipe.artifacts import RunDir
from evalpipe.recording.proxy import recording_proxy
ctx = recording_proxy(sys.argv[1], RunDir(sys.argv[2]))
proxy = ctx.__enter__()
for i in range(5):
    body = json.dumps({"messages": [{"role": "user", "content": str(i)}]}).encode()
    req = urllib.request.Request(proxy.base_url + "/v1/chat/completions", data=body)
    urllib.request.urlopen(req).read()
os._exit(9)  # die without closing anything
"""


def test_records_survive_a_crash_of_evalpipe(tmp_path: Path, upstream: str) -> None:
    rundir = RunDir(tmp_path / "run")
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-c", _CRASHER, upstream, str(rundir.root)],
        env={**os.environ, "PYTHONPATH": str(repo)},
        timeout=60,
        check=False,
    )
    assert proc.returncode == 9
    deadline = time.monotonic() + 15  # the orphaned recorder finishes on end-of-file
    while len(read_jsonl(rundir.requests_log)) < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    rows = _attempts(rundir)
    assert len(rows) == 5 and len(read_responses(rundir)) == 5


def test_answer_after_the_client_gave_up_is_marked_undelivered(tmp_path: Path) -> None:
    """A client read timeout while the server works: the server's late answer is logged as not delivered."""
    from scripted_server import Rule, ScriptedServer

    server = ScriptedServer([Rule(match="slow", content="late answer", delay_s=1.5)]).start()
    rundir = RunDir(tmp_path / "run")
    try:
        with recording_proxy(f"http://127.0.0.1:{server.port}", rundir) as proxy:
            body = {"model": "m", "messages": [{"role": "user", "content": "slow"}]}
            req = urllib.request.Request(
                proxy.base_url + "/v1/chat/completions",
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            with pytest.raises((TimeoutError, urllib.error.URLError)):
                urllib.request.urlopen(req, timeout=0.5)
            time.sleep(2.0)  # the server answers after the client left
            proxy.flush()
    finally:
        server.stop()
    (attempt,) = _attempts(rundir)
    assert attempt.status == 200 and attempt.client_disconnected is True
    assert attempt.response_id == attempt.attempt_id  # the server did the work; nobody received it


def test_every_completion_carries_an_x_request_id_from_its_attempt_id(tmp_path: Path) -> None:
    """What a router forwards to the worker (and echoes): ours replaces a client's; recorded per attempt."""
    from aiohttp import web

    seen: list[dict[str, str]] = []
    copies: list[int] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append({k.lower(): v for k, v in request.headers.items()})
        copies.append(len(request.headers.getall("X-Request-Id", [])))
        return web.json_response({"id": "x", "choices": [{"finish_reason": "stop"}]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    app.router.add_get("/v1/models", handler)
    rundir = RunDir(tmp_path / "run")
    with ServerThread(app) as upstream, recording_proxy(f"http://127.0.0.1:{upstream.port}", rundir) as proxy:
        _post(proxy.base_url + "/v1/chat/completions", {"messages": MESSAGES})
        _post(proxy.base_url + "/v1/chat/completions", {"messages": MESSAGES}, {"X-Request-Id": "client-1"})
        urllib.request.urlopen(proxy.base_url + "/v1/models").read()
    first, second, models = _attempts(rundir)
    assert [h.get("x-request-id") for h in seen] == [first.x_request_id, second.x_request_id, None]
    for a in (first, second):
        assert a.x_request_id == f"evalpipe-{a.attempt_id}"
    assert models.x_request_id is None and copies == [1, 1, 0]  # the client's is replaced, not added to


def test_a_fleet_proxy_resends_what_the_router_answered_500_and_records_each_attempt(tmp_path: Path) -> None:
    """Behind a router (``resend_failed``): a 500 (a worker died under the request) is sent again, each
    attempt with its own id; the client sees only the answer.  A 400 is the server's verdict: not re-sent.
    While an attempt is at the server, its X-Request-Id is in flight."""
    from aiohttp import web

    calls: list[str] = []
    in_flight: list[list[str]] = []
    proxies: list[ProxyHandle] = []

    async def handler(request: web.Request) -> web.Response:
        body = await request.json()
        calls.append(request.headers["X-Request-Id"])
        in_flight.append(proxies[0].in_flight_ids())
        if body["messages"][-1]["content"] == "bad":
            return web.json_response({"error": "bad request"}, status=400)
        if len(calls) < 3:
            return web.json_response({"error": "worker died"}, status=500)
        return web.json_response({"id": body["rid"], "choices": [{"finish_reason": "stop"}]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    rundir = RunDir(tmp_path / "run")
    with (
        ServerThread(app) as upstream,
        recording_proxy(
            f"http://127.0.0.1:{upstream.port}", rundir, forwarding=Forwarding(resend_failed=3, resend_delay_s=0.01)
        ) as proxy,
    ):
        proxies.append(proxy)
        before = time.time()
        status, _, got = _post(proxy.base_url + "/v1/chat/completions", {"messages": MESSAGES})
        between = time.time()
        bad, _, _ = _post(
            proxy.base_url + "/v1/chat/completions", {"messages": [{"role": "user", "content": "bad"}]}
        )
        assert proxy.in_flight_ids() == []
        # a worker's death is seen up to a watch interval late: what ended since its last good poll counts
        assert proxy.in_flight_ids(since=before) == sorted(calls)
        assert proxy.in_flight_ids(since=between) == [calls[-1]]
    attempts = _attempts(rundir)
    assert status == 200 and [a.status for a in attempts] == [500, 500, 200, 400] and bad == 400
    assert json.loads(got)["id"] == attempts[2].attempt_id
    assert calls == [a.x_request_id for a in attempts] and len(set(calls)) == 4
    assert in_flight == [[x] for x in calls]


def test_a_refusing_proxy_forwards_nothing_and_delivers_no_late_answer(tmp_path: Path) -> None:
    """The run is stopping (a fleet changed under on_mismatch: abort): an answer arriving after the refusal
    is recorded but not delivered (503 instead), and nothing more is forwarded."""
    from aiohttp import web

    calls: list[str] = []
    proxies: list[ProxyHandle] = []

    async def handler(request: web.Request) -> web.Response:
        calls.append(request.headers["X-Request-Id"])
        proxies[0].refuse("worker http://w changed")
        return web.json_response({"id": "x", "choices": [{"finish_reason": "stop"}]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    rundir = RunDir(tmp_path / "run")
    with ServerThread(app) as upstream, recording_proxy(f"http://127.0.0.1:{upstream.port}", rundir) as proxy:
        proxies.append(proxy)
        first, _, body = _post(proxy.base_url + "/v1/chat/completions", {"messages": MESSAGES})
        second, _, _ = _post(proxy.base_url + "/v1/chat/completions", {"messages": MESSAGES})
    assert first == second == 503 and b"worker http://w changed" in body and len(calls) == 1
    (a,) = _attempts(rundir)
    assert a.status == 200 and a.client_disconnected is True


def test_a_gated_proxy_holds_each_answer_until_the_gate_passes_a_time_after_it(tmp_path: Path) -> None:
    """Behind a router under on_mismatch: abort, an answer is delivered only once a fleet poll that began
    after it ended found every worker verified (the gate); one held when the run stops is refused and
    recorded as not delivered — a streamed one never ends — and nothing is forwarded after."""
    import threading

    from aiohttp import web

    async def handler(request: web.Request) -> web.StreamResponse:
        if not (await request.json()).get("stream"):
            return web.json_response({"id": "x", "choices": [{"finish_reason": "stop"}]})
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(b'data: {"id": "x", "choices": [{"delta": {"content": "42"}}]}\n\n')
        await resp.write_eof()
        return resp

    def app() -> web.Application:
        made = web.Application()
        made.router.add_post("/v1/chat/completions", handler)
        return made

    rundir = RunDir(tmp_path / "run")
    polls: list[float] = []  # when each "poll" began
    with (
        ServerThread(app()) as upstream,
        recording_proxy(f"http://127.0.0.1:{upstream.port}", rundir) as proxy,
    ):
        proxy.set_gate(lambda t: any(p > t for p in polls))
        threading.Timer(0.4, lambda: polls.append(time.time())).start()
        t0 = time.monotonic()
        delivered, _, _ = _post(proxy.base_url + "/v1/chat/completions", {"messages": MESSAGES})
        waited = time.monotonic() - t0
        threading.Timer(0.3, lambda: proxy.refuse("worker http://w changed")).start()
        refused, _, body = _post(proxy.base_url + "/v1/chat/completions", {"messages": MESSAGES})
        after, _, _ = _post(proxy.base_url + "/v1/chat/completions", {"messages": MESSAGES})  # not forwarded
    streamed = RunDir(tmp_path / "streamed")
    with (
        ServerThread(app()) as upstream,
        recording_proxy(f"http://127.0.0.1:{upstream.port}", streamed) as proxy,
    ):
        proxy.set_gate(lambda t: False)
        threading.Timer(0.3, lambda: proxy.refuse("worker http://w changed")).start()
        with pytest.raises(http.client.IncompleteRead):  # a refused stream never ends
            _post(proxy.base_url + "/v1/chat/completions", {"messages": MESSAGES, "stream": True})
    assert delivered == 200 and 0.35 < waited < 5
    assert refused == after == 503 and b"worker http://w changed" in body
    first, second = _attempts(rundir)
    assert first.status == second.status == 200
    assert not first.client_disconnected and second.client_disconnected
    (stream,) = _attempts(streamed)
    assert stream.status == 200 and stream.stream and stream.client_disconnected
    assert first.latency_s is not None and first.latency_s < 0.35  # the wait is not server time


def test_an_answer_reaches_its_client_only_once_its_record_is_in_the_recorders_pipe(tmp_path: Path) -> None:
    """Written ahead: while the recorder cannot take an answer's record (here: stopped, the record larger than
    any pipe), the client waits — so a kill of the run can never leave EvalScope an answer the log lacks."""
    import signal

    from aiohttp import web

    big = "x" * (3 << 20)  # more than a pipe holds (1 MiB at most by default)

    async def handler(request: web.Request) -> web.Response:
        rid = (await request.json())["rid"]
        choice = {"message": {"content": big}, "finish_reason": "stop"}
        return web.json_response({"id": rid, "choices": [choice]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    rundir = RunDir(tmp_path / "run")
    with ServerThread(app) as upstream, recording_proxy(f"http://127.0.0.1:{upstream.port}", rundir) as proxy:
        recorder = proxy._proxy.recorder.proc.pid  # started by this test's proxy
        os.kill(recorder, signal.SIGSTOP)
        try:
            with ThreadPoolExecutor(1) as pool:
                answer = pool.submit(_post, proxy.base_url + "/v1/chat/completions", {"messages": MESSAGES})
                time.sleep(1.5)
                assert not answer.done(), "the client had the answer before its record was handed over"
                os.kill(recorder, signal.SIGCONT)
                status, _, body = answer.result(timeout=30)
        finally:
            os.kill(recorder, signal.SIGCONT)
        assert status == 200 and len(body) > len(big)
        proxy.flush()
        (attempt,) = _attempts(rundir)
    assert attempt.status == 200 and attempt.client_disconnected is False
