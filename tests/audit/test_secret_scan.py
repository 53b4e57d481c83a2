"""The secret scan over saved server artifacts."""

from __future__ import annotations

import json
from pathlib import Path

from evalpipe.audit.secret_scan import scan_file, scan_paths


def _scan_json(tmp_path: Path, value: object) -> list[tuple[str, str]]:
    p = tmp_path / "x.json"
    p.write_text(json.dumps(value))
    return [(h.where, h.kind) for h in scan_file(p, "x.json")]


def test_secret_named_json_keys(tmp_path: Path) -> None:
    hits = _scan_json(
        tmp_path,
        {
            "api_key": "abcdef123456",
            "admin_api_key": None,
            "env": {"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwx", "CUDA_VISIBLE_DEVICES": "0,1"},
            "tokenizer": {"eos_token": "<|endoftext|>", "pad_token": "padpadpadpad"},
            "max_total_tokens": 100000,
            "redacted": {"api_key": "***", "token": "<redacted>"},
        },
    )
    assert hits == [("api_key", "secret-named key"), ("env.HF_TOKEN", "secret-named key")]


def test_argv_lists_and_launch_command_strings(tmp_path: Path) -> None:
    hits = _scan_json(
        tmp_path,
        {
            "argv": ["python", "-m", "sglang.launch_server", "--api-key", "s3cr3tvalue", "--tp-size", "8"],
            "safe_argv": ["--api-key", "***", "--max-total-tokens", "1000"],
            "launch_command": "python -m sglang.launch_server --admin-api-key=abc12345xyz",
        },
    )
    assert hits == [("argv", "secret flag"), ("launch_command", "secret flag")]


def test_log_lines(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "server_args=ServerArgs(model_path='/m', api_key=None, tokenizer_mode='auto')\n"
        "request header Authorization: Bearer sk-abcdefghijklmnopqrstuvwxyz\n"
        "all good\n"
    )
    hits = {(h.where, h.kind) for h in scan_file(log, "server/server.log")}
    assert hits == {("line 2", "openai-style key"), ("line 2", "authorization header")}


def test_scan_paths_walks_directories_and_skips_absent(tmp_path: Path) -> None:
    (tmp_path / "server").mkdir()
    (tmp_path / "server" / "server_info.json").write_text(json.dumps({"api_key": "abcdefgh12345"}))
    hits = scan_paths(tmp_path, [tmp_path / "server", tmp_path / "missing.json"])
    assert [(h.path, h.where) for h in hits] == [("server/server_info.json", "api_key")]
