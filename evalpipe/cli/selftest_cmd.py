"""``evalpipe demo`` and ``evalpipe selftest`` — the embedded self-test, no GPU needed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from evalpipe.errors import ExitCode

Out = Annotated[Path | None, typer.Option("--out", help="Run directory (default: results/<name>-<time>)")]


def demo(out: Out = None) -> None:
    """Run the whole pipeline on the bundled self-test: answer-key server with planted faults vs a clean
    one on the same manifest, audit, report and paired comparison."""
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli.run_cmd import run
    from evalpipe.selftest.controls import demo_config_path

    run(demo_config_path(), endpoint=None, dataset_root=None, out=out, resume=None, allow_dataset_drift=False)


def selftest(out: Out = None) -> None:
    """Positive control (with planted faults) and negative control; exit 0 only if every guarantee holds."""
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from rich.table import Table

    from evalpipe.cli.console import out as console
    from evalpipe.cli.run_cmd import _setup
    from evalpipe.run.selftest import run_selftest
    from evalpipe.selftest.controls import demo_config_path

    config = demo_config_path()
    resolved, progress_factory = _setup(config)
    cfg = resolved.config
    root = (
        out or cfg.resolve_path(cfg.output_root) / f"selftest-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"
    )
    with progress_factory() as progress:
        checks = run_selftest(root, run=resolved, progress=progress)
    table = Table(title="evalpipe self-test", title_justify="left")
    for col in ("control", "scores", "findings", "verdict", "guarantees"):
        table.add_column(col)
    for c in checks:
        s = c.summary
        scores = ", ".join(f"{b.benchmark} {b.correct}/{b.scored}" for b in s.benchmarks) if s else "-"
        findings = ", ".join(sorted({f.code for f in s.findings})) if s and s.findings else "none"
        verdict = f"{s.verdict} (exit {s.exit_code})" if s else "-"
        table.add_row(c.name, scores, findings, verdict, "[green]hold[/]" if c.ok else "[red]VIOLATED[/]")
    console.print(table)
    for c in checks:
        for p in c.problems:
            console.print(f"[red]✗[/] {c.name}: {p}", markup=True, soft_wrap=True)
    console.print(f"run directories: {root}")
    if not all(c.ok for c in checks):
        raise typer.Exit(int(ExitCode.GATE_FAILED))
    console.print("[bold green]self-test passed[/]: every guarantee holds")


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
    app.command("selftest")(selftest)
