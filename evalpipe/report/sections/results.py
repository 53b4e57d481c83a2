""" "Results": the main table (score, Wilson interval, input throughput), secondary metrics, and the
per-context-length view of benchmarks sampled by length."""

from __future__ import annotations

from typing import Literal

from evalpipe.artifacts.schema.summary import BenchmarkResult, Summary
from evalpipe.report.blocks import Block, C, Heading, Inline, Paragraph, T, Table
from evalpipe.report.sections.speed import first_left
from evalpipe.words.numbers import ci_text, pct, rate

RESULTS_HEADERS = ["Dataset / metric", "Correct / scored", "Score", "95 % CI", "Input TPS", "Input TPS/GPU"]
#: With a speed benchmark the seed's two throughput columns come from it; the evaluation-traffic figures stay,
#: labelled as those.
SPEED_HEADERS = [
    *RESULTS_HEADERS[:4],
    "Input TPS (speed benchmark)",
    "Input TPS/GPU (speed benchmark)",
    "Input TPS (eval traffic)",
    "Input TPS/GPU (eval traffic)",
]


def results_headers(summary: Summary) -> list[str]:
    return SPEED_HEADERS if _speed_input(summary) is not None else RESULTS_HEADERS


def _speed_input(summary: Summary) -> tuple[str, float | None, float | None] | None:
    """(workload, input tok/s, per GPU) of the seed's workload, when the run has a speed benchmark."""
    sp = summary.speed
    if sp is None or sp.lead_workload is None:
        return None
    row = next(r for r in sp.rows if r.workload == sp.lead_workload)
    tp = summary.server.tp_size  # per GPU as for the evaluation traffic: divided by the verified TP size
    per_gpu = row.input_throughput / tp if row.input_throughput is not None and tp else None
    return row.workload, row.input_throughput, per_gpu


def results_rows(summary: Summary) -> list[list[str]]:
    """Rows of the main table (also used by the terminal view)."""
    speed = _speed_input(summary)
    rows = []
    for b in summary.benchmarks:
        tp = b.throughput
        traffic = [rate(tp.input_tps if tp else None), rate(tp.input_tps_per_gpu if tp else None)]
        bench = [] if speed is None else [rate(speed[1]), rate(speed[2])]
        rows.append(
            [
                f"{b.display_name} / {b.metric}",
                f"{b.repeats.correct_attempts}/{b.repeats.attempts} attempts"
                if b.repeats
                else f"{b.correct}/{b.scored}",
                pct(b.score),
                ci_text(b.interval),
                *bench,
                *traffic,
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


def _placement_table(b: BenchmarkResult) -> Table:
    places = list(dict.fromkeys(c.placement for c in b.by_placement))
    lengths = sorted({c.length for c in b.by_placement})
    cell = {(c.length, c.placement): c for c in b.by_placement}

    def shown(length: int, place: str) -> str:
        c = cell.get((length, place))
        return "–" if c is None else f"{c.correct}/{c.n}"

    rows: list[list[Inline]] = [[[T(str(n))], *[[T(shown(n, p))] for p in places]] for n in lengths]
    right: Literal["left", "right"] = "right"
    align: list[Literal["left", "right"]] = ["left", *[right] * len(places)]
    return Table(headers=["Context length", *places], rows=rows, align=align)


def results_section(summary: Summary) -> list[Block]:
    headers = results_headers(summary)
    speed = _speed_input(summary)
    traffic = (
        "Input TPS: prompt tokens of the benchmark's logged requests over its wall time (first request start → "
        "last request end); per GPU: divided by the verified TP size."
    )
    if speed is not None:
        traffic = (
            f"Input TPS (speed benchmark): the serving benchmark's workload {speed[0]} (median across rounds of "
            "prompt tokens per second; the same server for every row — see Serving speed). Input TPS (eval "
            "traffic): " + traffic[len("Input TPS: ") :]
        )
    blocks: list[Block] = [
        Heading(2, "Results"),
        Table(
            headers=headers,
            rows=[[[T(c)] for c in row] for row in results_rows(summary)],
            align=first_left(headers),
            key="results",
        ),
        Paragraph(
            [
                T(
                    "Score = correct / scored; every sampled record is in the denominator and a record without a "
                    "score counts as incorrect. 95 % CI: Wilson score interval. " + traffic
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
        if b.by_placement:
            blocks.append(Heading(3, f"{b.display_name} by context length and evidence placement"))
            blocks.append(
                Paragraph(
                    [
                        T(
                            "Correct / items at each context length (rows) with the evidence at each placement "
                            "(columns: a depth in percent, one token before or on a KV page edge, beyond the sparse "
                            "indexer's window). Paired runs: compare.md and the explorer mark the flips per cell."
                        )
                    ]
                )
            )
            blocks.append(_placement_table(b))
    return blocks
