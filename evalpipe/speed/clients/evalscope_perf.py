"""EvalScope 1.14's ``evalscope perf`` as a speed client (CPU hosts, CI).

One round = one ``python -m evalscope.cli.cli perf`` run (the ``evalscope`` console script's module), offline:

* ``--dataset random --tokenize-prompt --min/max-prompt-length I``: random token ids from the tokenizer's
  vocabulary sent as ``prompt: [ids]`` to ``/v1/completions``, so every prompt is exactly I tokens (no
  decode/re-encode drift, no chat template); the generator is seeded by ``--seed`` (``seed_everything``), so
  every variant gets the same prompts in a round; each round has its own seed, so no round's prompts are in
  a prefix cache from an earlier round.
* fixed-length outputs: ``--max-tokens O`` plus ``ignore_eos: true`` in ``--extra-args`` (EvalScope sends it
  only when asked; llama.cpp and SGLang honour it; llama.cpp ignores ``min_tokens``).  The usage each
  response reports is checked: a request with fewer output tokens is a problem line.
* ``--headers Connection=close``: a new connection per request, as SGLang's ``bench_serving`` (a new aiohttp
  session per request).  EvalScope's client keeps connections alive (``keepalive_timeout=60``), and
  llama.cpp's server closes the connection after a streamed response without saying so: the next request
  on it fails with ``ServerDisconnectedError`` (30 of 60 back-to-back requests here; about 1 in 18 in
  ``evalscope perf`` runs, which space requests a little) — a client artefact, not a server failure.
* ``--warmup-num W`` (excluded from the figures), ``--no-test-connection`` (evalpipe hands over a ready
  server; EvalScope's test request would be one more generation), a fresh ``--outputs-dir`` per round with
  ``--name evalscope --no-timestamp`` (an existing ``benchmark_data.db`` makes EvalScope raise).

It writes ``evalscope/{benchmark.log, perf_report.html, performance_summary.txt}`` and, per run,
``evalscope/parallel_C_number_N/{benchmark_summary.json, benchmark_percentile.json, benchmark_args.json,
benchmark_data.db, workload_throughput.json, workload_timeline.json}``.  Percentiles are nearest-rank
(``db_util.calculate_percentiles``), not numpy's interpolation that SGLang uses, so the two clients' p90/p99
are not comparable.  Its "Input Throughput (tok/s)" is defined for embedding APIs only and is 0 for
generation; evalpipe derives input throughput from the request log (prompt tokens of completed requests /
test duration, SGLang's definition) and says so in ``derived``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

from evalpipe.artifacts.schema.speed import LatencyStats, PercentileMethod
from evalpipe.config.speed import SpeedClientName, SpeedConfig
from evalpipe.errors import SpeedSetupError
from evalpipe.speed.clients.base import ClientPlugin, ParsedRound, RoundPlan, finite, sha256_of_prompts

OUTPUT_NAME = "evalscope"
EXTRA = "speed"
#: EvalScope's percentile row labels → LatencyStats fields.
_PERCENTILE_ROWS = {"50%": "median", "90%": "p90", "95%": "p95", "99%": "p99"}


def run_dir(plan: RoundPlan) -> Path:
    """Where EvalScope writes the per-run files of ``plan`` (``<outputs>/<name>/parallel_C_number_N``)."""
    w = plan.workload
    return plan.round_dir / OUTPUT_NAME / f"parallel_{w.concurrency}_number_{w.num_prompts}"


class EvalscopePerfClient:
    name: SpeedClientName = "evalscope"
    program = "evalscope perf"
    percentile_method: PercentileMethod = "nearest-rank"

    def version(self) -> str:
        if importlib.util.find_spec("evalscope") is None:
            raise SpeedSetupError(
                f"speed.client evalscope: EvalScope is not installed (pip install -e '.[{EXTRA}]')"
            )
        missing = [m for m in ("uvicorn", "fastapi", "sse_starlette") if importlib.util.find_spec(m) is None]
        if missing:
            raise SpeedSetupError(
                f"speed.client evalscope: evalscope perf needs {', '.join(missing)} "
                f"(EvalScope's perf extra): pip install -e '.[{EXTRA}]'"
            )
        return importlib.metadata.version("evalscope")

    def check(self, cfg: SpeedConfig, tokenizer_dir: Path | None) -> None:
        if tokenizer_dir is None:
            raise SpeedSetupError(
                "speed.tokenizer: evalscope perf builds its random prompts from a local tokenizer directory; "
                "set speed.tokenizer to one (or gguf:FILE for a GGUF model)"
            )

    def argv(self, plan: RoundPlan, cfg: SpeedConfig) -> list[str]:
        w = plan.workload
        assert plan.tokenizer_dir is not None  # check() refused a config without one
        extra = {"ignore_eos": True, **plan.extra_request_body}
        return [
            sys.executable, "-m", "evalscope.cli.cli", "perf",
            "--url", plan.base_url.rstrip("/") + "/v1/completions",
            "--api", "openai",
            "--model", plan.served_model,
            "--dataset", "random",
            "--tokenizer-path", str(plan.tokenizer_dir),
            "--tokenize-prompt",
            "--min-prompt-length", str(w.input_len),
            "--max-prompt-length", str(w.input_len),
            "--prefix-length", "0",
            "--max-tokens", str(w.output_len),
            "--extra-args", json.dumps(extra, sort_keys=True),
            "--temperature", "0",
            "--stream",
            "--parallel", str(w.concurrency),
            "--number", str(w.num_prompts),
            "--warmup-num", str(w.num_warmup),
            "--seed", str(plan.seed),
            "--total-timeout", str(max(1, int(plan.timeout_s))),
            "--no-test-connection",
            "--headers", "Connection=close",
            "--outputs-dir", str(plan.round_dir),
            "--name", OUTPUT_NAME,
            "--no-timestamp",
        ]  # fmt: skip

    def env(self, api_key: str | None) -> dict[str, str]:
        # EvalScope takes a key only as --api-key (argv); evalpipe's endpoints for speed need none.
        return {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}

    def parse(self, plan: RoundPlan) -> ParsedRound:
        return parse_run_dir(run_dir(plan), plan.workload.input_len, plan.workload.output_len)


def _load_json(path: Path, problems: list[str]) -> Any:
    if not path.is_file():
        problems.append(f"evalscope perf wrote no {path.name}")
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        problems.append(f"{path.name}: unreadable ({exc})")
        return None


def _latency(
    rows: dict[str, dict[str, Any]], column: str, scale: float, mean: Any, problems: list[str]
) -> LatencyStats:
    values: dict[str, float | None] = {}
    for label, attr in _PERCENTILE_ROWS.items():
        raw = rows.get(label, {}).get(column)
        number = finite(raw, f"{column} {label}", problems)
        values[attr] = None if number is None else number * scale
    mean_value = finite(mean, f"{column} mean", problems)
    return LatencyStats(mean=None if mean_value is None else mean_value, **values)


def read_request_log(db_path: Path) -> list[dict[str, Any]]:
    """EvalScope's per-request rows (``benchmark_data.db``, table ``result``), warm-up excluded by EvalScope."""
    with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as con:
        con.row_factory = sqlite3.Row
        rows = con.execute(
            "SELECT request, success, latency, first_chunk_latency, prompt_tokens, completion_tokens, "
            "time_per_output_token, inter_token_latencies FROM result"
        ).fetchall()
    return [dict(r) for r in rows]


def parse_run_dir(directory: Path, input_len: int, output_len: int) -> ParsedRound:
    """Read one EvalScope run directory into the figures of one round."""
    out = ParsedRound()
    problems = out.problems
    summary = _load_json(directory / "benchmark_summary.json", problems)
    if isinstance(summary, dict):
        out.completed = int(summary.get("Success Requests") or 0)
        out.duration_s = finite(summary.get("Test Duration (s)"), "Test Duration (s)", problems)
        out.request_throughput = finite(summary.get("Req Throughput (req/s)"), "Req Throughput", problems)
        out.output_throughput = finite(
            summary.get("Output Throughput (tok/s)"), "Output Throughput", problems
        )
        out.total_throughput = finite(summary.get("Total Throughput (tok/s)"), "Total Throughput", problems)
        hit = summary.get("KV Cache Hit Rate (%)")
        out.cached_prompt_tokens_pct = (
            finite(hit, "KV Cache Hit Rate (%)", problems) if hit is not None else None
        )
        failed = int(summary.get("Failed Requests") or 0)
        if failed:
            problems.append(f"{failed} request(s) failed (evalscope perf: Failed Requests)")
    percentiles = _load_json(directory / "benchmark_percentile.json", problems) if out.completed else None
    rows = {r.get("Percentiles"): r for r in percentiles} if isinstance(percentiles, list) else {}
    means = summary if isinstance(summary, dict) else {}
    out.ttft_ms = _latency(rows, "TTFT (ms)", 1.0, means.get("Avg TTFT (ms)"), problems)
    out.itl_ms = _latency(rows, "ITL (ms)", 1.0, means.get("Avg ITL (ms)"), problems)
    out.tpot_ms = _latency(rows, "TPOT (ms)", 1.0, means.get("Avg TPOT (ms)"), problems)
    e2e = _latency(rows, "Latency (s)", 1000.0, None, problems)
    avg_latency_s = finite(means.get("Avg Latency (s)"), "Avg Latency (s)", problems)
    e2e.mean = None if avg_latency_s is None else avg_latency_s * 1000.0
    out.e2e_ms = e2e

    db_path = directory / "benchmark_data.db"
    if not db_path.is_file():
        problems.append("evalscope perf wrote no benchmark_data.db")
        return out
    requests = read_request_log(db_path)
    completed = [r for r in requests if r["success"]]
    out.input_tokens = sum(int(r["prompt_tokens"] or 0) for r in completed)
    out.output_tokens = sum(int(r["completion_tokens"] or 0) for r in completed)
    if out.duration_s:
        out.input_throughput = out.input_tokens / out.duration_s
        out.derived.append(
            "input_throughput = sum(prompt_tokens of successful rows in benchmark_data.db) / Test Duration (s) "
            "(evalscope perf reports Input Throughput only for embedding APIs)"
        )
    out.derived.append("input_tokens, output_tokens = sums over successful rows of benchmark_data.db")
    prompts = []
    for r in requests:
        try:
            prompts.append(json.loads(r["request"]).get("prompt"))
        except (TypeError, ValueError, AttributeError):
            prompts.append(r["request"])
    out.prompt_set_sha256 = sha256_of_prompts(prompts)
    short_out = sum(1 for r in completed if r["completion_tokens"] != output_len)
    if short_out:
        problems.append(
            f"{short_out} completed request(s) have an output length other than {output_len} tokens "
            "(server usage): the server did not honour ignore_eos/max_tokens"
        )
    wrong_in = sum(1 for r in completed if r["prompt_tokens"] != input_len)
    if wrong_in:
        problems.append(f"{wrong_in} completed request(s) have a prompt length other than {input_len} tokens")
    out.lengths_as_requested = not short_out and not wrong_in
    return out


#: The registration (``evalpipe.speed.clients.registry``): runs in evalpipe's own environment.
CLIENT = ClientPlugin(name="evalscope", make=lambda client_env: EvalscopePerfClient())
