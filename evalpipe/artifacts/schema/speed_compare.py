"""``speed_compare.json``: the paired speed comparison of two variants, workload by workload.

``evalpipe.speed.compare`` computes it (and re-exports these models); the models live here so that the
summary, which carries the comparison, needs no import of the speed package.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalpipe.artifacts.schema.base import Artifact, Row
from evalpipe.artifacts.schema.speed import Schedule

MetricName = Literal["output_throughput", "ttft_p50", "ttft_p99", "itl_p50", "itl_p99", "e2e_p50"]
Direction = Literal["better", "worse", "inconclusive"]
Verdict = Literal["faster", "slower", "inconclusive"]


class MetricRatio(Row):
    metric: MetricName
    higher_is_better: bool
    control_rounds: list[float | None]
    test_rounds: list[float | None]
    control_median: float | None
    test_median: float | None
    ratio: float | None = Field(description="median(test rounds) / median(control rounds)")
    ci_low: float | None
    ci_high: float | None
    direction: Direction


class GateOutcome(Row):
    gate: Literal["min_output_throughput_ratio"] = "min_output_throughput_ratio"
    threshold: float
    actual: float | None
    passed: bool
    message: str


class WorkloadComparison(Row):
    workload: str
    rounds_control: int
    rounds_test: int
    complete: bool = Field(
        description="Every round of both variants completed every request, each of the requested lengths."
    )
    same_prompts: bool | None = Field(
        description="Round r of both variants had the same prompt set (None: unknown)."
    )
    metrics: list[MetricRatio]
    verdict: Verdict
    reason: str
    gate: GateOutcome | None = None
    line: str = Field(description='e.g. "in32-out16-c2: output throughput x1.04 [0.97, 1.10] — inconclusive"')


class SpeedComparison(Artifact):
    schema_version: int = 1
    control: str
    test: str
    client: str
    schedule: Schedule
    method: str
    confidence: float
    bootstrap_resamples: int
    bootstrap_seed: int
    workloads: list[WorkloadComparison]
    gate_passed: bool | None = Field(description="None when no gate was asked for.")
