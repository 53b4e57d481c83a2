"""AIME 2024 (EvalScope ``aime24``): the 30 problems of AIME I and II 2024, integer answers 0-999.

Hub: ModelScope ``evalscope/aime24`` / Hugging Face ``math-ai/aime24`` (split ``test``).  Record, id rule,
contest-part stratum and scoring: ``evalpipe/benchmarks/competition_math.py``.
"""

from __future__ import annotations

from evalpipe.benchmarks.base import BenchmarkMeta
from evalpipe.benchmarks.competition_math import AIME_ID_RULE, Aime, aime_layout

NAME = "aime24"

BENCHMARK = Aime(
    BenchmarkMeta(
        name=NAME,
        display_name="AIME 2024",
        primary_metric="acc",
        mirror_dir=NAME,
        eval_split="test",
        fewshot_split=None,
        question_field="problem",
        default_subset="default",
        max_few_shot=0,
        stratifications=("part",),
        id_rule=AIME_ID_RULE,
        local_layout=aime_layout(NAME),
    )
)
