"""A described benchmark's EvalScope adapter: ``general_qa``'s, under the benchmark's name, scored by EvalScope's
``exact_match`` metric — nothing of evalpipe's own in the prompt or the score.

``general_qa`` reads question/answer rows from a local folder (``LocalDataLoader``) and builds the messages
(``system`` then the question); its own ``match_score`` computes only BLEU and Rouge, so the adapter takes
EvalScope's generic one (``DefaultDataAdapter.match_score``: every metric of ``metric_list`` through EvalScope's
metric registry, the first one the main score).  Imported only in a process about to look the adapter up
(``DescribedQA.register_evalscope_adapter``).
"""

from __future__ import annotations

import dataclasses

from evalscope.api.benchmark import DefaultDataAdapter
from evalscope.api.registry import BENCHMARK_REGISTRY, register_benchmark
from evalscope.benchmarks.general_qa.general_qa_adapter import GeneralQAAdapter

METRIC = "exact_match"


class ExactMatchQAAdapter(GeneralQAAdapter):  # type: ignore[misc]  # EvalScope is untyped (Any to mypy)
    """``general_qa``'s reading of the rows, EvalScope's generic scoring over ``metric_list``."""

    match_score = DefaultDataAdapter.match_score


def register(name: str, pretty_name: str, description: str) -> None:
    """Register the adapter under ``name`` (once per process: a second call finds it registered).

    ``is_registered`` asks without loading: EvalScope's registry answers ``get`` of a name its index does not
    list by importing every adapter module it ships (~1,400 modules, ~1.2 s of CPU in every worker of a run
    with a described benchmark); a name EvalScope ships counts as registered either way, as with ``get``."""
    if BENCHMARK_REGISTRY.is_registered(name):
        return
    meta = dataclasses.replace(
        BENCHMARK_REGISTRY["general_qa"],
        name=name,
        pretty_name=pretty_name,
        description=description,
        dataset_id=name,
        metric_list=[METRIC],
        primary_metric=METRIC,
    )
    register_benchmark(meta)(ExactMatchQAAdapter)
