"""``evalpipe run``: sample → materialize → EvalScope → outcomes against a running server."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def run(
    config: Annotated[Path, typer.Argument(help="Run config YAML")],
    endpoint: Annotated[
        str | None,
        typer.Option(
            "--endpoint",
            help="Base URL of a running OpenAI-compatible server (http://host:port or http://host:port/v1); "
            "attaches even when the config's server.kind is sglang or answer_key.",
        ),
    ] = None,
    dataset_root: Annotated[
        Path | None,
        typer.Option(
            "--dataset-root", help="Local mirror root for every benchmark (layout of ../shared/datasets)."
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Run directory (default: output_root/<name>-<time>)")
    ] = None,
    resume: Annotated[
        Path | None,
        typer.Option(
            "--resume", help="Continue this run directory; cached answers are identity-checked first."
        ),
    ] = None,
    allow_dataset_drift: Annotated[
        bool,
        typer.Option("--allow-dataset-drift", help="Run even if a pinned fingerprint differs (recorded)."),
    ] = False,
) -> None:
    """Run the sampled benchmarks through EvalScope and write outcomes.jsonl."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from evalpipe import pipeline
    from evalpipe.cli.console import err
    from evalpipe.cli.console import out as console
    from evalpipe.config import load_config

    cfg = load_config(config)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as progress:
        result = pipeline.run(
            cfg,
            endpoint=endpoint,
            dataset_root=dataset_root,
            out=out,
            resume=resume,
            allow_drift=allow_dataset_drift,
            progress=progress,
        )
    summarize(result, console)


def summarize(result, console) -> None:  # type: ignore[no-untyped-def]
    """Per benchmark: samples, ok, failure classes; repairs on resume; where the files are."""
    from collections import Counter

    from rich.table import Table

    table = Table(title=f"run {result.rundir.root}", show_lines=False)
    for col in ("benchmark", "samples", "ok", "failures"):
        table.add_column(col)
    by_bench: dict[str, list] = {}
    for row in result.outcomes:
        by_bench.setdefault(row.benchmark, []).append(row)
    for name, rows in by_bench.items():
        counts = Counter(r.failure_label for r in rows if r.failure_class != "ok")
        ok = sum(1 for r in rows if r.failure_class == "ok")
        table.add_row(
            name, str(len(rows)), str(ok), ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "-"
        )
    console.print(table)
    stage = result.evalscope
    if result.resumed:
        console.print(f"cache-identity repairs: {len(stage.repairs)} (→ {result.rundir.cache_repairs})")
    for b in stage.benchmarks:
        if b.rerun_review:
            console.print(
                f"{b.benchmark}: EvalScope re-scored every cached prediction ({b.cache_identity_reason})"
            )
    console.print(f"outcomes → {result.rundir.outcomes}")


def register(app: typer.Typer) -> None:
    app.command("run")(run)
