"""The title and the verdict line that open the report."""

from __future__ import annotations

from evalpipe.report.blocks import B, Block, Heading, Paragraph, T
from evalpipe.report.prose import plural
from evalpipe.schema.summary import Summary

VERDICT_TEXT = {"pass": "PASS", "gate_failed": "GATE FAILED", "audit_error": "AUDIT ERROR"}


def headline_section(summary: Summary) -> list[Block]:
    title = summary.config_name or summary.run_id
    fc = summary.finding_counts
    return [
        Heading(1, f"Accuracy sign-off: {title}"),
        Paragraph(
            [
                B(f"Verdict: {VERDICT_TEXT[summary.verdict]}"),
                T(
                    f" (exit {summary.exit_code}) — {plural(fc.get('error', 0), 'error')}, "
                    f"{plural(fc.get('warn', 0), 'warning')}, {fc.get('info', 0)} info finding(s)."
                ),
            ]
        ),
    ]
