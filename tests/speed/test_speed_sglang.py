"""SGLang 0.5.23's ``bench_serving`` as a speed client: its argv, and its JSONL through evalpipe's parser.

The fixtures are real SGLang output (``tools/make_sglang_bench_serving_fixture.py``: SGLang's own client and
writer against evalpipe's llama.cpp server), ``Infinity`` literal included; the partial-failure one had
every second measured request answered HTTP 500 by a proxy.  Lines built here from a fixture line (NaN, a
torn line, an API key in ``server_info``) say so.
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest

from evalpipe.config.speed import SpeedConfig, SpeedWorkload
from evalpipe.errors import SpeedSetupError
from evalpipe.speed.clients.base import RoundPlan, keep_raw_files
from evalpipe.speed.clients.sglang_bench import OUTPUT_FILE, SglangBenchServingClient, parse_jsonl, parse_line

FIXTURES = Path(__file__).parents[1] / "fixtures"
OK = FIXTURES / "sglang-0.5.23-bench_serving-llamacpp.jsonl"
PARTIAL = FIXTURES / "sglang-0.5.23-bench_serving-partial-failure.jsonl"
WORKLOAD = {"input_len": 32, "output_len": 16, "concurrency": 2}


def _line(path: Path) -> dict:
    (text,) = path.read_text().splitlines()
    return json.loads(text)


def test_fixture_is_sglang_output_with_the_infinity_literal() -> None:
    text = OK.read_text()
    assert '"request_rate": Infinity' in text  # what json.dumps writes for --request-rate's default inf
    line = _line(OK)
    assert line["backend"] == "sglang-oai" and line["dataset_name"] == "random-ids"
    assert line["random_range_ratio"] == 1.0 and line["server_info"]["engine"] == "llama.cpp"
    for key in ("completed", "output_throughput", "median_ttft_ms", "p99_itl_ms", "median_e2e_latency_ms"):
        assert key in line


def test_parser_reads_every_figure_from_the_line() -> None:
    line = _line(OK)
    parsed = parse_jsonl(OK, **WORKLOAD)
    assert parsed.problems == []
    assert parsed.completed == line["completed"] == 4
    assert parsed.duration_s == line["duration"]
    assert parsed.output_throughput == line["output_throughput"]
    assert parsed.input_throughput == line["input_throughput"]
    assert (
        parsed.input_tokens == line["total_input_tokens"]
        and parsed.output_tokens == line["total_output_tokens"]
    )
    for attr, metric in (
        ("ttft_ms", "ttft"),
        ("itl_ms", "itl"),
        ("tpot_ms", "tpot"),
        ("e2e_ms", "e2e_latency"),
    ):
        stats = getattr(parsed, attr)
        assert stats.median == line[f"median_{metric}_ms"] and stats.p99 == line[f"p99_{metric}_ms"]
        assert stats.mean == line[f"mean_{metric}_ms"] and stats.p90 == line[f"p90_{metric}_ms"]


def test_partial_failure_is_recorded_not_averaged() -> None:
    line = _line(PARTIAL)
    parsed = parse_jsonl(PARTIAL, **WORKLOAD)
    assert parsed.completed == line["completed"] < 4
    assert any("request(s) failed; first error:" in p and "500" in p for p in parsed.problems), (
        parsed.problems
    )


def test_nan_and_torn_lines_are_problem_lines(tmp_path: Path) -> None:
    line = _line(OK)
    line["median_ttft_ms"] = float("nan")  # synthetic: a NaN where a figure should be
    path = tmp_path / OUTPUT_FILE
    path.write_text(json.dumps(line) + "\n" + json.dumps(line)[:100] + "\n")  # plus a torn line
    assert "NaN" in path.read_text()
    parsed = parse_jsonl(path, **WORKLOAD)
    assert parsed.ttft_ms.median is None
    assert any("median_ttft_ms: the client reported nan" in p for p in parsed.problems)
    assert any(":2: unreadable JSON" in p for p in parsed.problems)
    assert parsed.completed == 4


def test_no_output_file_is_zero_completed(tmp_path: Path) -> None:
    parsed = parse_jsonl(tmp_path / OUTPUT_FILE, **WORKLOAD)
    assert parsed.completed == 0 and "writes nothing when every request failed" in parsed.problems[0]


def test_short_outputs_are_flagged() -> None:
    line = _line(OK)
    line["total_output_tokens_retokenized"] = 20  # synthetic: EOS honoured, outputs shorter than asked
    parsed = parse_line(line, 16)
    assert (
        any("ignore_eos not honoured" in p for p in parsed.problems) and parsed.lengths_as_requested is False
    )
    assert parse_jsonl(OK, **WORKLOAD).lengths_as_requested is True


def test_workload_mismatch_is_flagged() -> None:
    parsed = parse_jsonl(OK, input_len=64, output_len=16, concurrency=2)
    assert any("random_input_len = 32" in p for p in parsed.problems)


def test_argv_is_sglang_pr_practice(tmp_path: Path) -> None:
    cfg = SpeedConfig(
        client="sglang", workloads=[SpeedWorkload(input_len=1024, output_len=1024, concurrency=16)]
    )
    w = cfg.workloads[0]
    plan = RoundPlan(w, 2, 44, tmp_path, "http://h:1/", "glm", None, {"k": 1}, 60.0)
    client = SglangBenchServingClient("/opt/sglang/bin/python")
    argv = client.argv(plan, cfg)
    assert argv[:3] == ["/opt/sglang/bin/python", "-m", "sglang.bench_serving"]
    pairs = dict(itertools.pairwise(argv))
    assert pairs["--dataset-name"] == "random-ids" and pairs["--random-range-ratio"] == "1"
    assert pairs["--num-prompts"] == "80" and pairs["--max-concurrency"] == "16" and pairs["--seed"] == "44"
    assert pairs["--backend"] == "sglang" and pairs["--base-url"] == "http://h:1"
    assert pairs["--output-file"] == str(tmp_path / OUTPUT_FILE) and "--output-details" in argv
    assert "--flush-cache" in argv and json.loads(pairs["--extra-request-body"]) == {"k": 1}
    assert "--disable-ignore-eos" not in argv  # bench_serving sends ignore_eos: true by default
    no_flush = cfg.model_copy(update={"flush_cache": False})
    assert "--flush-cache" not in client.argv(plan, no_flush)
    env = client.env("sk-secret-key-0123456789abcdef")
    assert env["OPENAI_API_KEY"].startswith("sk-") and not any("sk-" in a for a in argv)


def test_missing_sglang_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "sglang" else real(name, *a)
    )
    with pytest.raises(SpeedSetupError) as info:
        SglangBenchServingClient().version()
    assert (
        str(info.value)
        == "speed.client sglang: SGLang is not installed (pip install -e '.[sglang]', GPU hosts)"
    )


def test_kept_jsonl_masks_an_api_key_in_server_info_and_keeps_other_lines_byte_identical(
    tmp_path: Path,
) -> None:
    round_dir = tmp_path / "speed" / "w" / "round-01"
    round_dir.mkdir(parents=True)
    clean = OK.read_text().splitlines()[0]
    line = json.loads(clean)
    line["server_info"]["api_key"] = (
        "plain-admin-key-without-a-known-prefix"  # as an SGLang server reports it
    )
    raw = round_dir / OUTPUT_FILE
    raw.write_text(json.dumps(line) + "\n" + clean + "\n")
    shutil.copyfile(OK, round_dir / "copy.jsonl")
    kept = {f.path: f for f in keep_raw_files(round_dir, tmp_path)}
    text = raw.read_text()
    assert "plain-admin-key" not in text and '"api_key": "***"' in text
    assert (
        text.splitlines()[1] == clean
    )  # json.dumps is SGLang's own serializer: unchanged lines keep their bytes
    assert kept[f"speed/w/round-01/{OUTPUT_FILE}"].redactions == 1
    assert kept["speed/w/round-01/copy.jsonl"].redactions == 0
    assert (round_dir / "copy.jsonl").read_bytes() == OK.read_bytes()
