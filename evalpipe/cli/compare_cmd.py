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
    aa: Annotated[
        Path | None,
        typer.Option(
            "--aa",
            help="A/A arm: a repeat run (repeat_of) on the same manifest, its noise beside the A/B (the MDE and "
            "the operating characteristic at its discordance); it repeats RUN_A when its recorded repeat_of names "
            "RUN_A's variant, else RUN_B.",
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="Judge every block as this run config does (e.g. the paired run's config.yaml): its gates' "
            "margins and must-catch drops, generation.sequential (its pilot included: the attempts it chose are "
            "in the arms' outcomes), pools and design:. Not with --margin, --sequential, --alpha or "
            "--sequential-share.",
        ),
    ] = None,
    margin: Annotated[
        float | None,
        typer.Option("--margin", help="Non-inferiority margin in points for every block (as the gate's)."),
    ] = None,
    sequential: Annotated[
        bool,
        typer.Option("--sequential", help="Also judge every block unit by unit (needs --margin)."),
    ] = False,
    alpha: Annotated[
        float | None,
        typer.Option(
            "--alpha",
            help="The gate's one-sided error at the margin (split with --sequential). [default: 0.025]",
        ),
    ] = None,
    share: Annotated[
        float | None,
        typer.Option(
            "--sequential-share",
            help="Share of --alpha the e-processes spend (the rest: one fixed look). [default: 0.5]",
        ),
    ] = None,
) -> None:
    """Refuse unless both runs used the same manifest and prompts; then paired statistics."""
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli.console import out as console
    from evalpipe.compare import Arms, PairedDesign, compare_runs
    from evalpipe.compare.asked import aa_pair_beside, gate_policy, with_numerics
    from evalpipe.run.compare_files import write_compare
    from evalpipe.words.compare import paired_line, verdict_sentence
    from evalpipe.words.sentences import sequential_sentence

    gate = gate_policy(config, margin, sequential, alpha, share)
    arms = Arms(run_a, run_b, label_a, label_b)
    aa_pair = aa_pair_beside(aa, arms) if aa is not None else None
    result = with_numerics(compare_runs(PairedDesign(arms, aa=aa_pair, gate=gate)), config)
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
