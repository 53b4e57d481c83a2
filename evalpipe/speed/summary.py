"""The speed part of ``summary.json``: what the report's "Serving speed" section shows, from ``speed.json``.

Each figure is the median across rounds of the per-round figure in ``speed.json`` (the client's own, or the
one ``speed.json`` says it derived), with the per-round output throughputs kept for the plot's spread.  The
paired comparison (``speed_compare.json``, handed in like ``compare.json``) is carried as it was written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evalpipe.artifacts.schema.speed import RoundRecord, SpeedArtifact
from evalpipe.artifacts.schema.speed_compare import SpeedComparison
from evalpipe.artifacts.schema.summary import SpeedRow, SpeedSummary
from evalpipe.stats.descriptive import median


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
        lead_workload=rows[0].workload if rows else None,
        comparison=comparison,
    )
