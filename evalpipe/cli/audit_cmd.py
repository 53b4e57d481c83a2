"""``evalpipe audit RUN_DIR``: recompute the sign-off, write summary.json + reports, exit with the verdict.

Exit codes: 0 pass, 1 a gate failed, 2 usage/unreadable run directory or a ``--reviews`` file that does not fit
the run (one line naming the file and the field), 3 error-severity findings.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from evalpipe.artifacts.schema.summary import Summary

_STYLE = {"error": "bold red", "warn": "yellow", "info": "dim"}
_VERDICT_STYLE = {"pass": "bold green", "gate_failed": "bold red", "audit_error": "bold red"}


def show(summary: Summary, *, written: Path | None = None) -> None:
    """Print the results table, the findings, failed gates and the verdict (rich)."""
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from rich.markup import escape
    from rich.table import Table

    from evalpipe.cli.console import out
    from evalpipe.report.sections.failures import reasoning_line
    from evalpipe.report.sections.headline import VERDICT_TEXT
    from evalpipe.report.sections.results import results_headers, results_rows

    table = Table(title=f"run {escape(summary.run_id)}", title_justify="left")
    for i, h in enumerate(results_headers(summary)):
        table.add_column(h, justify="left" if i == 0 else "right", no_wrap=i == 0)
    for row in results_rows(summary):
        table.add_row(*(escape(c) for c in row))
    out.print(table)
    for b in summary.benchmarks:
        if b.reasoning is not None:
            out.print(f"  [dim]{escape(reasoning_line(b))}[/]")
    if summary.speed is not None:
        _show_speed(summary)
    if summary.findings:
        out.print(f"[bold]Findings[/] ({len(summary.findings)}):")
        for f in summary.findings:
            where = f" ({f.benchmark or f.path})" if (f.benchmark or f.path) else ""
            ids = (
                f" — samples {', '.join(f.sample_ids[:5])}{' …' if len(f.sample_ids) > 5 else ''}"
                if f.sample_ids
                else ""
            )
            line = escape(f"{f.code}{where}: {f.message}{ids}")
            out.print(f"  [{_STYLE[f.severity]}]{f.severity:5}[/] {line}")
    else:
        out.print("No findings.")
    for g in summary.gates:
        if g.advisory:
            state = "[green]advisory gate passed[/]" if g.passed else "[yellow]advisory gate failed[/]"
            out.print(f"  {state} {g.gate}: {escape(g.message)} (not deciding the verdict)")
        elif not g.passed:
            out.print(f"  [red]gate failed[/] {g.gate}: {escape(g.message)}")
    if written is not None:
        # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
        from evalpipe.artifacts import RunDir

        rd = RunDir(written)
        page = f", {rd.explorer_html.name}" if summary.explorer is not None else ""
        out.print(escape(f"wrote {rd.summary}, {rd.report_md.name}, {rd.report_html.name}{page}"))
    style = _VERDICT_STYLE[summary.verdict]
    out.print(f"[{style}]Verdict: {VERDICT_TEXT[summary.verdict]}[/] (exit {summary.exit_code})")


def audit(
    run_dir: Annotated[
        Path, typer.Argument(help="Run directory (contains manifest.json, outcomes.jsonl, …)")
    ],
    no_write: Annotated[
        bool, typer.Option("--no-write", help="Only print; do not (re)write summary.json and the reports.")
    ] = False,
    reviews: Annotated[
        Path | None,
        typer.Option(
            "--reviews",
            help="Verdicts exported from explorer.html: checked, kept as RUN_DIR/reviews.json, recorded in "
            "summary.json and the report.",
        ),
    ] = None,
) -> None:
    """Recompute the audit from RUN_DIR; write summary.json, report.md, report.html, explorer.html; exit
    0/1/2/3."""
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.audit.gates import raise_for_verdict
    from evalpipe.compare import comparison_beside
    from evalpipe.run.audit import audit_run
    from evalpipe.speed.stage import speed_comparison_beside

    if reviews is not None:
        # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
        from evalpipe.artifacts import RunDir, read_model
        from evalpipe.artifacts.schema.manifest import Manifest
        from evalpipe.audit.reviews import keep_reviews
        from evalpipe.errors import ConfigError

        if no_write:
            raise ConfigError("--reviews keeps the verdicts in the run directory: not with --no-write")
        rd = RunDir(run_dir)
        keep_reviews(reviews, rd, read_model(rd.manifest, Manifest))
    summary = audit_run(
        run_dir,
        write=not no_write,
        comparison=comparison_beside(run_dir),
        speed_comparison=speed_comparison_beside(run_dir),
    )
    show(summary, written=None if no_write else run_dir)
    raise_for_verdict(summary)


def _show_speed(summary: Summary) -> None:
    """The "Serving speed" table of this variant and the paired ratios with their intervals."""
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from rich.markup import escape
    from rich.table import Table

    from evalpipe.cli.console import out
    from evalpipe.report.sections.speed import SCHEDULE_TEXT, SPEED_HEADERS, comparison_lines, speed_rows

    sp = summary.speed
    assert sp is not None
    table = Table(
        title=escape(f"serving speed: {sp.variant} ({sp.client} {sp.client_version}, median of rounds)"),
        title_justify="left",
    )
    for i, h in enumerate(SPEED_HEADERS):
        table.add_column(h, justify="left" if i == 0 else "right", no_wrap=i == 0)
    for row in speed_rows(sp):
        table.add_row(*(escape(c) for c in row))
    out.print(table)
    for line in comparison_lines(sp):
        out.print(f"  {escape(line)}", soft_wrap=True)
    if sp.comparison is not None:
        out.print(f"  schedule: {escape(SCHEDULE_TEXT[sp.comparison.schedule])}", soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)
