"""A metric's value with its counts and interval: the rows a summary and a benchmark's own metrics share.

Kept apart from ``schema.summary`` (which embeds the manifest's sampling rule, i.e. the config models,
which are built from the benchmark registry) so that benchmark modules can return ``MetricResult``
without importing the config: no import cycle through the registry.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalpipe.artifacts.schema.base import Row
from evalpipe.stats.intervals import wilson_interval


class Interval(Row):
    lower: float
    upper: float
    confidence: float = 0.95
    method: Literal["wilson", "wilson_effective_n", "wilson_clustered"]


def wilson_ci(correct: int, n: int) -> Interval | None:
    """The Wilson score interval of ``correct``/``n`` (``evalpipe.stats.intervals``) as the summary's
    ``Interval``; None when ``n`` is 0."""
    ci = wilson_interval(correct, n)
    return Interval(lower=ci[0], upper=ci[1], method="wilson") if ci else None


class MetricResult(Row):
    """A metric with its own numerator and denominator (e.g. IFEval instruction level)."""

    name: str
    numerator: int | None = Field(description="None when it cannot be recovered exactly from the outcomes.")
    denominator: int | None
    score: float | None
    interval: Interval | None = None
    note: str | None = Field(default=None, description="Why an interval or a count is absent.")
