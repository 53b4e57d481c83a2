"""HMMT February 2026 (EvalScope ``hmmt26``): the problems of the Harvard-MIT Mathematics Tournament, February 2026.

Hub: ModelScope ``evalscope/hmmt_feb_2026`` / Hugging Face ``MathArena/hmmt_feb_2026`` (split ``train``).  Record,
id rule, problem-type stratum and scoring: ``evalpipe/benchmarks/competition_math.py``.
"""

from __future__ import annotations

from evalpipe.benchmarks.base import BenchmarkMeta
from evalpipe.benchmarks.competition_math import HMMT_ID_RULE, Hmmt, hmmt_layout

NAME = "hmmt26"

BENCHMARK = Hmmt(
    BenchmarkMeta(
        name=NAME,
        display_name="HMMT Feb 2026",
        primary_metric="acc",
        mirror_dir=NAME,
        eval_split="train",
        fewshot_split=None,
        question_field="problem",
        default_subset="default",
        max_few_shot=0,
        stratifications=("problem_type",),
        id_rule=HMMT_ID_RULE,
        local_layout=hmmt_layout(NAME),
    )
)
