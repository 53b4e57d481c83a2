"""``evalpipe sample`` and ``evalpipe verify-sample``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalpipe.errors import ExitCode

DatasetRoot = Annotated[
    Path | None,
    typer.Option(
        "--dataset-root", help="Local mirror root for every benchmark (layout of ../shared/datasets)."
    ),
]


def sample(
    config: Annotated[Path, typer.Argument(help="Run config YAML")],
    dataset_root: DatasetRoot = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Run directory (default: output_root/<name>-<time>)")
    ] = None,
    allow_dataset_drift: Annotated[
        bool,
        typer.Option("--allow-dataset-drift", help="Run even if a pinned fingerprint differs (recorded)."),
    ] = False,
) -> None:
    """Load the datasets, select the samples, write manifest.json and sampled_ids.csv."""
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli.console import out as console
    from evalpipe.resolve import load_run
    from evalpipe.samplers import sample_run
    from evalpipe.samplers.run import without_missing_mirrors
    from evalpipe.samplers.table import sampling_table

    cfg = load_run(config).config
    if dataset_root is not None:  # sample what the mirror holds; name what needs the hub
        cfg, missing = without_missing_mirrors(cfg, dataset_root)
        for line in missing:
            console.print(f"[yellow]note:[/] {line}", soft_wrap=True)
    result = sample_run(cfg, dataset_root=dataset_root, out=out, allow_drift=allow_dataset_drift)
    console.print(sampling_table(result.manifest))
    console.print(f"{len(result.manifest.entries)} samples → {result.rundir.manifest}")
    console.print(f"sampled ids → {result.rundir.sampled_ids}")


def verify(
    run_dir: Annotated[Path, typer.Argument(help="Run directory holding manifest.json")],
    dataset_root: DatasetRoot = None,
    sample: Annotated[
        str | None,
        typer.Option(
            "--sample",
            help="BENCHMARK/SOURCE_ID: also say what became of this entry (the explorer's reproduction strip).",
        ),
    ] = None,
) -> None:
    """Re-derive the selection from the datasets; exit 0 when identical, 1 with a diff otherwise."""
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.artifacts import RunDir, read_model
    from evalpipe.artifacts.schema.manifest import Manifest
    from evalpipe.cli.console import out as console
    from evalpipe.errors import ConfigError
    from evalpipe.samplers import verify_sample
    from evalpipe.samplers.run import sample_verdict

    recorded = read_model(RunDir(run_dir).manifest, Manifest)
    key = None
    if sample is not None:
        benchmark, _, source_id = sample.partition("/")
        if not any((e.benchmark, e.source_id) == (benchmark, source_id) for e in recorded.entries):
            raise ConfigError(f"--sample {sample}: not a sample of {run_dir} (give BENCHMARK/SOURCE_ID)")
        key = (benchmark, source_id)
    result = verify_sample(run_dir, dataset_root=dataset_root)
    sample_ok = True
    if key is not None:
        sample_ok, line = sample_verdict(recorded, result.manifest, *key)
        console.print(line, markup=False, soft_wrap=True)
    if result.identical and sample_ok:
        generated = sum(e.generated is not None for e in recorded.entries)
        also = (
            f"; {generated} generated items regenerated from their recorded parameters" if generated else ""
        )
        console.print(f"identical: {len(result.manifest.entries)} entries re-derived from the datasets{also}")
        return
    console.print(f"[bold red]DIFFERENT[/]: {len(result.differences)} difference(s)")
    for line in result.differences:
        console.print(f"  {line}", markup=False, soft_wrap=True)
    raise typer.Exit(int(ExitCode.GATE_FAILED))


def register(app: typer.Typer) -> None:
    app.command("sample")(sample)
    app.command("verify-sample")(verify)
