"""SGLang argv for the installed version, variants, answer-key argv, and `evalpipe server command`."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from fake_sglang.support import FAKE_SGLANG_DIR, server_config

from evalpipe.cli.main import main
from evalpipe.config.models import RunConfig
from evalpipe.errors import ConfigError
from evalpipe.server.kinds.registry import server_kind
from evalpipe.server.kinds.sglang import sglang_settings
from evalpipe.server.kinds.sglang.flags import (
    build_argv,
    extra_args_conflicts,
    normalize,
    parse_version,
    resolved_value,
    uses_dsa_names,
)
from evalpipe.server.variants import effective_server

GLM = {
    "tp_size": 8,
    "ep_size": 4,
    "attention_backend": "dsa",
    "dsa_prefill_backend": "tilelang",
    "dsa_decode_backend": "tilelang",
    "kv_cache_dtype": "fp8_e4m3",
    "speculative": {"algorithm": "EAGLE", "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4},
    "port": 30000,
}


def _pairs(argv: list[str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    i = 3
    while i < len(argv):
        if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            out[argv[i]] = argv[i + 1]
            i += 2
        else:
            out[argv[i]] = None
            i += 1
    return out


def test_argv_for_sglang_0_5_23(tmp_path: Path) -> None:
    cfg = server_config(tmp_path, GLM)
    argv = build_argv(cfg, cfg.server, sglang_version="0.5.23")
    assert argv[:3] == [sys.executable, "-m", "sglang.launch_server"]
    flags = _pairs(argv)
    assert flags["--model-path"] == str(tmp_path / "model")
    assert flags["--served-model-name"] == "fake-model"
    assert flags["--tp-size"] == "8" and flags["--ep-size"] == "4"
    assert flags["--attention-backend"] == "dsa"
    assert flags["--dsa-prefill-backend"] == "tilelang" and flags["--dsa-decode-backend"] == "tilelang"
    assert flags["--kv-cache-dtype"] == "fp8_e4m3"
    assert flags["--speculative-algorithm"] == "EAGLE"
    assert flags["--speculative-num-steps"] == "3"
    assert flags["--speculative-eagle-topk"] == "1"
    assert flags["--speculative-num-draft-tokens"] == "4"
    assert "--nnodes" not in flags and "--api-key" not in flags
    assert not any(a.startswith("--nsa") for a in argv)


def test_argv_before_0_5_13_uses_nsa_names(tmp_path: Path) -> None:
    cfg = server_config(tmp_path, GLM)
    flags = _pairs(build_argv(cfg, cfg.server, sglang_version="0.5.12.post1"))
    assert flags["--attention-backend"] == "nsa"
    assert flags["--nsa-prefill-backend"] == "tilelang" and flags["--nsa-decode-backend"] == "tilelang"
    assert "--dsa-prefill-backend" not in flags


def test_version_parsing() -> None:
    assert parse_version("0.5.13rc1") == (0, 5, 13)
    assert parse_version("garbage") is None
    assert uses_dsa_names("0.5.13") and uses_dsa_names(None) and not uses_dsa_names("0.4.10")


def test_multi_node_api_key_and_extra_args(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = server_config(
        tmp_path,
        {
            "tp_size": 16,
            "multi_node": {"nnodes": 2, "node_rank": 1, "dist_init_addr": "10.0.0.1:5000"},
            "api_key_env": "EVALPIPE_TEST_KEY",
            "extra_args": ["--trust-remote-code", "--mem-fraction-static", "0.8"],
        },
    )
    monkeypatch.setenv("EVALPIPE_TEST_KEY", "k-123")
    argv = build_argv(cfg, cfg.server, sglang_version="0.5.23")
    flags = _pairs(argv)
    assert (flags["--nnodes"], flags["--node-rank"], flags["--dist-init-addr"]) == ("2", "1", "10.0.0.1:5000")
    assert flags["--api-key"] == "k-123"
    assert argv[-3:] == ["--trust-remote-code", "--mem-fraction-static", "0.8"]
    shown = build_argv(cfg, cfg.server, sglang_version="0.5.23", resolve_secrets=False)
    assert "k-123" not in shown and "$EVALPIPE_TEST_KEY" in shown
    monkeypatch.delenv("EVALPIPE_TEST_KEY")
    with pytest.raises(ConfigError, match="EVALPIPE_TEST_KEY"):
        build_argv(cfg, cfg.server, sglang_version="0.5.23")


def _kind_argv(cfg: RunConfig) -> list[str]:
    return server_kind(cfg.server.kind).argv(cfg, cfg.server, engine_version=None)


def test_answer_key_and_endpoint_kinds(tmp_path: Path) -> None:
    cfg = server_config(tmp_path, {"kind": "answer_key", "port": 4321, "answer_key": {"mode": "negative"}})
    argv = _kind_argv(cfg)
    assert argv == [
        sys.executable,
        "-m",
        "evalpipe.engines.answer_key_server",
        "--host",
        "127.0.0.1",
        "--port",
        "4321",
        "--served-model-name",
        "fake-model",
        "--mode",
        "negative",
    ]
    cfg2 = server_config(
        tmp_path, {"kind": "answer_key", "port": 1, "answer_key": {"faults": ["truncate", "http_500_once"]}}
    )
    assert _kind_argv(cfg2)[-4:] == [
        "--mode",
        "positive",
        "--faults",
        "truncate,http_500_once",
    ]
    cfg3 = server_config(tmp_path, {"kind": "endpoint", "endpoint": "http://router:8000"})
    with pytest.raises(ConfigError, match="nothing is launched"):
        _kind_argv(cfg3)


def test_extra_args_conflicts(tmp_path: Path) -> None:
    cfg = server_config(
        tmp_path, {"extra_args": ["--kv-cache-dtype=bf16", "--tp", "2", "--trust-remote-code"]}
    )
    assert extra_args_conflicts(cfg.server) == [
        ("--kv-cache-dtype", "server.kv_cache_dtype"),
        ("--tp", "server.settings.tp_size"),
    ]
    assert extra_args_conflicts(server_config(tmp_path, {"extra_args": ["--trust-remote-code"]}).server) == []


def test_variants(tmp_path: Path) -> None:
    """Overrides address the kind's settings under ``settings`` (merged key by key, or dotted); a setting
    named at its old place (``multi_node.nnodes``) is read as ``settings.multi_node.nnodes``."""
    cfg = server_config(
        tmp_path,
        GLM,
        variants=[
            {
                "name": "bf16_control",
                "overrides": {"kv_cache_dtype": "bfloat16", "settings": {"speculative": {"num_steps": 2}}},
            },
            {"name": "dotted", "overrides": {"settings.ep_size": 8}},
            {"name": "old_place", "overrides": {"multi_node.nnodes": 2, "multi_node.dist_init_addr": "h:1"}},
        ],
    )
    base = effective_server(cfg, None)
    assert base == cfg.server and base is not cfg.server
    bf16 = effective_server(cfg, "bf16_control")
    st = sglang_settings(bf16)
    assert bf16.kv_cache_dtype == "bfloat16" and st.tp_size == 8 and st.attention_backend == "dsa"
    assert (
        st.speculative is not None
        and st.speculative.num_steps == 2
        and st.speculative.algorithm == "EAGLE"
    )
    assert cfg.server.kv_cache_dtype == "fp8_e4m3"  # the base is not modified
    assert sglang_settings(effective_server(cfg, "dotted")).ep_size == 8
    assert sglang_settings(effective_server(cfg, "old_place")).multi_node.nnodes == 2
    with pytest.raises(ConfigError, match=r"unknown variant 'nope'.*bf16_control"):
        effective_server(cfg, "nope")


@pytest.mark.parametrize(
    ("overrides", "wrong"),
    [
        ({"kv_cache_dtpye": "bf16"}, "kv_cache_dtpye"),
        ({"tp_size": 0}, "settings.tp_size: must be > 0"),
        ({"settings": {"tp_sise": 2}}, "settings.tp_sise: unknown"),
    ],
)
def test_a_wrong_variant_is_refused_when_the_config_is_resolved(
    tmp_path: Path, overrides: dict[str, object], wrong: str
) -> None:
    """Before anything runs, on the variant's YAML line — not when its turn comes mid-run."""
    with pytest.raises(ConfigError) as exc:
        server_config(tmp_path, GLM, variants=[{"name": "bad", "overrides": overrides}])
    assert any("variants[0].overrides" in d and wrong in d for d in exc.value.details), exc.value.details


def test_resolved_value_lookup_and_normalize() -> None:
    info = {
        "nsa_prefill_backend": "tilelang",
        "attention_backend": None,
        "internal_states": [{"attention_backend": "nsa"}],
    }
    assert resolved_value(info, "dsa_prefill_backend") == "tilelang"
    assert resolved_value(info, "attention_backend") == "nsa"
    assert normalize("nsa") == "dsa" and normalize("bf16") == "bfloat16" and normalize("NONE") is None
    assert normalize("8") == 8


def test_cli_server_command_prints_one_quoted_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = server_config(
        tmp_path,
        {**GLM, "api_key_env": "EVALPIPE_TEST_KEY", "extra_args": ["--json-model-override-args", '{"a": 1}']},
    )
    monkeypatch.setenv("EVALPIPE_TEST_KEY", "never-printed")
    monkeypatch.setenv("PYTHONPATH", str(FAKE_SGLANG_DIR))  # the fake reports version 0.5.23
    assert main(["server", "command", str(cfg.config_path)]) == 0
    out = capsys.readouterr().out.strip()
    assert "\n" not in out and "never-printed" not in out
    assert '--api-key "$EVALPIPE_TEST_KEY"' in out
    argv = shlex.split(out.replace('"$EVALPIPE_TEST_KEY"', "KEY"))
    assert argv[argv.index("--json-model-override-args") + 1] == '{"a": 1}'
    assert argv[argv.index("--dsa-decode-backend") + 1] == "tilelang"
