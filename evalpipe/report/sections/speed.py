""" "Serving speed": the speed benchmark of this variant (per workload, medians across rounds with the
round spread) and the paired ratios with their intervals, the number of rounds beside every interval."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from evalpipe.artifacts import RunDir
from evalpipe.artifacts.schema.speed import LoadAverage
from evalpipe.artifacts.schema.speed_compare import MetricRatio, WorkloadComparison
from evalpipe.artifacts.schema.summary import SpeedSummary, Summary
from evalpipe.report.blocks import Block, Bullets, C, Heading, Inline, Paragraph, T, Table
from evalpipe.words.numbers import plural, rate

SPEED_HEADERS = [
    "Workload",
    "Rounds",
    "Completed / requested",
    "Output tok/s (min–max)",
    "Input tok/s",
    "TTFT p50 / p99 ms",
    "ITL p50 / p99 ms",
    "E2E p50 ms",
]
METRIC_LABELS = {
    "output_throughput": "output throughput",
    "ttft_p50": "TTFT p50",
    "ttft_p99": "TTFT p99",
    "itl_p50": "ITL p50",
    "itl_p99": "ITL p99",
    "e2e_p50": "E2E p50",
}
SCHEDULE_TEXT = {
    "alternating": "the variants' rounds alternated in time (ABBA…) with every variant's server up; the "
    "interval resamples round pairs",
    "sequential": "rounds ran one variant after the other (each on its own launch); the interval resamples "
    "each variant's rounds independently, so load drift between the two launches is inside the ratio",
    "single": "one variant",
}
#: When the rounds ran, as the section's first paragraph says it (by the schedule they ran on).
WHEN_TEXT = {
    "alternating": "against the server's own URL once every variant's accuracy evaluation had finished (same "
    "launch, no proxy, no evaluation traffic during the rounds; the variants' servers up at once, their rounds "
    "alternating ABBA…)",
    "sequential": "against the server's own URL right after its accuracy evaluation (same launch, no proxy; "
    "the variants one after the other)",
    "single": "against the server's own URL right after its accuracy evaluation (same launch, no proxy)",
}


def first_left(headers: list[str]) -> list[Literal["left", "right"]]:
    """Alignment of a table whose first column is a label and the others numbers."""
    return ["left" if i == 0 else "right" for i in range(len(headers))]


def _ms(x: float | None) -> str:
    return "n/a" if x is None else f"{x:,.1f}"


def speed_rows(sp: SpeedSummary) -> list[list[str]]:
    """Rows of the per-variant table (also used by the terminal view)."""
    out = []
    for r in sp.rows:
        spread = (
            f" ({rate(r.output_throughput_min)}–{rate(r.output_throughput_max)})"
            if r.output_throughput_min is not None
            else ""
        )
        out.append(
            [
                r.workload,
                f"{r.rounds} ({r.usable_rounds} usable)" if r.usable_rounds != r.rounds else str(r.rounds),
                ", ".join(f"{c}/{r.requested}" for c in r.completed) or "n/a",
                rate(r.output_throughput) + spread,
                rate(r.input_throughput),
                f"{_ms(r.ttft_p50_ms)} / {_ms(r.ttft_p99_ms)}",
                f"{_ms(r.itl_p50_ms)} / {_ms(r.itl_p99_ms)}",
                _ms(r.e2e_p50_ms),
            ]
        )
    return out


def _ratio(m: MetricRatio) -> str:
    if m.ratio is None:
        return f"{METRIC_LABELS[m.metric]} n/a"
    ci = f" [{m.ci_low:.2f}, {m.ci_high:.2f}]" if m.ci_low is not None and m.ci_high is not None else ""
    return f"{METRIC_LABELS[m.metric]} x{m.ratio:.2f}{ci}"


def comparison_lines(sp: SpeedSummary) -> list[str]:
    """One line per workload: every ratio with its interval, the verdict and the rounds behind it."""
    cmp = sp.comparison
    if cmp is None:
        return []
    return [_workload_line(cmp.test, cmp.control, w) for w in cmp.workloads]


def _workload_line(test: str, control: str, w: WorkloadComparison) -> str:
    rounds = f"{w.rounds_test}+{w.rounds_control} rounds"
    ratios = "; ".join(_ratio(m) for m in w.metrics)
    return f"{w.workload} ({test}/{control}, {rounds}): {ratios} — {w.verdict} ({w.reason})"


def _load(x: LoadAverage | None) -> str:
    return "n/a" if x is None else f"{x.one:.2f} / {x.five:.2f} / {x.fifteen:.2f} on {plural(x.cpus, 'CPU')}"


def _row_table(sp: SpeedSummary) -> Table:
    return Table(
        headers=SPEED_HEADERS,
        rows=[[[T(c)] for c in row] for row in speed_rows(sp)],
        align=first_left(SPEED_HEADERS),
        key="speed",
    )


def speed_section(summary: Summary) -> list[Block]:
    sp = summary.speed
    if sp is None and summary.speed_not_measured is not None:  # an accuracy-only run says so
        return [
            Heading(2, "Serving speed"),
            Paragraph([T(f"This run is accuracy only: {summary.speed_not_measured}; no speed benchmark "
                         "ran against this server.")]),
        ]  # fmt: skip
    if sp is None:
        return []
    blocks: list[Block] = [
        Heading(2, "Serving speed"),
        Paragraph(
            [
                T(f"Variant {sp.variant}: "),
                C(sp.client),
                T(
                    f" {sp.client_version} {WHEN_TEXT[sp.schedule]}, {plural(sp.rounds, 'round')} per workload, "
                    "fixed input and output lengths "
                    "(the server is asked to ignore EOS), the same seeded prompts for every variant. Figures: "
                    f"median across rounds; percentiles within a round are the client's ({sp.percentile_method or 'n/a'})."
                ),
            ]
        ),
        _row_table(sp),
        Paragraph(
            [
                T(
                    f"Load average (1 / 5 / 15 min) before: {_load(sp.load_before)}; after: {_load(sp.load_after)}."
                )
            ]
        ),
    ]
    lines = comparison_lines(sp)
    if sp.comparison is not None:
        cmp = sp.comparison
        blocks.append(Heading(3, f"Speed ratio {cmp.test} / {cmp.control}"))
        items: list[Inline] = [[T(line)] for line in lines]
        blocks.append(Bullets(items))
        blocks.append(
            Paragraph(
                [
                    T(
                        f"Ratio = median of {cmp.test}'s rounds / median of {cmp.control}'s; {cmp.method}. "
                        f"Schedule: {SCHEDULE_TEXT[cmp.schedule]}. Below about 5 rounds the interval covers the "
                        "true ratio less often than its nominal level (about 76 % at 3 rounds). Latency ratios "
                        "below 1 are better. Source: "
                    ),
                    C(RunDir(Path(".")).speed_compare.name),
                    T("."),
                ]
            )
        )
    return blocks
