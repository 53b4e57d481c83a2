"""HMMT February 2025 (EvalScope ``hmmt25``): the problems of the Harvard-MIT Mathematics Tournament, February 2025.

Hub: ModelScope ``evalscope/hmmt_feb_2025`` / Hugging Face ``MathArena/hmmt_feb_2025`` (split ``train``).  Record,
id rule, problem-type stratum and scoring: ``evalpipe/benchmarks/competition_math.py``.
"""

from __future__ import annotations

from evalpipe.benchmarks.competition_math import hmmt_benchmark

NAME = "hmmt25"

BENCHMARK = hmmt_benchmark(NAME, 2025)
