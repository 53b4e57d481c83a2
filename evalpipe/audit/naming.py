"""Human names of benchmarks and their metrics, used in the summary and the reports."""

from __future__ import annotations

DISPLAY_NAMES: dict[str, str] = {
    "ifeval": "IFEval",
    "ceval": "C-Eval",
    "gsm8k": "GSM8K",
    "live_code_bench": "LiveCodeBench",
}

# Name of the metric that ``OutcomeRow.score`` holds (EvalScope's primary metric for the adapter).
PRIMARY_METRICS: dict[str, str] = {
    "ifeval": "prompt_level_strict",
    "ceval": "acc",
    "gsm8k": "acc",
    "live_code_bench": "pass@1",
}

# IFEval review metrics (evalscope/benchmarks/ifeval/ifeval_adapter.py metric_list).
IFEVAL_PROMPT_METRICS = ("prompt_level_strict", "prompt_level_loose")
IFEVAL_INSTRUCTION_METRICS = ("inst_level_strict", "inst_level_loose")


def display_name(benchmark: str) -> str:
    return DISPLAY_NAMES.get(benchmark, benchmark)


def primary_metric(benchmark: str) -> str:
    return PRIMARY_METRICS.get(benchmark, "score")
