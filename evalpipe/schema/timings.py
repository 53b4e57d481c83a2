"""``timings.json`` — wall time of each stage of one ``evalpipe run`` invocation.

Kept so that a slow run can be explained from its files (which stage took the time) and so that
``perf/bench_overhead.py`` can split evalpipe's extra time by stage.  A resumed run overwrites it
with the resuming invocation's times.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalpipe.schema.base import Artifact, Row

#: ``variants``: wall time of variants run at the same time (``parallel_variants``), each with its own stages.
StageName = Literal[
    "sample",
    "materialize",
    "preflight",
    "launch",
    "evalscope",
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


class StageTimings(Artifact):
    schema_version: int = 1
    stages: list[StageTime] = Field(default_factory=list)

    def total(self) -> float:
        return sum(s.seconds for s in self.stages)

    def by_stage(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for s in self.stages:
            out[s.stage] = out.get(s.stage, 0.0) + s.seconds
        return out
