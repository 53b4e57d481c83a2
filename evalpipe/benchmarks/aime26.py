"""AIME 2026 (EvalScope ``aime26``): the 30 problems of AIME I and II 2026, integer answers 0-999.

Hub: ModelScope ``evalscope/aime26`` / Hugging Face ``math-ai/aime26`` (split ``test``).  Record, id rule,
contest-part stratum and scoring: ``evalpipe/benchmarks/competition_math.py``.
"""

from __future__ import annotations

from evalpipe.benchmarks.competition_math import aime_benchmark

NAME = "aime26"

BENCHMARK = aime_benchmark(NAME, 2026)
