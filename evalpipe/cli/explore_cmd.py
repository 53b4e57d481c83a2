"""``evalpipe explore RUN [--out FILE]``: rebuild ``explorer.html`` (RUN's own, or FILE: then nothing is written
into RUN, which may be a read-only copy) and print its path.

RUN is a run directory (its own samples, failures first) or a paired run's root holding ``compare.json``
(both arms side by side, flips first).  Exit codes: 0 written, 2 not a run directory, unreadable or unwritable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def explore(
    run: Annotated[Path, typer.Argument(help="Run directory, or a paired run's root (holds compare.json)")],
    out_file: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Write the page here instead of RUN/explorer.html: nothing is written into RUN."
        ),
    ] = None,
    max_mb: Annotated[
        float,
        typer.Option("--max-mb", help="Size limit of the page; long texts of unflipped samples are cut."),
    ] = 20.0,
) -> None:
    """Rebuild RUN/explorer.html, or write --out FILE (every sample; a paired root: flips first); print its path."""
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
    if out_file is not None and (out_file.is_dir() or not out_file.parent.is_dir()):
        raise ConfigError(f"--out {out_file}: give a file in an existing directory")
    try:
        if rd.compare_json.is_file() and not rd.outcomes.is_file():  # a paired root also holds the manifest
            comparison = read_model(rd.compare_json, CompareResult)
            built = build_paired_explorer(comparison, rd.root, limit_bytes=limit, page=out_file)
        elif rd.manifest.is_file():
            built = build_run_explorer(rd.root, limit_bytes=limit, page=out_file)
        else:
            raise ArtifactError(
                f"{rd.root}: neither a run directory (manifest.json) nor a paired root (compare.json)"
            )
    except PermissionError as exc:
        raise ConfigError(
            f"{exc.filename}: not writable; give --out FILE (nothing is then written into RUN)"
        ) from None
    rec = built.record
    note = f"{rec.truncated} truncated ({rec.tier})" if rec.truncated else "nothing truncated"
    out.print(f"{rec.samples} samples, {fmt_bytes(rec.bytes)}, {note}", markup=False, highlight=False)
    print(built.path)


def register(app: typer.Typer) -> None:
    app.command("explore")(explore)
