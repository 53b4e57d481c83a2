"""Server lifecycle against the fake SGLang: every path ends with the whole process group gone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from fake_sglang.support import FAKE_SGLANG_DIR, server_config
from helpers.server_process import assert_group_gone

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.server import LaunchRecord, ServerVerification
from evalpipe.errors import ServerError
from evalpipe.processes.group import group_alive, signal_group
from evalpipe.server.kinds.registry import server_kind
from evalpipe.server.lifecycle import managed_server

GLM = {
    "tp_size": 2,
    "ep_size": 2,
    "attention_backend": "dsa",
    "dsa_prefill_backend": "tilelang",
    "dsa_decode_backend": "tilelang",
    "kv_cache_dtype": "fp8_e4m3",
    "speculative": {"algorithm": "EAGLE"},
}


@pytest.fixture
def fake_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setenv("PYTHONPATH", str(FAKE_SGLANG_DIR))
    monkeypatch.setenv("FAKE_SGLANG_STARTUP_S", "0.3")
    for var in ("CRASH", "RESOLVE_KV", "ECHO_API_KEY", "IGNORE_SIGTERM", "NO_SERVER_INFO", "DETERMINISTIC"):
        monkeypatch.delenv(f"FAKE_SGLANG_{var}", raising=False)
    return monkeypatch


def _launched(rundir: RunDir) -> LaunchRecord:
    return read_model(rundir.server_launch, LaunchRecord)


def _assert_stopped(rundir: RunDir) -> LaunchRecord:
    launch = _launched(rundir)
    assert launch.pid is not None
    assert_group_gone(launch.pid)
    assert launch.stopped_at is not None
    return launch


def test_launch_verify_stop(tmp_path: Path, fake_env: pytest.MonkeyPatch) -> None:
    fake_env.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    fake_env.setenv("SGLANG_FAKE_SETTING", "1")
    cfg = server_config(tmp_path, GLM)
    rundir = RunDir(tmp_path / "run")
    t0 = time.monotonic()
    with managed_server(cfg, cfg.server, rundir, kind=server_kind(cfg.server.kind)) as handle:
        assert time.monotonic() - t0 >= 0.3  # /health answered 503 first
        assert group_alive(handle.launch.pid or 0)
        with urllib.request.urlopen(handle.base_url + "/health") as r:
            assert r.status == 200
        v = handle.verification
        assert v is not None and v.verified
        assert v.description.startswith(
            "KV layout: fp8_e4m3 (row layout not stated), TileLang prefill/decode; TP 2, EP 2; MTP EAGLE"
        )
        assert v.description.endswith("— verified from server_info")
        assert v.seed_effective is False and v.server_version == "0.5.23"
        assert {c.key for c in v.checks} >= {
            "kv_cache_dtype",
            "dsa_decode_backend",
            "tp_size",
            "served_model_name",
        }
        launch = _launched(rundir)
        assert launch.ready_at is not None and launch.stopped_at is None
        assert launch.env["CUDA_VISIBLE_DEVICES"] == "0,1" and launch.env["SGLANG_FAKE_SETTING"] == "1"
        assert launch.argv[1:3] == ["-m", "sglang.launch_server"]
    launch = _assert_stopped(rundir)
    assert launch.stop_method == "sigterm" and launch.exit_code == 0
    assert json.loads(rundir.server_info.read_text())["kv_cache_dtype"] == "fp8_e4m3"
    assert json.loads(rundir.model_info.read_text())["is_generation"] is True
    assert read_model(rundir.server_verification, ServerVerification).verified
    log = rundir.server_log.read_text()
    assert "scheduler child pid" in log and "graceful shutdown" in log


def test_slow_start_then_launch_timeout(tmp_path: Path, fake_env: pytest.MonkeyPatch) -> None:
    fake_env.setenv("FAKE_SGLANG_STARTUP_S", "60")
    cfg = server_config(tmp_path, {"launch_timeout_s": 1.5})
    rundir = RunDir(tmp_path / "run")
    with pytest.raises(ServerError, match=r"not ready within 1\.5 s \(last /health: HTTP 503\)"):
        with managed_server(cfg, cfg.server, rundir, kind=server_kind(cfg.server.kind)):
            pytest.fail("must not become ready")
    assert _assert_stopped(rundir).stop_method == "sigterm"


def test_crash_on_start_shows_last_50_log_lines(tmp_path: Path, fake_env: pytest.MonkeyPatch) -> None:
    fake_env.setenv("FAKE_SGLANG_CRASH", "1")
    cfg = server_config(tmp_path)
    rundir = RunDir(tmp_path / "run")
    with pytest.raises(ServerError, match="exited with code 3 before becoming ready") as exc:
        with managed_server(cfg, cfg.server, rundir, kind=server_kind(cfg.server.kind)):
            pytest.fail("must not become ready")
    assert len(exc.value.details) == 50
    assert exc.value.details[-1] == "RuntimeError: fake crash during model load"
    assert exc.value.details[0] == "loading shard 31/80"
    launch = _assert_stopped(rundir)
    assert launch.stop_method == "exited" and launch.exit_code == 3


def test_kv_mismatch_aborts(tmp_path: Path, fake_env: pytest.MonkeyPatch) -> None:
    fake_env.setenv("FAKE_SGLANG_RESOLVE_KV", "bfloat16")
    cfg = server_config(tmp_path, GLM)
    rundir = RunDir(tmp_path / "run")
    with pytest.raises(ServerError, match="on_mismatch: abort") as exc:
        with managed_server(cfg, cfg.server, rundir, kind=server_kind(cfg.server.kind)):
            pytest.fail("a mismatching server must not be used")
    assert exc.value.details == ["kv_cache_dtype: config 'fp8_e4m3', server resolved 'bfloat16'"]
    v = read_model(rundir.server_verification, ServerVerification)
    assert not v.verified and v.kv_cache_dtype == "bfloat16"
    assert "MISMATCH" in v.description
    _assert_stopped(rundir)


def test_kv_mismatch_warns_when_configured(
    tmp_path: Path, fake_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    fake_env.setenv("FAKE_SGLANG_RESOLVE_KV", "bfloat16")
    fake_env.setenv("FAKE_SGLANG_DETERMINISTIC", "1")
    cfg = server_config(tmp_path, {**GLM, "on_mismatch": "warn"})
    rundir = RunDir(tmp_path / "run")
    with managed_server(cfg, cfg.server, rundir, kind=server_kind(cfg.server.kind)) as handle:
        assert handle.verification is not None and not handle.verification.verified
        assert handle.verification.seed_effective is True
    assert "server verification failed (on_mismatch: warn)" in caplog.text
    _assert_stopped(rundir)


def test_api_key_echoed_by_server_is_redacted(tmp_path: Path, fake_env: pytest.MonkeyPatch) -> None:
    # like SGLang 0.5.23 (the fake serves its real payload), the key comes back in api_key, in every
    # internal_states entry and inside launch_command
    fake_env.setenv("EVALPIPE_LIFECYCLE_KEY", "sk-lifecycle-secret-123")
    cfg = server_config(tmp_path, {"api_key_env": "EVALPIPE_LIFECYCLE_KEY"})
    rundir = RunDir(tmp_path / "run")
    with managed_server(cfg, cfg.server, rundir, kind=server_kind(cfg.server.kind)) as handle:
        # the fake demands the key on /server_info: verification succeeding proves it was sent
        assert handle.verification is not None and handle.verification.verified
        with pytest.raises(urllib.error.HTTPError, match="401"):
            urllib.request.urlopen(handle.base_url + "/server_info")
    _assert_stopped(rundir)
    for path in rundir.server_dir.iterdir():
        assert "sk-lifecycle-secret-123" not in path.read_text(), path
    info = json.loads(rundir.server_info.read_text())
    assert info["api_key"] == "***" and "--api-key ***" in info["launch_command"]
    assert [state["api_key"] for state in info["internal_states"]] == ["***"]
    assert "--api-key" in _launched(rundir).argv


def test_ignored_sigterm_escalates_to_sigkill_of_the_group(
    tmp_path: Path, fake_env: pytest.MonkeyPatch
) -> None:
    fake_env.setenv("FAKE_SGLANG_IGNORE_SIGTERM", "1")
    cfg = server_config(tmp_path, {"stop_timeout_s": 1.0})
    rundir = RunDir(tmp_path / "run")
    with managed_server(cfg, cfg.server, rundir, kind=server_kind(cfg.server.kind)):
        pass
    launch = _assert_stopped(rundir)
    assert launch.stop_method == "sigkill" and launch.exit_code == -signal.SIGKILL


def test_exception_in_block_stops_server(tmp_path: Path, fake_env: pytest.MonkeyPatch) -> None:
    fake_env.setenv("FAKE_SGLANG_NO_SERVER_INFO", "1")  # also: fallback to /get_server_info
    cfg = server_config(tmp_path)
    rundir = RunDir(tmp_path / "run")
    with pytest.raises(RuntimeError, match="evaluation blew up"):
        with managed_server(cfg, cfg.server, rundir, kind=server_kind(cfg.server.kind)) as handle:
            assert handle.verification is not None and handle.verification.verified
            raise RuntimeError("evaluation blew up")
    _assert_stopped(rundir)


def test_endpoint_attaches_and_leaves_server_running(tmp_path: Path, fake_env: pytest.MonkeyPatch) -> None:
    cfg = server_config(tmp_path, GLM)
    owner = RunDir(tmp_path / "owner")
    with managed_server(cfg, cfg.server, owner, kind=server_kind(cfg.server.kind)) as upstream:
        att_cfg = server_config(tmp_path, {**GLM, "kind": "endpoint", "endpoint": upstream.base_url + "/v1/"})
        attached = RunDir(tmp_path / "attached")
        with managed_server(att_cfg, att_cfg.server, attached, kind=server_kind(att_cfg.server.kind)) as handle:
            assert handle.base_url == upstream.base_url and handle.process is None
            assert handle.verification is not None and handle.verification.verified
        launch = _launched(attached)
        assert launch.kind == "endpoint" and launch.stop_method == "attached" and launch.pid is None
        assert group_alive(upstream.launch.pid or 0)
    _assert_stopped(owner)


def test_answer_key_kind_uses_the_same_path(tmp_path: Path, fake_env: pytest.MonkeyPatch) -> None:
    cfg = server_config(tmp_path, {"kind": "answer_key", "answer_key": {"mode": "positive"}})
    rundir = RunDir(tmp_path / "run")
    with managed_server(cfg, cfg.server, rundir, kind=server_kind(cfg.server.kind)) as handle:
        assert handle.verification is not None and handle.verification.verified
        assert handle.verification.description.startswith("answer-key self-test server, model fake-model")
    launch = _assert_stopped(rundir)
    assert launch.argv[2] == "evalpipe.engines.answer_key_server" and launch.stop_method == "sigterm"


# evalpipe's stand-in: a run holding a managed server until a signal ends it.  It installs Python's Ctrl-C
# handler as evalpipe's entry point does (``evalpipe.cli.main``): started from a background job, the driver
# inherits SIGINT ignored, and Python leaves it so.
_DRIVER = r"""
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
from evalpipe.config.loader import load_config
from evalpipe.artifacts import RunDir
from evalpipe.server.kinds.registry import server_kind
from evalpipe.server.lifecycle import managed_server
cfg = load_config(sys.argv[1], check_sampling=False)
try:
    with managed_server(cfg, cfg.server, RunDir(sys.argv[2]), kind=server_kind(cfg.server.kind)) as h:
        print(h.launch.pid, flush=True)
        time.sleep(60)
except KeyboardInterrupt as exc:
    print("unwound", type(exc).__name__, flush=True)
    sys.exit(130)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_to_evalpipe_stops_server(tmp_path: Path, fake_env: pytest.MonkeyPatch, sig: int) -> None:
    cfg = server_config(tmp_path)
    rundir = RunDir(tmp_path / "run")
    driver = subprocess.Popen(
        [sys.executable, "-c", _DRIVER, str(cfg.config_path), str(rundir.root)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": f"{FAKE_SGLANG_DIR}{os.pathsep}{Path(__file__).parents[2]}"},
        start_new_session=True,
    )
    server_pgid = 0
    try:
        assert driver.stdout is not None
        server_pgid = int(driver.stdout.readline())
        assert group_alive(server_pgid)
        driver.send_signal(sig)
        out, _ = driver.communicate(timeout=30)
        assert driver.returncode == 130
        assert "unwound" in out
        assert_group_gone(server_pgid)
        assert _launched(rundir).stop_method == "sigterm"
    finally:
        signal_group(driver.pid, signal.SIGKILL)
        if server_pgid:
            signal_group(server_pgid, signal.SIGKILL)


def test_a_dead_worker_of_a_fleet_ends_the_run_naming_its_log(tmp_path: Path) -> None:
    """A router lists a dead worker as healthy for several health-check intervals: the watch does not wait."""
    from evalpipe.errors import ServerDied
    from evalpipe.processes.group import spawn, stop_group
    from evalpipe.server.kinds.base import ServerHandle
    from evalpipe.server.lifecycle import watch_server

    rundir = RunDir(tmp_path / "run")
    worker_log = tmp_path / "run" / "server" / "workers" / "1" / "server.log"
    worker_log.parent.mkdir(parents=True)
    worker_log.write_text("worker 1 loading\nworker 1: CUDA out of memory\n")
    router = spawn([sys.executable, "-c", "import time; time.sleep(60)"])
    worker = spawn([sys.executable, "-c", "import sys; sys.exit(3)"])
    handle = ServerHandle(
        base_url="http://127.0.0.1:1",
        launch=LaunchRecord(kind="router", base_url="http://127.0.0.1:1"),
        server=None,  # type: ignore[arg-type]  # not read by the watch
        process=router,
        members=[
            ServerHandle(
                base_url="http://127.0.0.1:2",
                launch=LaunchRecord(kind="command", base_url="http://127.0.0.1:2"),
                server=None,  # type: ignore[arg-type]
                process=worker,
                log_path=worker_log,
            )
        ],
    )
    started = time.monotonic()
    try:
        with pytest.raises(ServerDied) as exc, watch_server(handle, rundir, poll_s=0.05):
            time.sleep(30)
    finally:
        stop_group(router, 5)
    assert time.monotonic() - started < 10
    assert (
        exc.value.message
        == f"a worker of the fleet died during the evaluation (exit code 3; log: {worker_log})"
    )
    assert exc.value.details[-1] == "worker 1: CUDA out of memory"
