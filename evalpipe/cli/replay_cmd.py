"""``evalpipe publish``, ``evalpipe replay``, ``evalpipe reproduce`` — reviewer reproduction."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalpipe.errors import ExitCode

if TYPE_CHECKING:
    from evalpipe.replay.replay import ReplayResult

DatasetRoot = Annotated[
    Path | None,
    typer.Option("--dataset-root", help="Local mirror root (default: the locations recorded in run.json)."),
]


def publish(
    run_dir: Annotated[Path, typer.Argument(help="Audited run directory")],
    bundle_dir: Annotated[Path, typer.Argument(help="New bundle directory, e.g. audits/bundles/<name>/")],
    max_mb: Annotated[float, typer.Option("--max-mb", help="Size cap of the bundle")] = 20.0,
) -> None:
    """Write a small committable sign-off bundle (claim, spine, provenance, replayable response log)."""
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli.console import out
    from evalpipe.replay.publish import publish as do_publish

    index = do_publish(run_dir, bundle_dir, cap_bytes=int(max_mb * 1024 * 1024))
    for f in index.files:
        out.print(f"  {f.path:32} {f.bytes:>10,} B", markup=False)
    out.print(
        f"bundle {bundle_dir}: {len(index.files)} files, {index.total_bytes / 1e6:.2f} MB "
        f"(cap {index.cap_bytes / 1e6:.1f} MB), {index.responses} recorded responses"
    )


def _show_replay(result: ReplayResult) -> None:
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli.console import out

    for p in result.bundle_problems:
        out.print(f"[yellow]bundle:[/] {p}", soft_wrap=True)
    if result.identical:
        out.print(f"identical: every per-sample score and the summary scores match ({result.rundir.root})")
        return
    out.print(
        f"[bold red]DIFFERENT[/]: {len(result.differences)} difference(s) (replay in {result.rundir.root})"
    )
    for d in result.differences:
        out.print(f"  {d}", markup=False, soft_wrap=True)


def replay(
    source: Annotated[Path, typer.Argument(help="Bundle or run directory")],
    dataset_root: DatasetRoot = None,
    out: Annotated[Path | None, typer.Option("--out", help="Where the replay run goes")] = None,
) -> None:
    """Serve the recorded responses, re-score with EvalScope, re-audit; exit 0 if identical, 1 if not."""
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli.run_cmd import _progress
    from evalpipe.replay.replay import replay as do_replay

    with _progress() as progress:
        result = do_replay(source, dataset_root=dataset_root, out=out, progress=progress)
    _show_replay(result)
    if not result.identical:
        raise typer.Exit(int(ExitCode.GATE_FAILED))


def reproduce(
    bundle: Annotated[Path, typer.Argument(help="Bundle directory")],
    dataset_root: DatasetRoot = None,
    out: Annotated[Path | None, typer.Option("--out", help="Where the replay run goes")] = None,
) -> None:
    """verify-sample (the ids and record hashes re-derive from the datasets) + replay: one verdict."""
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli.console import out as console
    from evalpipe.cli.run_cmd import _progress
    from evalpipe.replay.replay import replay as do_replay
    from evalpipe.samplers import verify_sample

    vr = verify_sample(bundle, dataset_root=dataset_root)
    if vr.identical:
        console.print(f"sample: identical ({len(vr.manifest.entries)} entries re-derived from the datasets)")
    else:
        console.print(f"[bold red]sample DIFFERENT[/]: {len(vr.differences)} difference(s)")
        for d in vr.differences:
            console.print(f"  {d}", markup=False, soft_wrap=True)
    if not vr.identical:  # replaying against records that differ from the manifest proves nothing
        console.print("replay skipped: the datasets do not re-derive the bundle's sample")
        console.print("[bold red]NOT REPRODUCED[/]")
        raise typer.Exit(int(ExitCode.GATE_FAILED))
    with _progress() as progress:
        result = do_replay(bundle, dataset_root=dataset_root, out=out, progress=progress)
    _show_replay(result)
    ok = result.identical
    console.print("[bold green]REPRODUCED[/]" if ok else "[bold red]NOT REPRODUCED[/]")
    if not ok:
        raise typer.Exit(int(ExitCode.GATE_FAILED))


def register(app: typer.Typer) -> None:
    app.command("publish")(publish)
    app.command("replay")(replay)
    app.command("reproduce")(reproduce)
