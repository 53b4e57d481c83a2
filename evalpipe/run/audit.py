"""``audit_run``: recompute the whole sign-off from a run directory and write summary + reports.

It is the library function behind ``evalpipe audit`` and the last stage of ``evalpipe run``: the summary is
``evalpipe.audit.run.build_summary`` (analysis), the explorer and the reports are ``evalpipe.explore`` and
``evalpipe.report`` (presentation); joining them is a step of the run, above both.  Exit codes are decided
by ``evalpipe.audit.gates.raise_for_verdict``.
"""

from __future__ import annotations

from pathlib import Path

from evalpipe.artifacts import RunDir, atomic_write_text, write_model
from evalpipe.artifacts.schema.compare import CompareResult
from evalpipe.artifacts.schema.speed_compare import SpeedComparison
from evalpipe.artifacts.schema.summary import Summary
from evalpipe.audit.run import build_summary
from evalpipe.errors import ArtifactError
from evalpipe.explore import build_run_explorer
from evalpipe.report.html import render_html
from evalpipe.report.markdown import render_markdown


def write_outputs(run_dir: Path, summary: Summary, *, paired: bool = False) -> Summary:
    """explorer.html, then summary.json (saying what the explorer holds), report.md and report.html, each
    written atomically; returns the summary as written.  ``paired``: a paired comparison sits beside the
    run directory, so the report also links its explorer (``../explorer.html``) when there is one."""
    rd = RunDir(Path(run_dir))
    if rd.outcomes.is_file():
        try:
            record = build_run_explorer(rd.root).record
        # an unreadable request or response log costs the page, not the sign-off: the report says why
        except ArtifactError as exc:
            rd.explorer_html.unlink(missing_ok=True)  # an earlier audit's page would show other files' data
            note = f"explorer.html was not written: {exc.message}"
            summary = summary.model_copy(update={"limitations": [*summary.limitations, note]})
        else:
            beside = rd.root.parent / rd.explorer_html.name
            if paired and beside.is_file():
                record = record.model_copy(update={"paired_file": f"../{beside.name}"})
            summary = summary.model_copy(update={"explorer": record})
    write_model(rd.summary, summary)
    atomic_write_text(rd.report_md, render_markdown(summary))
    atomic_write_text(rd.report_html, render_html(summary))
    return summary


def audit_run(
    run_dir: Path,
    *,
    write: bool = True,
    comparison: CompareResult | None = None,
    speed_comparison: SpeedComparison | None = None,
) -> Summary:
    """Recompute the summary from ``run_dir``; write it, the reports and the explorer unless ``write`` is
    False.

    ``comparison``, ``speed_comparison``: see ``build_summary``.
    """
    summary = build_summary(run_dir, comparison, speed_comparison)
    if write:
        summary = write_outputs(run_dir, summary, paired=comparison is not None)
    return summary
