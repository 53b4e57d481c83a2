"""``timings.json`` — wall time of each stage of one ``evalpipe run`` invocation.

Kept so that a slow run can be explained from its files (which stage took the time) and so that
``perf/bench_overhead.py`` can split evalpipe's extra time by stage.  A resumed run overwrites it
with the resuming invocation's times.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalpipe.artifacts.schema.base import Artifact, Row

#: ``variants``: wall time of variants run at the same time (``parallel_variants``), each with its own stages;
#: ``speed_wait``: there, a variant's server waiting for the others' evaluations before the speed rounds.
StageName = Literal[
    "sample",
    "materialize",
    "preflight",
    "launch",
    "numerics",
    "evalscope",
    "speed_wait",
    "speed",
    "stop",
    "outcomes",
    "audit",
    "compare",
    "variants",
]


class StageTime(Row):
    stage: StageName
    seconds: float = Field(ge=0)
    variant: str | None = None


class ServerUtilisation(Row):
    """How full the server's ``concurrency`` slots were during the evaluation (``evalpipe.audit.utilisation``)."""

    concurrency: int = Field(description="generation.concurrency: the slots all benchmarks share.")
    window_s: float = Field(description="First attempt's arrival at the proxy → last attempt's end.")
    mean_in_flight: float = Field(description="Time-weighted mean of attempts at the server over the window.")
    utilisation: float = Field(description="mean_in_flight ÷ concurrency.")
    max_in_flight: int
    busy_slot_s: float
    idle_slot_s: float = Field(description="concurrency × window − busy slot-seconds.")
    idle_between_benchmarks_slot_s: float = Field(description="Idle while no benchmark had traffic.")
    idle_in_tails_slot_s: float = Field(
        description="Idle while a running benchmark had sent its last attempt and nothing filled the slots."
    )
    idle_other_slot_s: float = Field(
        description="Idle while benchmarks were still sending (ramp-up, retries)."
    )
    mean_queue_wait_s: float | None = Field(
        default=None, description="Mean time attempts waited in the proxy for a slot (None: older log)."
    )


class StageTimings(Artifact):
    schema_version: int = 1
    stages: list[StageTime] = Field(default_factory=list)
    utilisation: ServerUtilisation | None = Field(
        default=None, description="Of the evaluation stage (absent in files written before it was measured)."
    )

    def total(self) -> float:
        return sum(s.seconds for s in self.stages)

    def by_stage(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for s in self.stages:
            out[s.stage] = out.get(s.stage, 0.0) + s.seconds
        return out
