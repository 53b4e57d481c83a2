"""The real sglang-router (installed by ``make test``) in front of fast scripted workers, on loopback.

Worker A reports the real SGLang 0.5.23 ``/server_info`` of configs/glm-fp8.yaml with ``dp_size`` 2 (so the
router, started ``--dp-aware``, lists it twice as ``URL@0``/``URL@1``); worker B the same with a BF16 KV
cache — a mixed fleet the router serves without complaint.  Both answer chat requests with the scripted
server's sampling stand-in, which honours the fields a router must pass on.  Every router started here is
stopped as a process group and checked gone in /proc.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession, web

from evalpipe.processes.ports import free_port
from evalpipe.recording.request_id import x_request_id
from evalpipe.server import fetch
from evalpipe.server.kinds.router.client import RouterClient, request_count_delta
from evalpipe.server.kinds.router.errors import (
    NoHealthyWorkers,
    NotARouter,
    RouterLaunchError,
    RouterUnreachable,
)
from evalpipe.server.kinds.router.launcher import RouterProcess
from evalpipe.server.kinds.router.probe import default_checks, probe_request_fields
from evalpipe.server.kinds.router.sglang_router import RouterLaunchSpec
from evalpipe.server.kinds.router.snapshot import fleet_changes, take_snapshot
from tests.scripted_server import Rule, ScriptedServer

FIXTURE = Path(__file__).parents[1] / "fixtures" / "sglang-0.5.23-server_info-glm-fp8.json"
PLANTED_KEY = "sk-evalpipe-PLANTED-fixture-key-0123456789abcdef"
MODEL = "GLM-5.3-Flash-FP8"
TOGGLE = "enable_thinking"
CHAT = {"model": MODEL, "messages": [{"role": "user", "content": "hello"}], "max_tokens": 2}


def group_members(pgid: int) -> list[int]:
    """Pids whose process group is ``pgid`` (read from /proc/PID/stat, field 5)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid:
            out.append(int(entry))
    return out


def stop_and_check_gone(router: RouterProcess) -> None:
    router.stop(timeout_s=20)
    assert group_members(router.pgid) == [], f"router process group {router.pgid} still has members"


def _info(**changes: Any) -> dict[str, Any]:
    info = dict(json.loads(FIXTURE.read_text(encoding="utf-8")))
    info.update(changes)
    for state in info.get("internal_states") or []:
        state.update({k: v for k, v in changes.items() if k in state})
    return info


def _worker(**changes: Any) -> ScriptedServer:
    return ScriptedServer(
        [], default=Rule("", "unused"), served_name=MODEL, server_info=_info(**changes), sampling=True,
        thinking_toggle=TOGGLE,
    ).start()  # fmt: skip


def _wait(predicate: Any, timeout_s: float, what: str) -> float:
    """Seconds until ``predicate()`` held; fails the test after ``timeout_s``."""
    t0 = time.monotonic()
    while not predicate():
        if time.monotonic() - t0 > timeout_s:
            pytest.fail(f"{what} not within {timeout_s:g} s")
        time.sleep(0.05)
    return time.monotonic() - t0


@pytest.fixture(scope="module")
def fleet(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[RouterProcess, ScriptedServer, ScriptedServer]]:
    a = _worker(dp_size=2)
    b = _worker(kv_cache_dtype="bf16")
    spec = RouterLaunchSpec(
        worker_urls=(a.root_url, b.root_url), port=free_port(), prometheus_port=free_port(), dp_aware=True
    )
    router = RouterProcess(spec, tmp_path_factory.mktemp("router") / "router.log")
    try:
        router.wait_ready(timeout_s=60)
        yield router, a, b
    finally:
        stop_and_check_gone(router)
        a.stop()
        b.stop()


def test_router_lists_each_worker_and_the_fleet_client_reads_each_config(
    fleet: tuple[RouterProcess, ScriptedServer, ScriptedServer],
) -> None:
    router, a, b = fleet
    assert router.ready_after_s is not None and router.ready_after_s < 60
    # the router's own view: no /server_info, a stub on /get_server_info — nothing a run could verify
    assert fetch.get(router.url + "/server_info").status == 404
    assert fetch.get(router.url + "/get_server_info").json() == {
        "router_manager": True, "routers_count": 1, "workers_count": 3,
    }  # fmt: skip
    client = router.client()
    members = client.members()
    by_url = {m.url: m for m in members}
    assert len(members) == 2 and set(by_url) == {a.root_url, b.root_url}
    assert (by_url[a.root_url].dp_ranks, by_url[b.root_url].dp_ranks) == ((0, 1), (0,))
    assert len(by_url[a.root_url].router_ids) == 2 and all(m.healthy and m.model_id == MODEL for m in members)
    ready = client.readiness()
    assert ready.ready and ready.healthy_workers == 3 and ready.total_workers == 3
    snap = take_snapshot(client)
    assert snap.listed_entries == 3
    kv = {w.url: w.kv_cache_dtype for w in snap.workers}
    assert kv == {a.root_url: "fp8_e4m3", b.root_url: "bf16"}
    assert all(
        w.version == "0.5.23" and w.config_sha256 and w.server_info_error is None for w in snap.workers
    )
    assert PLANTED_KEY not in snap.model_dump_json()
    assert client.is_router()


def test_x_request_id_reaches_the_worker_and_is_echoed(
    fleet: tuple[RouterProcess, ScriptedServer, ScriptedServer],
) -> None:
    router, a, b = fleet
    rid = x_request_id("deadbeef-000001")
    body = {"model": MODEL, "messages": [{"role": "user", "content": "x-request-id probe"}], "max_tokens": 3,
            "rid": "deadbeef-000001", "evalpipe_extra": 1}  # fmt: skip
    res = fetch.post_json(router.url + "/v1/chat/completions", body, headers={"X-Request-Id": rid})
    assert res.ok and res.headers["x-request-id"] == rid
    (seen,) = [r for r in a.requests + b.requests if r.last_user == "x-request-id probe"]
    assert {k.lower(): v for k, v in seen.headers.items()}["x-request-id"] == rid
    # what sglang-router 0.3.2 does to the body on the way (FORWARDING in evalpipe.server.kinds.router.sglang_router)
    assert seen.body["max_completion_tokens"] == 3 and "max_tokens" not in seen.body
    assert "rid" not in seen.body and "evalpipe_extra" not in seen.body
    assert seen.body["data_parallel_rank"] in (0, 1) or seen in b.requests


def test_requests_per_worker_from_the_routers_counters(
    fleet: tuple[RouterProcess, ScriptedServer, ScriptedServer],
) -> None:
    router, a, b = fleet
    client = router.client()
    counted = client.request_counts()
    assert counted is not None
    before, retries_before = counted
    seen_before = {a.root_url: len(a.requests), b.root_url: len(b.requests)}
    for i in range(6):
        body = {"model": MODEL, "messages": [{"role": "user", "content": f"count {i}"}], "max_tokens": 2}
        assert fetch.post_json(router.url + "/v1/chat/completions", body).ok
    counted = client.request_counts()
    assert counted is not None
    after, retries_after = counted
    delta = {r.url: (r.success, r.failure) for r in request_count_delta(before, after)}
    served = {
        a.root_url: len(a.requests) - seen_before[a.root_url],
        b.root_url: len(b.requests) - seen_before[b.root_url],
    }
    assert delta == {url: (n, 0) for url, n in served.items()}
    assert sum(served.values()) == 6 and served[a.root_url] == 4  # round robin over A@0, A@1, B
    assert retries_after == retries_before


def test_probe_through_the_real_router_finds_every_field_honoured(
    fleet: tuple[RouterProcess, ScriptedServer, ScriptedServer],
) -> None:
    router, a, b = fleet
    probe = probe_request_fields(
        router.url, [a.root_url, b.root_url], MODEL, thinking_toggle=TOGGLE, router_version=router.version
    )
    verdicts = {f.field: f.verdict for f in probe.fields}
    assert verdicts == {
        "max_tokens": "rewritten_harmlessly",
        "temperature": "rewritten_harmlessly",
        "seed": "honoured",
        "top_p": "rewritten_harmlessly",
        "n": "honoured",
        "chat_template_kwargs.enable_thinking": "honoured",
    }, [f.detail for f in probe.fields]
    assert probe.x_request_id_echoed is True and probe.router_version == "0.3.2"
    assert probe.requests_sent == 6 * (3 * 2 + 2)


class FieldDroppingRouter:
    """A bad router for the probe's negative controls: forwards to ``upstream`` but drops ``seed``, raises
    ``max_tokens`` to at least 12 and refuses ``n`` > 1 (loopback, a thread with its own event loop)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.port = free_port()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        if body.get("n", 1) > 1:
            return web.json_response({"error": {"message": "n > 1 not supported here"}}, status=400)
        body.pop("seed", None)
        body["max_tokens"] = max(int(body.get("max_tokens", 12)), 12)
        async with ClientSession() as s, s.post(self.upstream + request.path, json=body) as r:
            return web.Response(status=r.status, body=await r.read(), content_type="application/json")

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    def __enter__(self) -> str:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=30)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)


def test_probe_finds_fields_a_router_drops_or_refuses(
    fleet: tuple[RouterProcess, ScriptedServer, ScriptedServer],
) -> None:
    router, a, b = fleet
    checks = [c for c in default_checks(TOGGLE) if c.field in ("max_tokens", "seed", "n", "temperature")]
    with FieldDroppingRouter(router.url) as bad:
        probe = probe_request_fields(bad, [a.root_url, b.root_url], MODEL, checks=checks)
    by_field = {f.field: f for f in probe.fields}
    assert {k: f.verdict for k, f in by_field.items()} == {
        "max_tokens": "changed_generation",
        "temperature": "honoured",
        "seed": "changed_generation",
        "n": "refused",
    }
    assert "not finish_reason length with completion_tokens == 4" in by_field["max_tokens"].detail
    assert "HTTP 400" in by_field["n"].detail
    assert probe.x_request_id_echoed is False  # this one does not echo the header


def test_not_a_router_and_nothing_there(fleet: tuple[RouterProcess, ScriptedServer, ScriptedServer]) -> None:
    _router, a, _b = fleet
    with pytest.raises(NotARouter) as exc:
        RouterClient(a.base_url).listed_workers()  # a worker's /v1 URL, as --endpoint would give it
    assert str(exc.value) == (
        f"{a.root_url} is not a router: GET /workers answered HTTP 404: 404: Not Found "
        "(sglang-router lists its workers there; server.router says a router is expected)"
    )
    closed = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(RouterUnreachable, match=f"router {closed}: no answer on /workers"):
        RouterClient(closed, timeout_s=2).listed_workers()
    assert not RouterClient(a.root_url).is_router() and not RouterClient(closed, timeout_s=2).is_router()


def test_fleet_membership_over_a_run(tmp_path: Path) -> None:
    """One router (without --dp-aware: under it, sglang-router 0.3.2 accepts DELETE /workers/{id} but
    never removes the worker) through a run's life: its only configured worker is unreachable, so it is up
    but serves nothing; a live worker joins and /readiness says ready although the configured worker is
    still missing (so readiness of a router evalpipe launched is "every configured worker listed healthy");
    then a worker joins, one changes its configuration and one leaves, and each shows up in fleet_changes."""
    dead = f"http://127.0.0.1:{free_port()}"
    spec = RouterLaunchSpec(worker_urls=(dead,), port=free_port(), prometheus_port=free_port())
    router = RouterProcess(spec, tmp_path / "router.log")
    live, c = _worker(), _worker()
    try:
        client = router.client()

        def up() -> bool:
            try:
                client.listed_workers()
            except RouterUnreachable:
                return False
            return True

        _wait(up, 60, "router answering /workers")
        with pytest.raises(NoHealthyWorkers) as exc:
            client.healthy_members()
        assert str(exc.value) == (
            f"router {router.url} lists no healthy worker (0 listed; /readiness: insufficient healthy workers)"
        )
        assert fetch.post_json(router.url + "/v1/chat/completions", CHAT).status == 503
        assert fetch.post_json(router.url + "/workers", {"url": live.root_url}).status == 202
        _wait(lambda: client.readiness().ready, 30, "readiness with the live worker")
        assert [m.url for m in client.healthy_members()] == [live.root_url]
        with pytest.raises(RouterLaunchError) as launch:
            router.wait_ready(timeout_s=2)
        assert str(launch.value).startswith(
            f"router {router.url} not ready within 2 s (not listed healthy yet: {dead}); a worker is registered "
            "only once its /health answers 200"
        )

        start = take_snapshot(client)
        assert fetch.post_json(router.url + "/workers", {"url": c.root_url}).status == 202
        joined_s = _wait(lambda: any(m.url == c.root_url and m.healthy for m in client.members()), 30, "join")
        live.app.info = _info(kv_cache_dtype="fp8_e5m2")  # restarted with another KV cache dtype, say
        mid = take_snapshot(client)
        assert [(ch.kind, ch.url) for ch in fleet_changes(start, mid)] == sorted(
            [("joined", c.root_url), ("config_changed", live.root_url)], key=lambda kv: kv[1]
        )
        (c_id,) = next(m.router_ids for m in client.members() if m.url == c.root_url)
        assert fetch.request("DELETE", f"{router.url}/workers/{c_id}").status == 202
        left_s = _wait(lambda: all(m.url != c.root_url for m in client.members()), 30, "leave")
        end = take_snapshot(client)
        assert [(ch.kind, ch.url) for ch in fleet_changes(mid, end)] == [("left", c.root_url)]
        print(f"POST /workers → listed healthy in {joined_s:.2f} s; DELETE → gone in {left_s:.2f} s")
    finally:
        stop_and_check_gone(router)
        live.stop()
        c.stop()


def test_a_router_that_cannot_start_is_reported_with_its_log(tmp_path: Path) -> None:
    busy = _worker()
    try:
        spec = RouterLaunchSpec(worker_urls=(), port=busy.port or 0, prometheus_port=free_port())
        router = RouterProcess(spec, tmp_path / "router.log")
        with pytest.raises(RouterLaunchError) as exc:
            router.wait_ready(timeout_s=60)
        assert str(exc.value).startswith("router exited with code 1 before it was ready; log ")
        assert "Address already in use" in str(exc.value)
        stop_and_check_gone(router)
    finally:
        busy.stop()
