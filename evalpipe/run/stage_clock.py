"""Wall time of each stage of a run, in the order the stages ran (``timings.json``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from evalpipe.artifacts import RunDir, write_model
from evalpipe.artifacts.disk import stage as disk_stage
from evalpipe.artifacts.schema.timings import ServerUtilisation, StageName, StageTime, StageTimings


class StageClock:
    """Wall time of each stage, in the order they ran (printed at the end, saved as ``timings.json``)."""

    def __init__(self, variant: str | None = None) -> None:
        self.variant = variant
        self.stages: list[StageTime] = []
        self.utilisation: ServerUtilisation | None = None

    @contextmanager
    def stage(self, name: StageName) -> Iterator[None]:
        """Time the block; a write the file system refuses inside it names this stage (``DiskFull``)."""
        start = time.perf_counter()
        try:
            with disk_stage(name):
                yield
        finally:
            self.add(name, time.perf_counter() - start)

    def add(self, name: StageName, seconds: float) -> None:
        self.stages.append(StageTime(stage=name, seconds=round(seconds, 3), variant=self.variant))

    def write(self, rd: RunDir) -> None:
        write_model(rd.timings, StageTimings(stages=self.stages, utilisation=self.utilisation))
