"""SGLang 0.5.23's own serving benchmark, ``python -m sglang.bench_serving``, as a speed client (GPU hosts).

In 0.5.23 ``sglang.bench_serving`` is a shim that re-exports ``sglang.benchmark.serving`` and calls its
``cli_main``.  One round = one run with the flags SGLang PR reviewers ask for:

* ``--dataset-name random-ids --random-input-len I --random-output-len O --random-range-ratio 1`` — fixed
  lengths (without ``--random-range-ratio 1`` the lengths are drawn from [0, I] and [0, O]); ``random-ids``
  draws token ids from the tokenizer's vocabulary, so nothing is downloaded (``--dataset-name random``
  fetches ShareGPT from the hub);
* ``--max-concurrency C --num-prompts N`` (default N = 5·C), ``--request-rate`` left at its default
  ``inf`` (which the JSONL records as the literal ``Infinity``);
* ``--warmup-requests W`` and ``--flush-cache`` (the warm-up request is the first measured prompt, so
  SGLang flushes its prefix cache after it; for a server without ``/flush_cache`` set ``flush_cache:
  false`` and switch its prompt cache off instead);
* outputs are fixed-length by default: the client sends ``ignore_eos: true`` unless
  ``--disable-ignore-eos``; ``--seed seed+round`` seeds the prompt generator (``random`` and numpy);
* ``--output-file round-NN/bench_serving.jsonl --output-details``: one JSON line per run, the keys of
  ``benchmark()``'s ``result`` dict (throughputs; mean/median/std/p90/p95/p99 of TTFT, TPOT, ITL and E2E
  latency in ms — numpy percentiles, linear interpolation; ``completed``) plus the per-request details
  (``input_lens``, ``output_lens``, ``ttfts``, ``itls``, ``generated_texts``, ``errors``) and the server's
  whole ``/server_info``, which evalpipe masks for secrets before keeping the file.

Quirks that matter for reading the file: ``output_lens`` on the OpenAI routes are the *requested* lengths
unless the server reports ``usage.completion_tokens`` in a chunk that carries text, so evalpipe also
checks ``total_output_tokens_retokenized`` (SGLang re-tokenizes the generated text); a run in which every
request fails raises inside ``calculate_metrics`` (``np.percentile`` of an empty list) and writes no line,
which evalpipe records as 0 completed.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalpipe.artifacts.schema.speed import LatencyStats, PercentileMethod
from evalpipe.config.speed import SpeedClientName, SpeedConfig
from evalpipe.errors import SpeedSetupError
from evalpipe.speed.clients.base import ClientPlugin, ParsedRound, RoundPlan, finite

OUTPUT_FILE = "bench_serving.jsonl"
EXTRA = "sglang"
_METRICS = {"ttft_ms": "ttft", "itl_ms": "itl", "tpot_ms": "tpot", "e2e_ms": "e2e_latency"}


class SglangBenchServingClient:
    name: SpeedClientName = "sglang"
    program = "python -m sglang.bench_serving"
    percentile_method: PercentileMethod = "linear-interpolation"

    def __init__(self, python: str | None = None, installation_env: Mapping[str, str] | None = None) -> None:
        #: The interpreter that has SGLang installed (default: evalpipe's own, the ``sglang`` extra).
        self.python = python or sys.executable
        #: What the server's environment adds to ours (``server.env``, e.g. a ``PYTHONPATH`` holding SGLang):
        #: the client runs with it, so it runs the SGLang the server runs.
        self.installation_env = dict(installation_env or {})

    def version(self) -> str:
        if self.python == sys.executable and not self.installation_env:
            if importlib.util.find_spec("sglang") is None:
                raise SpeedSetupError(
                    f"speed.client sglang: SGLang is not installed (pip install -e '.[{EXTRA}]', GPU hosts)"
                )
            return importlib.metadata.version("sglang")
        if self.python != sys.executable:
            return f"(interpreter {self.python})"
        # SGLang lives in the server's environment: ask a child with it, as the server kind's preflight does
        # import cost: the SGLang kind's probe (~27 modules), only when the version is asked
        from evalpipe.server.kinds.sglang import probe_sglang

        probe = probe_sglang({**os.environ, **self.installation_env}, packages=("sglang",))
        if not probe.importable or probe.version is None:
            raise SpeedSetupError(
                "speed.client sglang: SGLang is not importable with the server's environment (server.env)"
                + (f": {probe.error}" if probe.error else "")
            )
        return probe.version

    def check(self, cfg: SpeedConfig, tokenizer_dir: Path | None) -> None:
        return None  # without a tokenizer bench_serving asks the server's /model_info for its path

    def argv(self, plan: RoundPlan, cfg: SpeedConfig) -> list[str]:
        w = plan.workload
        argv = [
            self.python, "-m", "sglang.bench_serving",
            "--backend", cfg.sglang_backend,
            "--base-url", plan.base_url.rstrip("/"),
            "--model", plan.served_model,
            "--dataset-name", "random-ids",
            "--random-input-len", str(w.input_len),
            "--random-output-len", str(w.output_len),
            "--random-range-ratio", "1",
            "--num-prompts", str(w.num_prompts),
            "--max-concurrency", str(w.concurrency),
            "--warmup-requests", str(w.num_warmup),
            "--seed", str(plan.seed),
            "--output-file", str(plan.round_dir / OUTPUT_FILE),
            "--output-details",
            "--disable-tqdm",
            "--ready-check-timeout-sec", "0",
        ]  # fmt: skip
        if plan.tokenizer_dir is not None:
            argv += ["--tokenizer", str(plan.tokenizer_dir)]
        if cfg.flush_cache:
            argv.append("--flush-cache")
        if plan.extra_request_body:
            argv += ["--extra-request-body", json.dumps(dict(plan.extra_request_body), sort_keys=True)]
        return argv

    def env(self, api_key: str | None) -> dict[str, str]:
        env = {
            **self.installation_env,
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
        }
        if api_key:
            env["OPENAI_API_KEY"] = api_key  # bench_serving's get_auth_headers() reads it; never on argv
        return env

    def parse(self, plan: RoundPlan) -> ParsedRound:
        w = plan.workload
        return parse_jsonl(
            plan.round_dir / OUTPUT_FILE,
            input_len=w.input_len,
            output_len=w.output_len,
            concurrency=w.concurrency,
        )


def read_lines(path: Path, problems: list[str]) -> list[dict[str, Any]]:
    """The JSON objects of a bench_serving JSONL file (Python's json reads its ``Infinity``/``NaN`` literals);
    a torn or non-object line is a problem line, not an exception."""
    if not path.is_file():
        problems.append(f"bench_serving wrote no {path.name} (it writes nothing when every request failed)")
        return []
    lines = []
    for number, text in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            problems.append(f"{path.name}:{number}: unreadable JSON ({exc.msg})")
            continue
        if not isinstance(obj, dict):
            problems.append(f"{path.name}:{number}: not a JSON object")
            continue
        lines.append(obj)
    return lines


def parse_line(line: dict[str, Any], output_len: int | None = None) -> ParsedRound:
    """One bench_serving result line into the figures of one round."""
    out = ParsedRound()
    problems = out.problems
    out.completed = int(line.get("completed") or 0)
    out.duration_s = finite(line.get("duration"), "duration", problems)
    for attr in ("request_throughput", "input_throughput", "output_throughput", "total_throughput"):
        setattr(out, attr, finite(line.get(attr), attr, problems))
    for attr, key in (("input_tokens", "total_input_tokens"), ("output_tokens", "total_output_tokens")):
        value = finite(line.get(key), key, problems)
        setattr(out, attr, None if value is None else int(value))
    for attr, metric in _METRICS.items():
        stats = {
            field: finite(line.get(f"{prefix}_{metric}_ms"), f"{prefix}_{metric}_ms", problems)
            for field, prefix in (
                ("mean", "mean"),
                ("median", "median"),
                ("p90", "p90"),
                ("p95", "p95"),
                ("p99", "p99"),
            )
        }
        setattr(out, attr, LatencyStats(**stats))
    retokenized = line.get("total_output_tokens_retokenized")
    if output_len is not None and isinstance(retokenized, int) and out.completed:
        expected = out.completed * output_len
        out.lengths_as_requested = retokenized >= 0.95 * expected
        if not out.lengths_as_requested:
            problems.append(
                f"generated text re-tokenizes to {retokenized} tokens, expected about {expected} "
                f"({out.completed} × {output_len}): outputs may be shorter than requested (ignore_eos not honoured?)"
            )
    errors = [e for e in line.get("errors") or [] if e]
    if errors:
        first = str(errors[0]).strip().splitlines()
        problems.append(f"{len(errors)} request(s) failed; first error: {first[-1][:200] if first else '?'}")
    return out


def parse_jsonl(path: Path, *, input_len: int, output_len: int, concurrency: int) -> ParsedRound:
    """The round in ``path`` (evalpipe gives every round its own file, so exactly one line is expected)."""
    problems: list[str] = []
    lines = read_lines(path, problems)
    if not lines:
        out = ParsedRound()
        out.problems.extend(problems)
        return out
    if len(lines) > 1:
        problems.append(f"{path.name}: {len(lines)} result lines for one round; the last one is used")
    line = lines[-1]
    out = parse_line(line, output_len)
    out.problems[:0] = problems
    for key, expected in (
        ("random_input_len", input_len),
        ("random_output_len", output_len),
        ("max_concurrency", concurrency),
    ):
        if line.get(key) != expected:
            out.problems.append(
                f"{key} = {line.get(key)!r} in {path.name}, the workload asked for {expected}"
            )
    return out


#: The registration (``evalpipe.speed.clients.registry``): runs in the SGLang installation the server runs.
CLIENT = ClientPlugin(
    name="sglang", make=lambda client_env: SglangBenchServingClient(installation_env=client_env)
)
