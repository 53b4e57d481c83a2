"""AIME 2024 (EvalScope ``aime24``): the 30 problems of AIME I and II 2024, integer answers 0-999.

Hub: ModelScope ``evalscope/aime24`` / Hugging Face ``math-ai/aime24`` (split ``test``).  Record, id rule,
contest-part stratum and scoring: ``evalpipe/benchmarks/competition_math.py``.
"""

from __future__ import annotations

from evalpipe.benchmarks.competition_math import aime_benchmark

NAME = "aime24"

BENCHMARK = aime_benchmark(NAME, 2024)
