"""``server.kind: command``: any OpenAI-compatible server from an argv, through SGLang's lifecycle.

The server here is tests/scripted_server.py with ``--no-server-info``: no ``/server_info`` and (optionally)
no ``/health``, like llama.cpp's or vLLM's.  Verification must say "not verifiable" (never "resolved a different
config"), check the served name from ``/v1/models``, and never crash; bad input is one clear line.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_sglang.support import server_config
from helpers.config import entry, write_config
from helpers.server_process import SCRIPTED_SERVER, ServerProcess, assert_group_gone

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.server import LaunchRecord
from evalpipe.audit.checks import check_server
from evalpipe.config.loader import load_config
from evalpipe.errors import ConfigError, ExitCode, PreflightError, ServerError
from evalpipe.processes.ports import free_port
from evalpipe.resolve import load_run
from evalpipe.server.kinds.registry import server_kind
from evalpipe.server.lifecycle import managed_server
from evalpipe.server.preflight import run_preflight
from evalpipe.server.verify import verify

SCRIPTED = SCRIPTED_SERVER[1]
#: A plain OpenAI-compatible server: one fixed answer, no SGLang info routes.
PLAIN_ARGS = ("--answer", "The answer is 42.", "--no-server-info")
GLM_LIKE = {"tp_size": 8, "attention_backend": "dsa", "kv_cache_dtype": "fp8_e4m3"}


def _command(*extra: str) -> list[str]:
    return [
        "{python}",
        SCRIPTED,
        *PLAIN_ARGS,
        "--host",
        "{host}",
        "--port",
        "{port}",
        "--served-name",
        "{served_name}",
        *extra,
    ]


def _cfg(tmp_path: Path, command: list[str], **server: object):  # type: ignore[no-untyped-def]
    return server_config(
        tmp_path,
        {"kind": "command", "command": command, "launch_timeout_s": 20, **server},
        model_dir=False,
    )


def _stopped(rundir: RunDir) -> LaunchRecord:
    launch = read_model(rundir.server_launch, LaunchRecord)
    assert launch.pid is not None
    assert_group_gone(launch.pid)
    return launch


def test_command_server_without_server_info_or_health(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, _command("--no-health"))
    rundir = RunDir(tmp_path / "run")
    with managed_server(cfg, cfg.server, rundir, kind=server_kind(cfg.server.kind)) as handle:  # ready via /v1/models; on_mismatch abort
        v = handle.verification
        assert v is not None
        assert v.kind == "command" and v.resolved_config_available is False and v.verified is False
        assert [(c.key, c.ok) for c in v.checks] == [("served_model_name", True)]
        assert v.served_models == ["fake-model"] and v.served_model_name == "fake-model"
        assert "resolved configuration not verifiable: the server has no /server_info" in v.description
        assert "served model name 'fake-model' checked from /v1/models" in v.description
        assert "different config" not in v.description
        argv = read_model(rundir.server_launch, LaunchRecord).argv
        assert argv[0] == sys.executable and handle.base_url.rsplit(":", 1)[1] in argv  # {port} filled
    launch = _stopped(rundir)
    assert launch.stop_method == "sigterm" and rundir.server_log.is_file()
    findings = check_server(v, True)
    assert [(f.severity, f.code) for f in findings] == [("warn", "server_not_verified")]
    assert findings[0].message.startswith("resolved configuration not verifiable")
    assert "kv_cache_dtype" not in findings[0].message  # command kind expects only what such a server has


def test_wrong_served_name_aborts(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, [*_command()[:-1], "other-model"])
    rundir = RunDir(tmp_path / "run")
    with pytest.raises(ServerError) as exc:
        with managed_server(cfg, cfg.server, rundir, kind=server_kind(cfg.server.kind)):
            pass
    assert "served_model_name: config 'fake-model', server resolved 'other-model'" in str(exc.value)
    _stopped(rundir)


def test_endpoint_without_server_info_never_crashes(tmp_path: Path) -> None:
    """--endpoint at such a server, with a GLM-like config: unverifiable, named plainly, not a mismatch."""
    port = free_port()
    argv = [*SCRIPTED_SERVER, *PLAIN_ARGS, "--port", str(port), "--served-name", "fake-model"]
    with ServerProcess(argv, log=tmp_path / "plain.log", port=port):
        cfg = server_config(
            tmp_path, {**GLM_LIKE, "kind": "endpoint", "endpoint": f"http://127.0.0.1:{port}/v1"}
        )
        with managed_server(cfg, cfg.server, RunDir(tmp_path / "run"), kind=server_kind(cfg.server.kind)) as handle:
            v = handle.verification
        assert v is not None and not v.verified and not v.resolved_config_available
        assert set(v.unverified_keys) >= {"tp_size", "kv_cache_dtype", "attention_backend"}
        (finding,) = check_server(v, True)
        assert "tp_size" in finding.message and "resolved None" not in finding.message
        assert "different config" not in finding.message


def test_verify_reports_unverifiable_without_models_listing(tmp_path: Path) -> None:
    cfg = server_config(tmp_path, {**GLM_LIKE, "kind": "endpoint", "endpoint": "http://127.0.0.1:9"})
    v = verify(cfg, cfg.server, None, base_url="http://x", info_error="/server_info: HTTP 404")
    assert v.checks == [] and "served_model_name" in v.unverified_keys
    assert "served model name not checked" in v.description


def test_command_that_exits_at_once(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, ["{python}", "-c", "import sys; print('bad flag --frobnicate'); sys.exit(3)"])
    rundir = RunDir(tmp_path / "run")
    t0 = time.monotonic()
    with pytest.raises(ServerError) as exc:
        with managed_server(cfg, cfg.server, rundir, kind=server_kind(cfg.server.kind)):
            pass
    assert time.monotonic() - t0 < 15
    assert str(exc.value).startswith("server exited with code 3 before becoming ready")
    assert "bad flag --frobnicate" in str(exc.value)  # the log's last lines
    _stopped(rundir)


def test_server_never_ready_times_out(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, _command("--never-ready"), launch_timeout_s=1.5)
    rundir = RunDir(tmp_path / "run")
    with pytest.raises(ServerError) as exc:
        with managed_server(cfg, cfg.server, rundir, kind=server_kind(cfg.server.kind)):
            pass
    assert "not ready within 1.5 s (last /health: HTTP 503)" in str(exc.value)
    launch = _stopped(rundir)
    assert launch.stop_method in ("sigterm", "sigkill")


def test_preflight_port_in_use_and_missing_model(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cfg = _cfg(tmp_path, [*_command(), "--model", "{model_path}"], port=port)
        with pytest.raises(PreflightError) as exc:
            run_preflight(cfg, cfg.server, kind=server_kind(cfg.server.kind), punkt_needed=None)
    report = exc.value.report
    assert report is not None
    failed = {c.rule: c.message for c in report.failures}
    assert failed["port_free"] == f"--port {port} is already in use on 127.0.0.1 (another server running?)"
    assert failed["model_path"].startswith("model.path model:")
    assert "does not exist (server.command uses {model_path})" in failed["model_path"]


def test_preflight_missing_executable(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, ["/nonexistent/llama-server", "--port", "{port}"])
    with pytest.raises(PreflightError) as exc:
        run_preflight(cfg, cfg.server, kind=server_kind(cfg.server.kind), punkt_needed=None)
    assert str(exc.value).startswith("preflight: server.command[0]: /nonexistent/llama-server: no such file")


def test_config_rejects_unknown_placeholder_and_missing_command(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    gsm8k = [{"name": "gsm8k", "sampling": {"per_stratum": 1}}]
    write_config(path, server={"kind": "command", "command": ["srv", "--port", "{prot}"]}, benchmarks=gsm8k)
    with pytest.raises(ConfigError) as exc:
        load_config(path, check_sampling=False)
    assert "unknown placeholder {prot}" in str(exc.value) and "server" in str(exc.value)
    write_config(path, server={"kind": "command"}, benchmarks=gsm8k)
    with pytest.raises(ConfigError) as exc:
        load_run(path, check_sampling=False)  # the kind's own check: the resolve step
    assert "command (the server's argv) is required" in str(exc.value)


@pytest.mark.parametrize(
    ("command", "first_line", "exit_code"),
    [
        (  # the server itself failed: exit 4 (server), not 2 (bad input)
            ["{python}", "-c", "import sys; print('unknown flag --frobnicate'); sys.exit(3)"],
            "error: server exited with code 3 before becoming ready; last 2 log lines of",
            ExitCode.SERVER,
        ),
        (  # refused before launching: a usage error
            ["{python}", "-m", "evalpipe.engines.llamacpp", "--model", "{model_path}", "--port", "{port}"],
            "error: preflight: model.path missing.gguf:",
            ExitCode.USAGE,
        ),
    ],
)
def test_cli_bad_server_is_one_line_with_its_exit_code(
    tmp_path: Path, command: list[str], first_line: str, exit_code: ExitCode
) -> None:
    data = Path(__file__).resolve().parents[2] / "evalpipe" / "selftest" / "data" / "gsm8k"
    path = write_config(
        tmp_path / "bad.yaml",
        name="bad-server",
        model={"path": "missing.gguf", "served_name": "m"},
        server={"kind": "command", "command": command, "port": 0, "launch_timeout_s": 30},
        benchmarks=[entry("gsm8k", subset="main", source={"local": str(data)})],
        output_root=str(tmp_path / "results"),
    )
    proc = subprocess.run(
        [sys.executable, "-m", "evalpipe.cli.entry", "run", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == exit_code, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines[0].startswith(first_line), proc.stderr
    assert "Traceback" not in proc.stderr
