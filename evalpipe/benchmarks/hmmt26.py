"""HMMT February 2026 (EvalScope ``hmmt26``): the problems of the Harvard-MIT Mathematics Tournament, February 2026.

Hub: ModelScope ``evalscope/hmmt_feb_2026`` / Hugging Face ``MathArena/hmmt_feb_2026`` (split ``train``).  Record,
id rule, problem-type stratum and scoring: ``evalpipe/benchmarks/competition_math.py``.
"""

from __future__ import annotations

from evalpipe.benchmarks.competition_math import hmmt_benchmark

NAME = "hmmt26"

BENCHMARK = hmmt_benchmark(NAME, 2026)
