"""What evalpipe relies on about EvalScope's outputs that is not a benchmark's own fact.

A benchmark's adapter facts (splits, subset, the field the adapter puts verbatim into the final user
message, few-shot limits) are declared by its module (``BenchmarkMeta`` in ``evalpipe/benchmarks/``,
looked up through the registry), read from ``evalscope/benchmarks/<name>`` and kept there — not imported
from EvalScope at run time, so the parent process never pays EvalScope's import cost;
``tests/evalscope_bridge/test_evalscope_materialize.py`` fails when an EvalScope upgrade changes any of them.
"""

from __future__ import annotations

# EvalScope stop reasons meaning "the output budget ran out" (OpenAI finish_reason "length" → max_tokens).
BUDGET_STOP_REASONS = frozenset({"max_tokens", "model_length"})
