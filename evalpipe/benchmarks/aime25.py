"""AIME 2025 (EvalScope ``aime25``): the 30 problems of AIME I and II 2025, integer answers 0-999.

Hub: ModelScope ``evalscope/aime25`` / Hugging Face ``math-ai/aime25`` (split ``test``).  Record, id rule,
contest-part stratum and scoring: ``evalpipe/benchmarks/competition_math.py``.
"""

from __future__ import annotations

from evalpipe.benchmarks.base import BenchmarkMeta
from evalpipe.benchmarks.competition_math import AIME_ID_RULE, Aime, aime_layout

NAME = "aime25"

BENCHMARK = Aime(
    BenchmarkMeta(
        name=NAME,
        display_name="AIME 2025",
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
