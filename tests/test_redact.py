"""Secret redaction at the point of capture (argv, env, server_info, free text)."""

from __future__ import annotations

from evalpipe.redact import REDACTED, is_secret_key, redact, redact_argv, redact_mapping, redact_text


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
    from evalpipe.audit.secrets import _text_hits
    from evalpipe.redact import redact_text

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
        assert list(_text_hits(line)), token  # the audit would flag it ...
        masked = redact_text(line)
        assert token not in masked and not list(_text_hits(masked)), token  # ... capture removes it
