"""The title and the verdict line that open the report."""

from __future__ import annotations

from evalpipe.artifacts.schema.summary import Summary
from evalpipe.report.blocks import B, Block, Heading, Paragraph, T
from evalpipe.sandbox.preflight import sandbox_line
from evalpipe.words.numbers import plural

VERDICT_TEXT = {"pass": "PASS", "gate_failed": "GATE FAILED", "audit_error": "AUDIT ERROR"}


def code_sandbox_line(summary: Summary) -> str | None:
    """Where the run's model-written code ran (``code_sandbox.json``), for the report's first lines."""
    record = summary.code_sandbox
    if record is None:
        return None
    return sandbox_line(record).replace("model-written code runs", "Model-written code ran", 1) + "."


def headline_section(summary: Summary) -> list[Block]:
    """Title, then — when model code ran unsandboxed (consented with allow_unsandboxed) — that, before
    anything else; the verdict; the sandbox that ran the code."""
    title = summary.config_name or summary.run_id
    fc = summary.finding_counts
    sandbox = code_sandbox_line(summary)
    unsandboxed = summary.code_sandbox is not None and summary.code_sandbox.sandbox == "none"
    return [
        Heading(1, f"Accuracy sign-off: {title}"),
        *([Paragraph([B(sandbox)])] if sandbox and unsandboxed else []),
        Paragraph(
            [
                B(f"Verdict: {VERDICT_TEXT[summary.verdict]}"),
                T(
                    f" (exit {summary.exit_code}) — {plural(fc.get('error', 0), 'error')}, "
                    f"{plural(fc.get('warn', 0), 'warning')}, {fc.get('info', 0)} info finding(s)."
                ),
            ]
        ),
        *([Paragraph([T(sandbox)])] if sandbox and not unsandboxed else []),
    ]
