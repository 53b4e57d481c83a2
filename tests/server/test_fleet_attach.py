"""Attaching to a running sglang-router (``kind: endpoint`` / ``--endpoint``), and what a user gets wrong.

The real router (installed by ``make test``) in front of fast scripted workers that report the real SGLang
0.5.23 ``/server_info`` of configs/glm-fp8.yaml.  An endpoint that lists workers is verified worker by worker
through ``managed_server``, exactly as a launched fleet: URL rewrites for workers the router knows under
another address, the router's counters and version from ``server.router``, a worker joining mid-run caught at
the end.  Bad input — an endpoint that is not a router although the config says one is, a router with no
healthy worker, a configured worker the router never registers, a worker this host cannot reach — ends ``evalpipe run`` with one line and
exit code 4 (the server), before any sample is sent.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.fleet import FleetRecord
from evalpipe.artifacts.schema.server import LaunchRecord
from evalpipe.audit.fleet import check_fleet
from evalpipe.config.loader import load_config
from evalpipe.config.models import RouterConfig
from evalpipe.processes.group import group_alive
from evalpipe.processes.ports import free_port
from evalpipe.server import fetch
from evalpipe.server.kinds.registry import server_kind
from evalpipe.server.kinds.router.launcher import RouterProcess
from evalpipe.server.kinds.router.sglang_router import RouterLaunchSpec
from evalpipe.server.lifecycle import managed_server
from tests.scripted_server import Rule, ScriptedServer

ROOT = Path(__file__).resolve().parents[2]
INFO = json.loads((ROOT / "tests" / "fixtures" / "sglang-0.5.23-server_info-glm-fp8.json").read_text())
GLM = load_config(ROOT / "configs" / "glm-fp8.yaml", check_sampling=False)
MODEL = GLM.model.served_name
DATA = ROOT / "evalpipe" / "selftest" / "data"


def _worker(**extra: Any) -> ScriptedServer:
    return ScriptedServer(
        [], default=Rule("", "unused"), served_name=MODEL, server_info={**INFO, **extra}, sampling=True,
        thinking_toggle="enable_thinking",
    ).start()  # fmt: skip


@pytest.fixture
def router_over(tmp_path: Path) -> Iterator[Any]:
    """``router_over(urls)`` starts a real router in front of ``urls``; all are stopped at the end."""
    started: list[RouterProcess] = []

    def start(urls: tuple[str, ...], wait: bool = True) -> RouterProcess:
        spec = RouterLaunchSpec(worker_urls=urls, port=free_port(), prometheus_port=free_port())
        router = RouterProcess(spec, tmp_path / f"router-{len(started)}.log")
        started.append(router)
        if wait:
            router.wait_ready(timeout_s=60)
        return router

    yield start
    for router in started:
        router.stop()
        assert not group_alive(router.pgid)


def test_an_attached_router_is_verified_worker_by_worker(tmp_path: Path, router_over: Any) -> None:
    a, b = _worker(), _worker()
    # the router knows b as http://localhost:P; this host reaches it through a "tunnel" (another server
    # with the same configuration, marked so that the test can see which one was asked)
    tunnel = _worker(reached_through="tunnel")
    listed_b = f"http://localhost:{b.port}"
    router = router_over((a.root_url, listed_b))
    settings = RouterConfig(
        metrics_url=router.metrics_url, version="0.3.2", url_rewrites={listed_b: tunnel.root_url}
    )
    server = GLM.server.model_copy(
        update={"kind": "endpoint", "endpoint": router.url + "/v1", "router": settings}
    )
    rundir = RunDir(tmp_path / "run")
    late = _worker()
    try:
        with managed_server(GLM, server, rundir, kind=server_kind(server.kind)) as handle:
            assert handle.base_url == router.url and handle.verification is not None
            assert handle.verification.verified and handle.verification.kv_cache_dtype == "fp8_e4m3"
            chat = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
            for _ in range(4):  # the evaluation's traffic
                assert fetch.post_json(router.url + "/v1/chat/completions", chat).status == 200
            assert fetch.post_json(router.url + "/workers", {"url": late.root_url}).status == 202
            deadline = time.monotonic() + 20
            while late.root_url not in {m.url for m in router.client().members() if m.healthy}:
                assert time.monotonic() < deadline, "the late worker was never listed"
                time.sleep(0.1)
    finally:
        for s in (a, b, tunnel, late):
            s.stop()
    record = read_model(rundir.fleet_json, FleetRecord)
    assert not record.router_launched and (record.router_version, record.router_version_source) == (
        "0.3.2",
        "config",
    )
    by_url = {w.url: w for w in record.start.workers}
    assert set(by_url) == {a.root_url, listed_b} and by_url[listed_b].query_url == tunnel.root_url
    info_b = json.loads((tmp_path / "run" / by_url[listed_b].files / "server_info.json").read_text())  # type: ignore[operator]
    assert info_b["reached_through"] == "tunnel" and record.verified and record.probe is not None
    assert {f.verdict for f in record.probe.fields} <= {"honoured", "rewritten_harmlessly"}
    before = {r.url: r.success for r in record.requests_before or []}
    after = {r.url: r.success for r in record.requests_after or []}
    assert sum(after.values()) - sum(before.values()) == 4  # the probe's own requests came before
    assert [(c.kind, c.url) for c in record.changes] == [("joined", late.root_url)]
    assert ("error", "fleet_worker_changed") in [(f.severity, f.code) for f in check_fleet(record)]


# --- bad input through the CLI: one line, exit 4, nothing sent -----------------------------------------


def _run(
    tmp_path: Path, server: dict[str, Any], *extra: str, launch_timeout_s: int = 4
) -> tuple[int, list[str], Path]:
    cfg = {
        "name": "fleet-bad-input",
        "model": {"path": "m", "served_name": MODEL},
        "server": {"launch_timeout_s": launch_timeout_s, "stop_timeout_s": 5, **server},
        "benchmarks": [{"name": "gsm8k", "subset": "main", "source": {"local": str(DATA / "gsm8k")},
                        "sampling": {"stratify_by": "none", "total": 1, "allocation": "uniform"}}],
    }  # fmt: skip
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "evalpipe.cli.entry", "run", str(path), "--out", str(out), *extra],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert not (out / "requests.jsonl").exists(), "a request was sent"
    return proc.returncode, [ln for ln in proc.stderr.splitlines() if ln.strip()], out


def test_an_endpoint_that_is_not_the_router_the_config_expects(tmp_path: Path) -> None:
    single = _worker()
    try:
        code, lines, _ = _run(tmp_path, {"kind": "endpoint", "endpoint": single.base_url, "router": {}})
    finally:
        single.stop()
    assert code == 4 and lines == [
        f"error: {single.root_url} is not a router: GET /workers answered HTTP 404: 404: Not Found (sglang-router "
        "lists its workers there; server.router says a router is expected)"
    ]


def test_a_router_with_no_healthy_worker(tmp_path: Path, router_over: Any) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    router = router_over((dead,), wait=False)
    code, lines, _ = _run(tmp_path, {"kind": "answer_key"}, "--endpoint", router.url)
    assert code == 4 and lines == [
        f"error: router {router.url} lists no healthy worker (0 listed; /readiness: insufficient healthy workers)"
    ]


def test_a_configured_worker_the_router_never_registers(tmp_path: Path, router_over: Any) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    live = _worker()
    try:
        # launched router: never ready while a configured worker is missing (the timeout leaves the router
        # itself time to start: 4-5 s on a loaded 2-core host)
        code, lines, out = _run(
            tmp_path, {"kind": "router", "router": {"workers": [{"url": dead}]}}, launch_timeout_s=15
        )
        assert code == 4 and len(lines) == 1, lines
        assert lines[0].startswith("error: router http://127.0.0.1:") and (
            f"not ready within 15 s (not listed healthy yet: {dead}); a worker is registered only once its /health "
            "answers 200 from the router's host; log " in lines[0]
        )
        launch = read_model(out / "server" / "launch.json", LaunchRecord)
        assert launch.pid is not None and launch.stopped_at is not None and not group_alive(launch.pid)
        # attached router: a worker the config names is not behind it
        router = router_over((live.root_url,))
        code, lines, _ = _run(
            tmp_path / "attach",
            {"kind": "endpoint", "endpoint": router.url, "router": {"workers": [{"url": live.root_url}, {"url": dead}]}},
        )  # fmt: skip
    finally:
        live.stop()
    assert (
        code == 4
        and len(lines) == 1
        and lines[0].startswith(
            f"error: worker {dead} is not listed healthy by the router {router.url} (listed: {live.root_url}): a worker "
            "whose /health does not answer 200 from the router's host is never registered"
        )
    )


def test_a_worker_this_host_cannot_reach(tmp_path: Path, router_over: Any) -> None:
    """The router reaches the worker, the evaluation host does not (here: a rewrite to a closed port, as a
    worker listed under a cluster-internal address would be): unverified, never passed — the run stops."""
    live = _worker()
    unreachable = f"http://127.0.0.1:{free_port()}"
    try:
        router = router_over((live.root_url,))
        server = {
            "kind": "endpoint",
            "endpoint": router.url,
            "router": {"url_rewrites": {live.root_url: unreachable}},
        }
        code, lines, out = _run(tmp_path, server)
    finally:
        live.stop()
    assert code == 4 and len(lines) == 1, lines
    assert lines[0].startswith(
        f"error: fleet not verified (on_mismatch: abort): worker {live.root_url}: /server_info unreadable "
        f"({unreachable}: /server_info: "
    ) and lines[0].endswith(
        "the router reaches it, this host does not: map the listed address to one this host reaches in "
        "server.router.url_rewrites): unverified"
    ), lines[0]
    record = read_model(out / "server" / "fleet.json", FleetRecord)
    assert not record.verified and [w.verified for w in record.start.workers] == [None]
