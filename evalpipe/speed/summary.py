"""The speed part of ``summary.json``: what the report's "Serving speed" section shows, from ``speed.json``.

Each figure is the median across rounds of the per-round figure in ``speed.json`` (the client's own, or the
one ``speed.json`` says it derived), with the per-round output throughputs kept for the plot's spread.  The
paired comparison (``speed_compare.json``, handed in like ``compare.json``) is carried as it was written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import Field

from evalpipe.artifacts.schema.base import Row
from evalpipe.speed.compare import SpeedComparison
from evalpipe.speed.model import LoadAverage, RoundRecord, Schedule, SpeedArtifact
from evalpipe.stats.descriptive import median


class SpeedRow(Row):
    """One workload of this variant, across its rounds."""

    workload: str
    input_len: int
    output_len: int
    concurrency: int
    rounds: int
    usable_rounds: int = Field(description="Rounds that completed every request at the requested lengths.")
    requested: int = Field(description="Measured requests per round.")
    completed: list[int] = Field(description="Completed requests, round by round.")
    output_throughput_rounds: list[float | None] = Field(description="tok/s, round by round.")
    output_throughput: float | None = Field(description="Median across rounds, tok/s.")
    output_throughput_min: float | None
    output_throughput_max: float | None
    input_throughput: float | None = Field(description="Median across rounds, prompt tok/s.")
    ttft_p50_ms: float | None
    ttft_p99_ms: float | None
    itl_p50_ms: float | None
    itl_p99_ms: float | None
    e2e_p50_ms: float | None


class SpeedSummary(Row):
    variant: str
    client: str
    client_version: str
    percentile_method: str | None
    schedule: Schedule
    rounds: int = Field(description="Rounds per workload the config asked for.")
    load_before: LoadAverage | None
    load_after: LoadAverage | None
    rows: list[SpeedRow]
    seed_workload: str | None = Field(
        description="The workload whose input throughput fills the results table's speed-benchmark columns "
        "(the config's first)."
    )
    comparison: SpeedComparison | None = Field(
        default=None, description="speed_compare.json of the paired variants, when there is one."
    )


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return median(present) if present else None


def _row(name: str, rounds: list[RoundRecord], artifact: SpeedArtifact) -> SpeedRow:
    w = next(x.workload for x in artifact.workloads if x.name == name)

    def med(read: Callable[[RoundRecord], float | None]) -> float | None:
        return _median([read(r) for r in rounds])

    tputs = [r.output_throughput for r in rounds]
    present = [t for t in tputs if t is not None]
    return SpeedRow(
        workload=name,
        input_len=w.input_len,
        output_len=w.output_len,
        concurrency=w.concurrency,
        rounds=len(rounds),
        usable_rounds=sum(1 for r in rounds if r.usable),
        requested=w.num_prompts,
        completed=[r.completed for r in rounds],
        output_throughput_rounds=tputs,
        output_throughput=_median(tputs),
        output_throughput_min=min(present) if present else None,
        output_throughput_max=max(present) if present else None,
        input_throughput=med(lambda r: r.input_throughput),
        ttft_p50_ms=med(lambda r: r.ttft_ms.median),
        ttft_p99_ms=med(lambda r: r.ttft_ms.p99),
        itl_p50_ms=med(lambda r: r.itl_ms.median),
        itl_p99_ms=med(lambda r: r.itl_ms.p99),
        e2e_p50_ms=med(lambda r: r.e2e_ms.median),
    )


def summarize_speed(artifact: SpeedArtifact, comparison: SpeedComparison | None) -> SpeedSummary:
    methods = {r.percentile_method for w in artifact.workloads for r in w.rounds}
    rows = [_row(w.name, w.rounds, artifact) for w in artifact.workloads]
    return SpeedSummary(
        variant=artifact.variant,
        client=artifact.client.program,
        client_version=artifact.client.version,
        percentile_method=", ".join(sorted(methods)) or None,
        schedule=comparison.schedule if comparison is not None else artifact.schedule,
        rounds=artifact.config.rounds,
        load_before=artifact.load_before,
        load_after=artifact.load_after,
        rows=rows,
        seed_workload=rows[0].workload if rows else None,
        comparison=comparison,
    )
