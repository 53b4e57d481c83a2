"""``evalpipe compare RUN_A RUN_B`` — paired comparison on the identical manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def compare(
    run_a: Annotated[Path, typer.Argument(help="Run directory A (e.g. the FP8 variant)")],
    run_b: Annotated[Path, typer.Argument(help="Run directory B (e.g. the BF16 control)")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Where compare.json/.md go (default: RUN_A/..)")
    ] = None,
    label_a: Annotated[str | None, typer.Option("--label-a")] = None,
    label_b: Annotated[str | None, typer.Option("--label-b")] = None,
) -> None:
    """Refuse unless both runs used the same manifest and prompts; then paired statistics."""
    from evalpipe.cli.console import out as console
    from evalpipe.compare import compare_runs, write_compare

    result = compare_runs(run_a, run_b, label_a=label_a, label_b=label_b)
    json_path, md_path = write_compare(result, out if out is not None else Path(run_a).resolve().parent)
    for b in result.benchmarks:
        console.print(b.line, soft_wrap=True)
    if result.overall:
        console.print(result.overall.line, soft_wrap=True)
    console.print(f"compare.json → {json_path}\ncompare.md → {md_path}")


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
