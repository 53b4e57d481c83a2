"""The llama.cpp launcher's ``--llama-server``: a llama-server binary (a CUDA build on the GPU run of issue 40)
behind the same front, its settings passed as llama.cpp's own flags and its resolved configuration read from
its log — here a stand-in binary (``tests/fake_llama_server.py``) that prints what it was given."""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from pathlib import Path

import pytest

from evalpipe.engines.llamacpp import UsageError, llama_server_argv, parse_args, settings_from, spawn
from evalpipe.processes.group import stop_group

FAKE = Path(__file__).resolve().parents[1] / "fake_llama_server.py"


def _binary(tmp_path: Path) -> Path:
    exe = tmp_path / "llama-server"
    exe.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE} "$@"\n')
    exe.chmod(0o755)
    return exe


def _model(tmp_path: Path) -> Path:
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF" + os.urandom(64))
    return model


def test_the_binary_gets_the_launchers_settings_as_llama_server_flags(tmp_path: Path) -> None:
    exe, model = _binary(tmp_path), _model(tmp_path)
    argv = ["--model", str(model), "--port", "1", "--served-model-name", "smollm2", "--kv-cache-dtype", "q4_0",
            "--cache-type-v", "q8_0", "--ctx-size", "8192", "--parallel", "2", "--threads", "3", "--seed", "7",
            "--no-prompt-cache", "--llama-server", str(exe), "--n-gpu-layers", "999"]  # fmt: skip
    s = settings_from(parse_args(argv), argv)
    assert llama_server_argv(s, 4321) == [
        str(exe), "--model", str(model.resolve()), "--host", "127.0.0.1", "--port", "4321", "--alias", "smollm2",
        "--ctx-size", "8192", "--parallel", "2", "--threads", "3", "--threads-batch", "3",
        "--cache-type-k", "q4_0", "--cache-type-v", "q8_0", "--verbosity", "4", "--n-gpu-layers", "999", "--seed", "7",
        "--no-cache-prompt", "--cache-ram", "0",
    ]  # fmt: skip


def test_bad_binary_flags_are_one_line_usage_errors(tmp_path: Path) -> None:
    model = _model(tmp_path)
    with pytest.raises(UsageError, match="no such executable"):
        argv = ["--model", str(model), "--port", "1", "--llama-server", str(tmp_path / "absent")]
        settings_from(parse_args(argv), argv)
    with pytest.raises(UsageError, match="only with --llama-server"):
        argv = ["--model", str(model), "--port", "1", "--n-gpu-layers", "99"]
        settings_from(parse_args(argv), argv)


def test_server_info_reports_what_the_binary_resolved(tmp_path: Path) -> None:
    exe, model = _binary(tmp_path), _model(tmp_path)
    proc, base = spawn(["--model", str(model), "--served-model-name", "smollm2", "--kv-cache-dtype", "q4_0",
                        "--ctx-size", "4096", "--parallel", "2", "--threads", "1", "--no-prompt-cache",
                        "--llama-server", str(exe), "--n-gpu-layers", "999"], tmp_path / "server.log")  # fmt: skip
    try:
        with urllib.request.urlopen(base + "/server_info", timeout=10) as r:
            info = json.loads(r.read())
        with urllib.request.urlopen(base + "/v1/models", timeout=10) as r:  # passed through to the binary
            models = json.loads(r.read())
    finally:
        stop_group(proc, 10.0)
    assert info["kv_cache_dtype"] == "q4_0" and info["cache_type_k"] == info["cache_type_v"] == "q4_0"
    assert info["n_ctx"] == 4096 and info["n_ctx_per_slot"] == 2048 and info["n_parallel"] == 2
    assert info["n_threads"] == 1 and info["prompt_cache"] is False and info["flash_attention"] is True
    assert info["n_gpu_layers"] == 999 and info["offloaded_layers"] == "30/30"
    assert info["version"] == f"b1-fake000 (llama-server {exe.resolve()})"
    assert info["build"]["version_output"].startswith("version: 1 (fake000)")
    assert info["model_sha256"] and info["served_model_name"] == "smollm2"
    assert models == {"data": [{"id": "smollm2"}]}
    log = (tmp_path / "server.log").read_text()
    assert "llama_kv_cache: size" in log  # the binary's own log reaches the launcher's
