"""Secret redaction at the point of capture (argv, env, server_info, free text)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalpipe.artifacts.redact import (
    REDACTED,
    is_secret_key,
    names_credential,
    redact,
    redact_argv,
    redact_mapping,
    redact_text,
    secret_kinds,
)
from evalpipe.audit.secret_scan import scan_file


def test_argv_api_key_value_is_masked_in_both_spellings() -> None:
    argv = [
        "python",
        "-m",
        "sglang.launch_server",
        "--api-key",
        "s3cr3t",
        "--port",
        "30000",
        "--hf-token=abc",
    ]
    assert redact_argv(argv) == [
        "python",
        "-m",
        "sglang.launch_server",
        "--api-key",
        REDACTED,
        "--port",
        "30000",
        f"--hf-token={REDACTED}",
    ]


def test_argv_keeps_token_counts_and_tokenizer_paths() -> None:
    argv = ["--max-total-tokens", "4096", "--tokenizer-path", "/m/tok", "--kv-cache-dtype", "fp8_e4m3"]
    assert redact_argv(argv) == argv


def test_known_secret_values_are_scrubbed_anywhere() -> None:
    assert redact_argv(["--note", "key=s3cr3t-value"], ["s3cr3t-value"]) == ["--note", f"key={REDACTED}"]


def test_secret_key_names() -> None:
    for name in (
        "api_key",
        "API-KEY",
        "Authorization",
        "hf_token",
        "client_secret",
        "db_password",
        "OPENAI_API_KEY",
    ):
        assert is_secret_key(name), name
    for name in ("max_total_tokens", "tokenizer_path", "kv_cache_dtype", "completion_tokens", "num_tokens"):
        assert not is_secret_key(name), name


def test_server_info_redaction_is_deep_and_keeps_numbers() -> None:
    info = {
        "api_key": "s3cr3t",
        "admin_api_key": None,
        "max_total_tokens": 100,
        "launch_command": "python -m sglang.launch_server --api-key s3cr3t --tp-size 8",
        "internal_states": [{"hf_token": "hf_abcdefghijklmnopqrstuv", "attention_backend": "dsa"}],
        "nested": {"note": "uses s3cr3t inside"},
    }
    out = redact(info, ["s3cr3t"])
    assert out["api_key"] == REDACTED
    assert out["admin_api_key"] is None
    assert out["max_total_tokens"] == 100
    assert "s3cr3t" not in str(out)
    assert out["launch_command"].endswith(f"--api-key {REDACTED} --tp-size 8")
    assert out["internal_states"][0] == {"hf_token": REDACTED, "attention_backend": "dsa"}
    assert info["api_key"] == "s3cr3t"  # input untouched


def test_env_mapping_and_free_text() -> None:
    env = {
        "CUDA_VISIBLE_DEVICES": "0,1",
        "SGLANG_API_KEY": "k",
        "HF_TOKEN": "t",
        "SGLANG_X": "Bearer abc.def",
    }
    assert redact_mapping(env) == {
        "CUDA_VISIBLE_DEVICES": "0,1",
        "SGLANG_API_KEY": REDACTED,
        "HF_TOKEN": REDACTED,
        "SGLANG_X": f"Bearer {REDACTED}",
    }
    assert redact_text("Authorization: Bearer sk-1234567890abcdef") == f"Authorization: Bearer {REDACTED}"
    assert redact_text("key sk-abcdefghijkl in log") == f"key {REDACTED} in log"


def test_capture_masks_every_token_shape_the_audit_detects() -> None:
    """One table for both: nothing the audit's secret scan would flag survives capture-time redaction."""
    samples = [
        "ghp_" + "a1B2" * 6,
        "AKIA" + "ABCDEFGHIJKLMNOP",
        "xoxb-" + "1234567890-abcdef",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlX3ZhbHVl",
        "hf_" + "x" * 24,
        "sk-proj-" + "y" * 20,
    ]
    for token in samples:
        line = f"launch_command: python -m sglang.launch_server --model m # {token}"
        assert list(secret_kinds(line)), token  # the audit would flag it ...
        masked = redact_text(line)
        assert token not in masked and not list(secret_kinds(masked)), token  # ... capture removes it


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("--api-key abcdef123 --tp 8", f"--api-key {REDACTED} --tp 8"),
        ("HF_TOKEN=hf_abcdefghijklmnopqrstuvwx", f"HF_TOKEN={REDACTED}"),
        ("Bearer sk-abcdefghijklmnopqrstuv", f"Bearer {REDACTED}"),
        ("api_key=None, max_total_tokens=5", "api_key=None, max_total_tokens=5"),
        ("--api-key ***", "--api-key ***"),
    ],
)
def test_redact_text_keeps_keys_flags_and_markers(text: str, expected: str) -> None:
    assert redact_text(text) == expected


def test_capture_masks_every_value_form_the_audit_detects() -> None:
    """Flag, header and assignment forms: what the scan flags in a line, redaction removes."""
    for line in (
        "api_key=abcdefgh12345, tp_size=8",
        "server_args=ServerArgs(model_path='/m', admin_api_key='Zq8abcdef1234')",
        "python -m sglang.launch_server --admin-api-key=abc12345xyz --tp 8",
        "--hf-token hf_shorttoken99 --port 1",
        "Authorization: Bearer abcdefgh.ijklmnop",
    ):
        assert list(secret_kinds(line)), line
        masked = redact_text(line)
        assert not list(secret_kinds(masked)), (line, masked)


def test_nothing_the_scan_flags_in_a_saved_document_survives_capture(tmp_path: Path) -> None:
    """Capture-time ``redact`` of a JSON document leaves nothing the audit's file scan would flag: every
    credential-named key is a key capture masks, and every text form it detects is masked in strings."""
    real = json.loads(
        (Path(__file__).parents[1] / "fixtures" / "sglang-0.5.23-server_info-glm-fp8.json").read_text()
    )
    documents = [
        real,
        {
            "api_key": "abcdef123456",
            "env": {"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwx", "CUDA_VISIBLE_DEVICES": "0,1"},
            "argv": ["python", "-m", "sglang.launch_server", "--api-key", "s3cr3tvalue", "--tp-size", "8"],
            "launch_command": "python -m sglang.launch_server --admin-api-key=abc12345xyz",
            "log": "request header Authorization: Bearer sk-abcdefghijklmnopqrstuvwxyz",
            "note": "client_secret=Abcdefgh123456 in a string",
            "kv_transfer_api_key": "Abcdefgh123456",
            "token": "Abcdefgh123456",
        },
    ]
    for i, doc in enumerate(documents):
        raw, masked = tmp_path / f"raw{i}.json", tmp_path / f"masked{i}.json"
        raw.write_text(json.dumps(doc))
        masked.write_text(json.dumps(redact(doc)))
        assert scan_file(raw, raw.name), i  # the scan flags the unredacted document ...
        assert scan_file(masked, masked.name) == [], i  # ... and nothing in the redacted one


def test_credential_names_are_a_subset_of_the_names_capture_masks() -> None:
    """Detection (a hit fails the run) is precise; masking is broad and covers every detected name."""
    names = [
        "api_key", "admin_api_key", "kv_transfer_api_key", "HF_TOKEN", "token", "max_token", "client_secret",
        "db_password", "Authorization", "credentials", "x-api-key", "cookie", "ssl_keyfile", "eos_token",
        "pad_token", "key", "max_total_tokens", "tokenizer_path", "kv_cache_dtype",
    ]  # fmt: skip
    for name in names:
        assert not names_credential(name) or is_secret_key(name), name
    assert {n for n in names if names_credential(n)} == {
        "api_key", "admin_api_key", "kv_transfer_api_key", "HF_TOKEN", "token", "max_token", "client_secret",
        "db_password", "Authorization", "credentials", "x-api-key",
    }  # fmt: skip
    # a verification check's "key" field and tokenizer vocabulary are never flagged by the scan
    for name in ("key", "eos_token", "pad_token", "cookie", "ssl_keyfile"):
        assert not names_credential(name), name
