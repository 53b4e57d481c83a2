"""``evalpipe explore RUN``: rebuild ``explorer.html`` and print its path.

RUN is a run directory (its own samples, failures first) or a paired run's root holding ``compare.json``
(both arms side by side, flips first).  Exit codes: 0 written, 2 not a run directory or unreadable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def explore(
    run: Annotated[Path, typer.Argument(help="Run directory, or a paired run's root (holds compare.json)")],
    max_mb: Annotated[
        float,
        typer.Option("--max-mb", help="Size limit of the page; long texts of unflipped samples are cut."),
    ] = 20.0,
) -> None:
    """Rebuild RUN/explorer.html (every sample; a paired root: flips first) and print its path."""
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.artifacts import RunDir, read_model
    from evalpipe.artifacts.schema.compare import CompareResult
    from evalpipe.cli.console import out
    from evalpipe.errors import ArtifactError, ConfigError
    from evalpipe.explore import build_paired_explorer, build_run_explorer
    from evalpipe.words.numbers import fmt_bytes

    if max_mb <= 0:
        raise ConfigError(f"--max-mb: must be > 0, got {max_mb:g}")
    rd = RunDir(run)
    limit = int(max_mb * 1_000_000)
    if rd.compare_json.is_file() and not rd.outcomes.is_file():  # a paired root also holds the manifest
        built = build_paired_explorer(read_model(rd.compare_json, CompareResult), rd.root, limit_bytes=limit)
    elif rd.manifest.is_file():
        built = build_run_explorer(rd.root, limit_bytes=limit)
    else:
        raise ArtifactError(
            f"{rd.root}: neither a run directory (manifest.json) nor a paired root (compare.json)"
        )
    rec = built.record
    note = f"{rec.truncated} truncated ({rec.tier})" if rec.truncated else "nothing truncated"
    out.print(f"{rec.samples} samples, {fmt_bytes(rec.bytes)}, {note}", markup=False, highlight=False)
    print(built.path)


def register(app: typer.Typer) -> None:
    app.command("explore")(explore)
