"""``evalpipe plan CONFIG [--detail] [--json] [--mde X] [--from RUN] [--write]``: the design the config runs and
what it buys first; the alternatives, what a target needs and what would reach it behind ``--detail``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalpipe.errors import ConfigError

if TYPE_CHECKING:
    from evalpipe.artifacts.schema.manifest import Manifest
    from evalpipe.config.models import RunConfig
    from evalpipe.plan.inputs import PlanInput


def plan(
    config: Annotated[Path, typer.Argument(help="Run config YAML")],
    detail: Annotated[
        bool,
        typer.Option(
            "--detail",
            help="Also every alternative design (fixed, sequential, the pilot) under every discordance, the "
            "sign-off of each and what would reach P(pass | no regression) 0.95.",
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print everything --detail computes as one JSON object instead.")
    ] = False,
    mde: Annotated[
        float | None,
        typer.Option(
            "--mde",
            help="Target minimum detectable drop, in points (80 % power): per benchmark the n it needs.",
        ),
    ] = None,
    from_run: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="A finished run (a variants root with compare.json, or a single run): its measured noise, "
            "tokens and (with a speed stage) GPU-hours.",
        ),
    ] = None,
    write: Annotated[
        bool, typer.Option("--write", help="Write the larger plans (samplers YAML) into --out.")
    ] = False,
    out: Annotated[Path, typer.Option("--out", help="Directory for --write.")] = Path("plans"),
    dataset_root: Annotated[
        Path | None, typer.Option("--dataset-root", help="Local mirror root for every benchmark.")
    ] = None,
) -> None:
    """The design the config runs: per gated block and for the sign-off, P(pass | no regression), P(pass | the
    must-catch drop), expected tokens and (with --from RUN) GPU-hours; --mde X adds per benchmark the n a target
    needs."""
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli.console import out as console
    from evalpipe.plan.inputs import plan_inputs, pool_input
    from evalpipe.plan.operating import gated_blocks, gated_names, operating_lines, plan_numerics_lines
    from evalpipe.report.plan_screen import design_lines, plan_json
    from evalpipe.resolve import load_run

    if mde is not None and mde <= 0:
        raise ConfigError(f"--mde: must be a positive number of points, got {mde:g}")
    if as_json and (mde is not None or write):
        raise ConfigError("--json prints the gated designs: give --mde and --write without it")
    run = load_run(config)
    cfg = run.config
    quick = not (detail or as_json or mde is not None)
    inputs, manifest = plan_inputs(run, dataset_root, from_run, only=gated_names(cfg) if quick else None)
    pools = [pool_input(name, members, inputs) for name, members in cfg.pools.items()]
    gated = gated_blocks(cfg, [*inputs, *pools], manifest, from_run)
    if as_json:
        not_planned = [x for x in [*inputs, *pools] if isinstance(x, str)]
        typer.echo(plan_json(cfg, gated, not_planned))
        return
    lines = _mde_lines(cfg, [*inputs, *pools], manifest, mde, from_run, write, out) if mde is not None else []
    lines += (
        design_lines(cfg, gated)
        if gated
        else [
            f"{cfg.name}: no block is gated (gates.non_inferiority_margin_pts); --mde X: the n a target MDE needs"
        ]
    )
    lines += plan_numerics_lines(cfg)
    if detail:
        lines += operating_lines(cfg, gated)
    for line in lines:
        console.print(line, markup=False, soft_wrap=True)


def _mde_lines(
    cfg: RunConfig,
    blocks: list[PlanInput | str],
    manifest: Manifest | None,
    mde: float,
    from_run: Path | None,
    write: bool,
    out: Path,
) -> list[str]:
    """``--mde``: per benchmark and pool the n the target needs (``--write``: its larger plan into ``out``)."""
    # import cost: plan.mde (statsmodels, scipy.stats), only with --mde
    from evalpipe.plan.mde import plan_benchmark, write_plan
    from evalpipe.report.plan import plan_lines

    lines: list[str] = []
    for block in blocks:
        if isinstance(block, str):
            lines.append(block)
            continue
        result = plan_benchmark(cfg, block, manifest, mde, from_run, write)
        lines += plan_lines(result)
        if result.new_plan is not None:
            path = out / f"{block.benchmark}.yaml"
            path.parent.mkdir(parents=True, exist_ok=True)
            write_plan(result.new_plan, path)
            lines.append(f"  plan → {path}")
    return lines


def register(app: typer.Typer) -> None:
    app.command("plan")(plan)
