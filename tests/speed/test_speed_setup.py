"""The ``speed:`` section and everything refused before a request is sent: one line each.

(A workload longer than the server's context and a server failing mid-run are in ``test_speed_real.py``,
against the real engine.)
"""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

import pytest
from pydantic import ValidationError

from evalpipe.config.speed import SpeedConfig, SpeedWorkload
from evalpipe.errors import SpeedSetupError
from evalpipe.speed.clients.base import RoundPlan
from evalpipe.speed.clients.evalscope_perf import EvalscopePerfClient, parse_run_dir
from evalpipe.speed.run import check_fit, prepare, resolve_tokenizer


def test_defaults_follow_sglang_pr_practice() -> None:
    cfg = SpeedConfig()
    assert cfg.rounds == 5 and cfg.client == "evalscope"
    assert sorted({(w.input_len, w.concurrency) for w in cfg.workloads}) == [
        (1024, 1), (1024, 16), (1024, 64), (8192, 1), (8192, 16), (8192, 64),
    ]  # fmt: skip
    w = cfg.workload("in1024-out1024-c16")
    assert w.num_prompts == 80 and w.num_warmup == 16  # --num-prompts 5·C; warm-up fills every slot


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"rounds": 2}, "greater than or equal to 3"),
        ({"client": 3}, "Input should be a valid string"),  # a registered name: the resolve step's check
        ({"workloads": []}, "at least 1 item"),
        ({"typo_field": 1}, "Extra inputs are not permitted"),
        ({"extra_request_body": {"ignore_eos": False}}, "outputs must have the requested length"),
        (
            {"workloads": [{"input_len": 8, "output_len": 8, "concurrency": 1}] * 2},
            "workload listed more than once: in8-out8-c1",
        ),
    ],
)
def test_bad_speed_section_names_the_field(raw: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        SpeedConfig.model_validate(raw)
    assert message in str(info.value)


def _one_line(exc: pytest.ExceptionInfo[SpeedSetupError]) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_no_tokenizer_for_evalscope_is_one_line() -> None:
    with pytest.raises(SpeedSetupError) as info:
        prepare(SpeedConfig(tokenizer=None), ["http://127.0.0.1:9"])
    assert _one_line(info).startswith("speed.tokenizer: evalscope perf builds its random prompts")


def test_tokenizer_directory_without_tokenizer_json_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(SpeedSetupError) as info:
        resolve_tokenizer(str(tmp_path), None)
    assert _one_line(info) == (
        f"speed.tokenizer {tmp_path}: no tokenizer.json (a Hugging Face tokenizer directory is needed; "
        "for a GGUF model use gguf:FILE)"
    )
    with pytest.raises(SpeedSetupError) as info:
        resolve_tokenizer("gguf:missing.gguf", tmp_path)
    assert (
        _one_line(info)
        == f"speed.tokenizer gguf:missing.gguf: no such GGUF file ({tmp_path / 'missing.gguf'})"
    )


def test_missing_evalscope_perf_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a)
    )
    with pytest.raises(SpeedSetupError) as info:
        prepare(SpeedConfig(tokenizer="gguf:smollm2"), ["http://127.0.0.1:9"])
    assert _one_line(info) == (
        "speed.client evalscope: evalscope perf needs uvicorn (EvalScope's perf extra): pip install -e '.[speed]'"
    )


def test_unreachable_server_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(SpeedSetupError) as info:
        prepare(SpeedConfig(tokenizer=str(tmp_path)), ["http://127.0.0.1:9"])
    assert _one_line(info).startswith(
        "speed: no OpenAI-compatible server answers at http://127.0.0.1:9/v1/models"
    )


def test_context_fit_uses_the_configured_length_first() -> None:
    workloads = [SpeedWorkload(input_len=1024, output_len=1024, concurrency=1)]
    check_fit(workloads, (2048, "total", "model.context_length"))
    with pytest.raises(SpeedSetupError) as info:
        check_fit(workloads, (2047, "total", "model.context_length"))
    assert "2048 tokens of prompt + output per request do not fit the server's context of 2047" in str(
        info.value
    )
    check_fit(workloads, (1024, "input", "max_req_input_len from /server_info"))  # a prompt bound: 1024 fits
    check_fit(workloads, None)  # unknown context: nothing to check


def test_evalscope_argv_fixes_lengths_and_seeds_prompts(tmp_path: Path) -> None:
    cfg = SpeedConfig(tokenizer="t", extra_request_body={"cache_prompt": False})
    w = SpeedWorkload(input_len=128, output_len=64, concurrency=4)
    plan = RoundPlan(w, 1, 43, tmp_path, "http://h:1", "m", tmp_path, cfg.extra_request_body, 30.0)
    argv = EvalscopePerfClient().argv(plan, cfg)
    pairs = dict(itertools.pairwise(argv))
    assert argv[1:4] == ["-m", "evalscope.cli.cli", "perf"] and "--tokenize-prompt" in argv
    assert pairs["--url"] == "http://h:1/v1/completions" and pairs["--dataset"] == "random"
    assert (
        pairs["--min-prompt-length"] == pairs["--max-prompt-length"] == "128"
        and pairs["--max-tokens"] == "64"
    )
    assert pairs["--extra-args"] == '{"cache_prompt": false, "ignore_eos": true}'
    assert (pairs["--parallel"], pairs["--number"], pairs["--warmup-num"], pairs["--seed"]) == (
        "4",
        "20",
        "4",
        "43",
    )
    assert (
        pairs["--outputs-dir"] == str(tmp_path)
        and "--no-timestamp" in argv
        and "--no-test-connection" in argv
    )


def test_evalscope_run_that_wrote_nothing_is_zero_completed(tmp_path: Path) -> None:
    parsed = parse_run_dir(tmp_path, 32, 16)
    assert parsed.completed == 0
    assert parsed.problems[:1] == ["evalscope perf wrote no benchmark_summary.json"]


def test_server_context_reads_what_each_server_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    import urllib.error

    from evalpipe.speed import run

    payloads: dict[str, object] = {}

    def fake_get_json(url: str, api_key: str | None, timeout: float = 10.0) -> object:
        if url not in payloads:
            raise urllib.error.URLError("404")
        return payloads[url]

    monkeypatch.setattr(run, "read_json", fake_get_json)
    base = "http://h:1"
    payloads[base + "/server_info"] = {"engine": "llama.cpp", "n_ctx_per_slot": 2048}  # evalpipe's launcher
    assert run.server_context(base) == (2048, "total", "n_ctx_per_slot from /server_info")
    payloads[base + "/server_info"] = {
        "context_length": None,
        "internal_states": [{"max_req_input_len": 131071}],
    }
    assert run.server_context(base) == (
        131071,
        "input",
        "max_req_input_len from /server_info",
    )  # SGLang, loaded
    del payloads[base + "/server_info"]
    payloads[base + "/props"] = {"default_generation_settings": {"n_ctx": 4096}}  # plain llama-server
    assert run.server_context(base) == (4096, "total", "default_generation_settings.n_ctx from /props")
    del payloads[base + "/props"]
    assert run.server_context(base) is None  # nothing said: the check is skipped
