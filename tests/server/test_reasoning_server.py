"""Reasoning models as GLM-5 is served: parser flags, preflight name check, thinking toggle, and
verification/redaction against the ``/server_info`` payload real SGLang 0.5.23 builds for glm-fp8.yaml."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from fake_sglang.support import FAKE_SGLANG_DIR, fake_nvidia_smi, server_config

from evalpipe.artifacts.redact import REDACTED, redact
from evalpipe.cli.main import main
from evalpipe.config.loader import load_config
from evalpipe.errors import ConfigError, PreflightError
from evalpipe.evalscope_bridge.task import generation_config
from evalpipe.server.chat_template import thinking_kwargs
from evalpipe.server.kinds.registry import server_kind
from evalpipe.server.kinds.sglang.flags import build_argv, resolved_value
from evalpipe.server.preflight import run_preflight
from evalpipe.server.verify import mismatches, verify

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "sglang-0.5.23-server_info-glm-fp8.json"
GLM_CONFIG = ROOT / "configs" / "glm-fp8.yaml"
PLANTED = "sk-evalpipe-PLANTED-fixture-key-0123456789abcdef"
GLM = {
    "tp_size": 8,
    "ep_size": 4,
    "attention_backend": "dsa",
    "dsa_prefill_backend": "tilelang",
    "dsa_decode_backend": "tilelang",
    "kv_cache_dtype": "fp8_e4m3",
    "speculative": {"algorithm": "EAGLE"},
}


def _real_info() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def _glm_env(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    fake_nvidia_smi(bin_dir, [("NVIDIA H100 80GB HBM3", "9.0")] * 8)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": str(FAKE_SGLANG_DIR), "HOME": str(tmp_path)}


# ---------------------------------------------------------------- the real payload


def test_fixture_is_the_real_shape_for_the_glm_argv() -> None:
    """The payload was built by SGLang from exactly the argv evalpipe builds for glm-fp8.yaml."""
    info = _real_info()
    cfg = load_config(GLM_CONFIG, check_sampling=False)
    argv = build_argv(cfg, cfg.server, sglang_version="0.5.23", python="python")
    assert info["launch_command"] == " ".join([*argv[3:], "--api-key", PLANTED]), (
        "the glm-fp8 argv changed: regenerate the fixture with tools/make_sglang_server_info_fixture.py"
    )
    assert info["version"] == "0.5.23" and isinstance(info["internal_states"], list)
    # where 0.5.23 reports the verified values: flat at the top level and again in each DP rank's state
    for key in ("kv_cache_dtype", "dsa_prefill_backend", "dsa_decode_backend", "reasoning_parser", "tp_size"):
        assert key in info and all(key in state for state in info["internal_states"])


def test_glm_config_verifies_against_the_real_payload() -> None:
    cfg = load_config(GLM_CONFIG, check_sampling=False)
    v = verify(cfg, cfg.server, _real_info(), base_url="http://127.0.0.1:30000")
    assert v.verified, mismatches(v)
    keys = {c.key for c in v.checks}
    assert {"kv_cache_dtype", "dsa_prefill_backend", "dsa_decode_backend", "reasoning_parser"} <= keys
    assert {"tool_call_parser", "speculative_algorithm", "tp_size", "ep_size"} <= keys
    assert v.reasoning_parser == "glm45" and v.server_version == "0.5.23"
    assert "reasoning parser glm45" in v.description and "verified from server_info" in v.description


@pytest.mark.parametrize(
    ("key", "served"),
    [("kv_cache_dtype", "bfloat16"), ("dsa_decode_backend", "flashmla_kv"), ("reasoning_parser", None)],
)
@pytest.mark.parametrize("where", ["top_level", "internal_states"])
def test_changed_value_fails_naming_the_field(key: str, served: Any, where: str) -> None:
    """A server that resolved a different KV dtype / DSA backend / reasoning parser fails verification, whether
    the value is read at the top level or (when the top level lacks it) from the per-DP internal_states."""
    info = _real_info()
    if where == "top_level":
        info[key] = served
        info["internal_states"][0][key] = served
    else:
        del info[key]
        info["internal_states"][0][key] = served
    cfg = load_config(GLM_CONFIG, check_sampling=False)
    v = verify(cfg, cfg.server, info, base_url="http://x")
    assert not v.verified
    failed = [c.key for c in v.checks if not c.ok]
    assert failed == [key]
    assert key in v.description and "MISMATCH" in v.description


def test_value_only_in_internal_states_is_found() -> None:
    info = _real_info()
    del info["reasoning_parser"]
    assert resolved_value(info, "reasoning_parser") == "glm45"


def test_model_without_reasoning_expects_no_parser() -> None:
    cfg = load_config(GLM_CONFIG, check_sampling=False)
    cfg.model.reasoning_parser = "none"
    cfg.model.tool_call_parser = None
    v = verify(cfg, cfg.server, _real_info(), base_url="http://x")
    assert [c.key for c in v.checks if not c.ok] == ["reasoning_parser"]


def test_planted_api_key_is_redacted_everywhere_sglang_puts_it() -> None:
    info = _real_info()
    assert info["api_key"] == PLANTED and PLANTED in info["launch_command"]
    assert all(state["api_key"] == PLANTED for state in info["internal_states"])
    out = redact(copy.deepcopy(info))
    assert PLANTED not in json.dumps(out)
    assert out["api_key"] == REDACTED and "--api-key ***" in out["launch_command"]
    assert [s["api_key"] for s in out["internal_states"]] == [REDACTED]
    # nothing else changes: token counts, KV dtype and parser names survive
    assert out["kv_cache_dtype"] == "fp8_e4m3" and out["reasoning_parser"] == "glm45"
    assert out["max_total_tokens"] == info["max_total_tokens"]


# ---------------------------------------------------------------- argv, preflight, thinking toggle


def test_argv_carries_the_parsers() -> None:
    cfg = load_config(GLM_CONFIG, check_sampling=False)
    argv = build_argv(cfg, cfg.server, sglang_version="0.5.23")
    assert argv[argv.index("--reasoning-parser") + 1] == "glm45"
    assert argv[argv.index("--tool-call-parser") + 1] == "glm47"
    cfg.model.reasoning_parser, cfg.model.tool_call_parser = "none", None
    argv = build_argv(cfg, cfg.server, sglang_version="0.5.23")
    assert "--reasoning-parser" not in argv and "--tool-call-parser" not in argv


def test_preflight_accepts_known_parser_names(tmp_path: Path) -> None:
    cfg = server_config(tmp_path, GLM, model={"path": "model", "served_name": "m",
                                              "reasoning_parser": "glm45", "tool_call_parser": "glm47"})  # fmt: skip
    report = run_preflight(cfg, cfg.server, kind=server_kind(cfg.server.kind), punkt_needed=None, env=_glm_env(tmp_path))
    status = {c.rule: c.status for c in report.checks}
    assert status["reasoning_parser"] == "ok" and status["tool_call_parser"] == "ok"
    assert status["dry_parse"] == "ok"


def test_preflight_refuses_a_parser_the_installed_sglang_does_not_know(tmp_path: Path) -> None:
    cfg = server_config(tmp_path, GLM, model={"path": "model", "served_name": "m",
                                              "reasoning_parser": "glm99"})  # fmt: skip
    with pytest.raises(PreflightError) as exc:
        run_preflight(cfg, cfg.server, kind=server_kind(cfg.server.kind), punkt_needed=None, env=_glm_env(tmp_path))
    # the first (headline) failure names the config field; the list comes from the installed (fake) SGLang
    assert exc.value.message.startswith(
        "preflight: model.reasoning_parser: 'glm99' is not a --reasoning-parser"
    )
    assert "deepseek-v3, glm45" in exc.value.message


def test_preflight_cli_exit_2_names_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for k, v in _glm_env(tmp_path).items():
        monkeypatch.setenv(k, v)
    cfg = server_config(tmp_path, GLM, model={"path": "model", "served_name": "m",
                                              "tool_call_parser": "nope"})  # fmt: skip
    with pytest.raises(SystemExit) as exc:
        main(["server", "preflight", str(cfg.config_path)])
    assert exc.value.code == 2
    assert "model.tool_call_parser: 'nope'" in capsys.readouterr().err


def test_preflight_without_sglang_skips_the_name_check(tmp_path: Path) -> None:
    cfg = server_config(tmp_path, GLM, model={"path": "model", "served_name": "m",
                                              "reasoning_parser": "glm45"})  # fmt: skip
    env = {**_glm_env(tmp_path), "PYTHONPATH": str(tmp_path / "empty")}
    with pytest.raises(PreflightError, match="sglang is not importable") as exc:
        run_preflight(cfg, cfg.server, kind=server_kind(cfg.server.kind), punkt_needed=None, env=env)
    report = exc.value.report
    assert report is not None
    assert {c.rule: c.status for c in report.checks}["reasoning_parser"] == "skipped"


@pytest.mark.parametrize(
    ("parser", "thinking", "kwargs"),
    [
        ("glm45", "enabled", {"enable_thinking": True}),
        ("glm45", "disabled", {"enable_thinking": False}),
        ("deepseek-v3", "enabled", {"thinking": True}),
        ("deepseek-v3", "disabled", {"thinking": False}),
        ("glm45", "model_default", None),
        ("none", "model_default", None),
    ],
)
def test_thinking_toggle_follows_the_reasoning_parser(
    tmp_path: Path, parser: str, thinking: str, kwargs: dict | None
) -> None:
    cfg = server_config(tmp_path, model={"path": "model", "served_name": "m",
                                         "reasoning_parser": parser, "thinking": thinking})  # fmt: skip
    assert thinking_kwargs(cfg) == kwargs
    body = generation_config(cfg, "gsm8k")
    if kwargs is None:
        assert "extra_body" not in body
    else:
        assert body["extra_body"] == {"chat_template_kwargs": kwargs}


@pytest.mark.parametrize("parser", ["none", "deepseek-r1"])
def test_thinking_toggle_without_a_known_toggle_is_a_config_error(tmp_path: Path, parser: str) -> None:
    cfg = server_config(tmp_path, model={"path": "model", "served_name": "m",
                                         "reasoning_parser": parser, "thinking": "disabled"})  # fmt: skip
    with pytest.raises(ConfigError, match=r"^model\.thinking: disabled"):
        thinking_kwargs(cfg)
    with pytest.raises(SystemExit) as exc:
        main(["config", "validate", str(cfg.config_path)])
    assert exc.value.code == 2


def test_report_shows_the_verification_of_the_real_payload(tmp_path: Path) -> None:
    from fixtures_rundir import RunDirBuilder, Sample

    from evalpipe.report.markdown import render_markdown
    from evalpipe.run.audit import audit_run

    cfg = load_config(GLM_CONFIG, check_sampling=False)
    b = RunDirBuilder(tmp_path / "run")
    b.verification = verify(cfg, cfg.server, redact(_real_info()), base_url="http://127.0.0.1:30000")
    b.server_info = redact(_real_info())
    b.add(Sample("gsm8k", "g1"))
    summary = audit_run(b.write().root, write=False)
    md = render_markdown(summary)
    # a source-built payload with no log and no local model: the FP8 row's layout is not stated, so not claimed
    assert (
        "Server verification: KV layout: fp8_e4m3 (row layout not stated), TileLang prefill/decode; page size 64; "
        "TP 8, EP 4; MTP EAGLE; "
        "reasoning parser glm45; request seed not effective (no --enable-deterministic-inference) — "
        "verified from server_info"
    ) in md
    assert PLANTED not in md and not [f for f in summary.findings if f.code == "secret_in_artifact"]
