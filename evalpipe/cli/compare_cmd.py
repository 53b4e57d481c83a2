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
    margin: Annotated[
        float | None,
        typer.Option("--margin", help="Non-inferiority margin in points for every block (as the gate's)."),
    ] = None,
    sequential: Annotated[
        bool,
        typer.Option("--sequential", help="Also judge every block unit by unit (needs --margin)."),
    ] = False,
    alpha: Annotated[
        float,
        typer.Option("--alpha", help="The gate's one-sided error at the margin (split with --sequential)."),
    ] = 0.025,
    share: Annotated[
        float,
        typer.Option(
            "--sequential-share", help="Share of --alpha the e-processes spend (the rest: one fixed look)."
        ),
    ] = 0.5,
) -> None:
    """Refuse unless both runs used the same manifest and prompts; then paired statistics."""
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli.console import out as console
    from evalpipe.compare import Arms, GatePolicy, PairedDesign, compare_runs
    from evalpipe.config.models import SequentialConfig
    from evalpipe.errors import ConfigError
    from evalpipe.run.compare_files import write_compare
    from evalpipe.words.compare import paired_line, verdict_sentence
    from evalpipe.words.sentences import sequential_sentence

    if sequential and margin is None:
        raise ConfigError("--sequential judges against a margin: give --margin X")
    if margin is not None and margin < 0:
        raise ConfigError(f"--margin: must be >= 0 points, got {margin:g}")
    if not 0 < alpha < 0.5:
        raise ConfigError(f"--alpha: must lie in (0, 0.5), got {alpha:g}")
    if not 0 < share <= 1:
        raise ConfigError(f"--sequential-share: must lie in (0, 1], got {share:g}")
    gate = GatePolicy(
        margins=lambda _block: margin,
        alpha=alpha,
        sequential=SequentialConfig(alpha=alpha, sequential_share=share) if sequential else None,
    )
    result = compare_runs(PairedDesign(Arms(run_a, run_b, label_a, label_b), gate=gate))
    json_path, md_path = write_compare(result, out if out is not None else Path(run_a).resolve().parent)
    for b in [*result.benchmarks, *([result.overall] if result.overall else [])]:
        console.print(paired_line(b, result.label_a, result.label_b), soft_wrap=True)
        if b.non_inferiority is not None:
            console.print(
                f"  non-inferiority: {verdict_sentence(b.non_inferiority)}", markup=False, soft_wrap=True
            )
        if b.sequential is not None:
            console.print(f"  {sequential_sentence(b.sequential)}", markup=False, soft_wrap=True)
    console.print(f"compare.json → {json_path}\ncompare.md → {md_path}")


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
