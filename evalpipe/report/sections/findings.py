""" "Findings" (every audit finding, most severe first) and "Gates" (each release gate and its result)."""

from __future__ import annotations

from evalpipe.artifacts.schema.summary import Finding, Summary
from evalpipe.report.blocks import B, Block, Bullets, C, Heading, Inline, Paragraph, T, Table


def _finding_item(f: Finding) -> Inline:
    spans: Inline = [B(f.severity), T(" "), C(f.code)]
    where = []
    if f.benchmark:
        where.append(f.benchmark)
    if f.path:
        where.append(f.path)
    if where:
        spans.append(T(f" ({', '.join(where)})"))
    spans.append(T(f": {f.message}"))
    if f.sample_ids:
        spans += [T(" — samples "), C(", ".join(f.sample_ids))]
    if f.attempt_ids:
        spans += [T(" — attempts "), C(", ".join(f.attempt_ids))]
    return spans


def findings_section(summary: Summary) -> list[Block]:
    if summary.findings:
        return [Heading(2, "Findings"), Bullets([_finding_item(f) for f in summary.findings])]
    return [Heading(2, "Findings"), Paragraph([T("No findings.")])]


def gates_section(summary: Summary) -> list[Block]:
    return [
        Heading(2, "Gates"),
        Table(
            headers=["Gate", "Benchmark", "Result", "Detail"],
            rows=[
                [
                    [C(gr.gate)],
                    [T(gr.benchmark or "—")],
                    [B("pass" if gr.passed else "FAIL"), *([T(" (advisory)")] if gr.advisory else [])],
                    [T(gr.message)],
                ]
                for gr in summary.gates
            ],
            align=["left", "left", "left", "left"],
        ),
    ]
