"""Descriptive summaries of one list of numbers: the median and the nearest-rank percentile.

* ``median`` — the middle value of the sorted sample, or the mean of the two middle ones for an even count
  (the usual sample median; identical to ``numpy.median`` and ``statistics.median`` on floats).
* ``nearest_rank`` — the p-th percentile by the nearest-rank method: the value at rank ⌈p·n⌉ of the sorted
  sample (Hyndman & Fan 1996, definition 1 — always one of the observed values, so "p95 = 2,048 tokens"
  is a length some response really had).
* ``length_summary`` — n, median, nearest-rank p95 and max of a sample of lengths (the report's reasoning
  length line).

Pure Python (no numpy import), so the report and the sandbox's start-up measurement stay light.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def median(values: Sequence[float]) -> float:
    """The sample median (module docstring); ``ValueError`` on an empty sample."""
    if not values:
        raise ValueError("the median of an empty sample is undefined")
    v = sorted(float(x) for x in values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def nearest_rank(values: Sequence[float], p: float) -> float:
    """The nearest-rank p-th percentile, 0 < p ≤ 1 (Hyndman & Fan 1996, definition 1)."""
    if not values:
        raise ValueError("a percentile of an empty sample is undefined")
    if not 0 < p <= 1:
        raise ValueError(f"percentile must be in (0, 1], got {p}")
    v = sorted(float(x) for x in values)
    return v[max(0, math.ceil(p * len(v)) - 1)]


@dataclass(frozen=True)
class LengthSummary:
    n: int
    median: float
    p95: float
    max: float


def length_summary(values: Sequence[float]) -> LengthSummary | None:
    """n, median, nearest-rank p95 and max; ``None`` for an empty sample."""
    if not values:
        return None
    return LengthSummary(
        n=len(values), median=median(values), p95=nearest_rank(values, 0.95), max=float(max(values))
    )
