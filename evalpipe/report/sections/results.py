""" "Results": the main table (score, Wilson interval, input throughput), secondary metrics, and the
per-context-length view of benchmarks sampled by length."""

from __future__ import annotations

from evalpipe.report.blocks import Block, C, Heading, Inline, Paragraph, T, Table
from evalpipe.report.prose import ci_text, pct, rate
from evalpipe.schema.summary import BenchmarkResult, Summary

RESULTS_HEADERS = ["Dataset / metric", "Correct / scored", "Score", "95 % CI", "Input TPS", "Input TPS/GPU"]


def results_rows(summary: Summary) -> list[list[str]]:
    """Rows of the main table (also used by the terminal view)."""
    rows = []
    for b in summary.benchmarks:
        tp = b.throughput
        rows.append(
            [
                f"{b.display_name} / {b.metric}",
                f"{b.repeats.correct_attempts}/{b.repeats.attempts} attempts"
                if b.repeats
                else f"{b.correct}/{b.scored}",
                pct(b.score),
                ci_text(b.interval),
                rate(tp.input_tps if tp else None),
                rate(tp.input_tps_per_gpu if tp else None),
            ]
        )
    return rows


def _secondary_table(b: BenchmarkResult) -> Table:
    rows: list[list[Inline]] = []
    for m in b.secondary:
        counts = f"{m.numerator}/{m.denominator}" if m.numerator is not None else "n/a"
        rows.append(
            [[C(m.name)], [T(counts)], [T(pct(m.score))], [T(ci_text(m.interval))], [T(m.note or "")]]
        )
    return Table(
        headers=["Metric", "Followed / total", "Score", "95 % CI", "Note"],
        rows=rows,
        align=["left", "right", "right", "right", "left"],
    )


def _length_table(b: BenchmarkResult) -> Table:
    rows: list[list[Inline]] = [
        [[T(x.length)], [T(str(x.n))], [T(f"{x.correct}/{x.n}")], [T(pct(x.score))], [T(ci_text(x.interval))]]
        for x in b.by_length
    ]
    return Table(
        headers=["Context length", "n", "Correct", "Score", "95 % CI"],
        rows=rows,
        align=["left", "right", "right", "right", "right"],
    )


def results_section(summary: Summary) -> list[Block]:
    blocks: list[Block] = [
        Heading(2, "Results"),
        Table(
            headers=RESULTS_HEADERS,
            rows=[[[T(c)] for c in row] for row in results_rows(summary)],
            align=["left", "right", "right", "right", "right", "right"],
            key="results",
        ),
        Paragraph(
            [
                T(
                    "Score = correct / scored; every sampled record is in the denominator and a record without a "
                    "score counts as incorrect. 95 % CI: Wilson score interval. Input TPS: prompt tokens of the "
                    "benchmark's logged requests over its wall time (first request start → last request end); "
                    "per GPU: divided by the verified TP size."
                )
            ]
        ),
    ]
    for b in summary.benchmarks:
        if b.repeats:
            blocks.append(Paragraph([T(f"{b.display_name}: {b.repeats.statement}")]))
    for b in summary.benchmarks:
        if b.secondary:
            blocks.append(Heading(3, f"{b.display_name} secondary metrics"))
            blocks.append(_secondary_table(b))
    for b in summary.benchmarks:
        if b.by_length:
            blocks.append(Heading(3, f"{b.display_name} by context length"))
            blocks.append(
                Paragraph(
                    [
                        T(
                            "KV-cache view: the primary metric within each context-length bucket of the sample "
                            "(unweighted; same denominator rule), so a loss that grows with the context shows "
                            "here. Paired runs: compare.md and compare.json carry the difference and flips per bucket."
                        )
                    ]
                )
            )
            blocks.append(_length_table(b))
    return blocks
