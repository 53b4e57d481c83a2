"""EvalScope's TriviaQA adapter registered under ``kv_probe``: its prompt, its answer extraction (the
``ANSWER:`` line, else the whole response) and its scoring (exact match against any accepted answer after
the official TriviaQA normalisation) — nothing of the probe's own.

TriviaQA is the installed adapter that reads a context, asks one question and scores exact match on a
free-form answer (``general_qa`` scores Rouge; ``needle_haystack`` needs an LLM judge and its own corpus).
Imported only in a process about to look the adapter up (``KVProbe.register_evalscope_adapter``).
"""

from __future__ import annotations

import dataclasses

from evalscope.api.registry import BENCHMARK_REGISTRY, register_benchmark
from evalscope.benchmarks.trivia_qa.trivia_qa_adapter import TriviaQaAdapter

NAME = "kv_probe"


@register_benchmark(
    dataclasses.replace(
        BENCHMARK_REGISTRY["trivia_qa"],
        name=NAME,
        pretty_name="KV-cache probe",
        dataset_id=NAME,
        hf_dataset_id=None,
        subset_list=["default"],
        default_subset="default",
        eval_split="test",
    )
)
class KVProbeAdapter(TriviaQaAdapter):  # type: ignore[misc]  # EvalScope is untyped (Any to mypy)
    """TriviaQA's behaviour under the probe's name."""
