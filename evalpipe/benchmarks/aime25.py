"""AIME 2025 (EvalScope ``aime25``): the 30 problems of AIME I and II 2025, integer answers 0-999.

Hub: ModelScope ``evalscope/aime25`` / Hugging Face ``math-ai/aime25`` (split ``test``).  Record, id rule,
contest-part stratum and scoring: ``evalpipe/benchmarks/competition_math.py``.
"""

from __future__ import annotations

from evalpipe.benchmarks.competition_math import aime_benchmark

NAME = "aime25"

BENCHMARK = aime_benchmark(NAME, 2025)
