"""What evalpipe relies on about each EvalScope 1.14 benchmark adapter.

Each benchmark module (``evalpipe/benchmarks/<name>.py``) declares its adapter's facts (splits, subset,
the field the adapter puts verbatim into the final user message, few-shot limits), read from
``evalscope/benchmarks/<name>`` and kept there (not imported from EvalScope at run time) so the parent
process never pays EvalScope's import cost; the materialize tests fail when an EvalScope upgrade
changes any of them.
"""

from __future__ import annotations

from evalpipe.benchmarks import REGISTRY, Benchmark

# Every registered benchmark's facts, by EvalScope adapter name.
ADAPTERS: dict[str, Benchmark] = REGISTRY

# EvalScope stop reasons meaning "the output budget ran out" (OpenAI finish_reason "length" → max_tokens).
BUDGET_STOP_REASONS = frozenset({"max_tokens", "model_length"})


def facts(benchmark: str) -> Benchmark:
    try:
        return ADAPTERS[benchmark]
    except KeyError:
        raise KeyError(f"no EvalScope adapter facts for benchmark {benchmark!r}") from None
