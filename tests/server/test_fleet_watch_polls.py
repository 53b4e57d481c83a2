"""The fleet watch, one poll at a time, against in-process HTTP servers speaking the router's and the
workers' protocol (sglang-router 0.3.2's ``/workers`` listing and its ``DELETE /workers/{id}`` and
``POST /workers``; a worker's ``/server_info``): every transition of a worker — dies, comes back as it was,
comes back changed, restarts, joins — and what the watch does about each under ``abort`` and ``warn``.
The real router and real workers are in ``test_fleet_watch.py``."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from evalpipe.artifacts import read_model
from evalpipe.artifacts.schema.fleet import FleetRecord, FleetSnapshot
from evalpipe.engines.http_base import ServerThread
from evalpipe.server.kinds.router.client import FleetMember, RouterClient
from evalpipe.server.kinds.router.snapshot import worker_record
from evalpipe.server.kinds.router.watch import FleetWatch, FleetWatchPlan

INFO: dict[str, Any] = {
    "engine": "llama.cpp",
    "version": "b1",
    "served_model_name": "m",
    "kv_cache_dtype": "f16",
    "startup_time": 1.0,
}


@dataclass
class Fleet:
    """A router listing and each worker's /server_info, changed by the test between polls."""

    infos: dict[str, dict[str, Any] | None] = field(default_factory=dict)  # port → payload (None: down)
    listed: dict[str, str] = field(default_factory=dict)  # url → router id
    calls: list[str] = field(default_factory=list)  # router control-plane calls, in order
    urls: dict[str, str] = field(default_factory=dict)  # name → url


def _router_app(fleet: Fleet) -> web.Application:
    async def workers(request: web.Request) -> web.Response:
        listing = [{"id": i, "url": u, "model_id": "m", "is_healthy": True} for u, i in fleet.listed.items()]
        return web.json_response({"workers": listing, "total": len(listing)})

    async def add(request: web.Request) -> web.Response:
        url = (await request.json())["url"]
        fleet.calls.append(f"POST {url}")
        fleet.listed[url] = f"id-{len(fleet.calls)}"
        return web.json_response({"status": "accepted"}, status=202)

    async def remove(request: web.Request) -> web.Response:
        rid = request.match_info["rid"]
        url = next(u for u, i in fleet.listed.items() if i == rid)
        fleet.calls.append(f"DELETE {url}")
        del fleet.listed[url]
        return web.json_response({"status": "accepted"}, status=202)

    app = web.Application()
    app.router.add_get("/workers", workers)
    app.router.add_post("/workers", add)
    app.router.add_delete("/workers/{rid}", remove)
    return app


def _worker_app(fleet: Fleet, name: str) -> web.Application:
    async def server_info(request: web.Request) -> web.Response:
        info = fleet.infos[name]
        return web.json_response(info) if info is not None else web.json_response({}, status=503)

    app = web.Application()
    app.router.add_get("/server_info", server_info)
    return app


@pytest.fixture
def fleet() -> Iterator[Fleet]:
    state = Fleet(infos={"a": copy.deepcopy(INFO), "b": copy.deepcopy(INFO), "c": None})
    servers = [ServerThread(_router_app(state)).start()]
    for name in ("a", "b", "c"):
        srv = ServerThread(_worker_app(state, name)).start()
        servers.append(srv)
        state.urls[name] = f"http://127.0.0.1:{srv.port}"
    state.urls["router"] = f"http://127.0.0.1:{servers[0].port}"
    state.listed = {state.urls["a"]: "id-a", state.urls["b"]: "id-b"}
    try:
        yield state
    finally:
        for srv in servers:
            srv.stop()


def _watch(fleet: Fleet, tmp: Path, on_mismatch: str, aborts: list[str]) -> FleetWatch:
    rows = []
    for name in ("a", "b"):
        url = fleet.urls[name]
        rows.append(worker_record(FleetMember(url, url, (f"id-{name}",), (), "m", True), INFO, None))
    record = FleetRecord(
        router_url=fleet.urls["router"],
        router_launched=True,
        verified=True,
        start=FleetSnapshot(taken_at="2026-12-05T00:00:00+00:00", workers=rows, listed_entries=2),
    )
    plan = FleetWatchPlan(
        client=RouterClient(fleet.urls["router"], timeout_s=5),
        record=record,
        path=tmp / "fleet.json",
        start_infos={fleet.urls["a"]: INFO, fleet.urls["b"]: INFO},
        on_mismatch=on_mismatch,
        router_launched=True,
        interval_s=0.2,
    )
    watch = plan.watch()
    watch.in_flight = lambda since: ["evalpipe-x-000001"] if since is not None else []
    watch.on_abort = aborts.append
    return watch


def _events(watch: FleetWatch) -> list[tuple[str, str, str]]:
    return [(e.kind, e.url, e.action) for e in watch.plan.record.events]


def test_a_worker_that_dies_is_taken_out_and_put_back_only_when_it_matches_again(
    fleet: Fleet, tmp_path: Path
) -> None:
    aborts: list[str] = []
    watch = _watch(fleet, tmp_path, "abort", aborts)
    a, b = fleet.urls["a"], fleet.urls["b"]
    watch.poll_once()
    assert _events(watch) == [] and watch.verified_after(0.0)

    fleet.infos["b"] = None  # dies
    watch.poll_once()
    watch.poll_once()  # still gone: recorded once
    assert _events(watch) == [("died", b, "removed_from_router")] and fleet.calls == [f"DELETE {b}"]
    died = watch.plan.record.events[0]
    assert died.in_flight == ["evalpipe-x-000001"] and died.last_seen_as_started is not None

    fleet.infos["b"] = copy.deepcopy(INFO)  # back as it was
    watch.poll_once()
    assert _events(watch)[-1] == ("returned", b, "readded_to_router") and fleet.calls[-1] == f"POST {b}"

    fleet.infos["a"] = {**INFO, "startup_time": 2.0}  # restarted between two polls, same configuration
    watch.poll_once()
    assert _events(watch)[-1] == ("restarted", a, "none") and not aborts
    on_disk = read_model(tmp_path / "fleet.json", FleetRecord)
    assert [e.kind for e in on_disk.events] == ["died", "returned", "restarted"]


@pytest.mark.parametrize("on_mismatch", ["abort", "warn"])
def test_a_worker_back_with_another_configuration_follows_on_mismatch(
    fleet: Fleet, tmp_path: Path, on_mismatch: str
) -> None:
    aborts: list[str] = []
    watch = _watch(fleet, tmp_path, on_mismatch, aborts)
    b = fleet.urls["b"]
    fleet.infos["b"] = None
    watch.poll_once()
    fleet.infos["b"] = {**INFO, "kv_cache_dtype": "q4_0"}
    watch.poll_once()
    changed = watch.plan.record.events[-1]
    assert changed.kind == "config_changed" and changed.fields == ["kv_cache_dtype"]
    line = f"worker {b} resolved kv_cache_dtype 'q4_0' (verified 'f16' at the start)"
    if on_mismatch == "abort":
        assert aborts == [line] and changed.action == "aborted" and fleet.calls == [f"DELETE {b}"]
        assert not watch.verified_after(0.0)  # the proxy's gate stays shut: the run is stopping
    else:
        assert aborts == [] and changed.action == "marked" and fleet.calls == [f"DELETE {b}", f"POST {b}"]
        assert changed.message.startswith(line)


def test_a_worker_that_joins_is_verified_only_as_the_start_configuration(
    fleet: Fleet, tmp_path: Path
) -> None:
    aborts: list[str] = []
    watch = _watch(fleet, tmp_path, "abort", aborts)
    c = fleet.urls["c"]
    fleet.infos["c"] = copy.deepcopy(INFO)
    fleet.listed[c] = "id-c"
    watch.poll_once()
    assert _events(watch) == [("joined", c, "none")] and not aborts
    other = _watch(fleet, tmp_path, "abort", aborts)
    fleet.infos["c"] = {**INFO, "version": "b2"}
    other.poll_once()
    assert _events(other) == [("joined", c, "aborted")] and fleet.calls == [f"DELETE {c}"]
    assert aborts == [f"worker {c} joined the fleet during the run: worker {c} resolved version 'b2' "
                      "(verified 'b1' at the start)"]  # fmt: skip
    assert json.loads((tmp_path / "fleet.json").read_text())["events"][0]["kind"] == "joined"
