"""``evalpipe plan CONFIG --mde X [--from RUN] [--write]``: what the sample can see and what a target needs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def plan(
    config: Annotated[Path, typer.Argument(help="Run config YAML")],
    mde: Annotated[
        float | None,
        typer.Option(
            "--mde",
            help="Target minimum detectable drop, in points (80 % power); without it only the "
            "gate's operating characteristic is printed.",
        ),
    ] = None,
    from_run: Annotated[
        Path | None,
        typer.Option("--from", help="A finished run (a variants root with compare.json, or a single run)."),
    ] = None,
    write: Annotated[
        bool, typer.Option("--write", help="Write the larger plans (samplers YAML) into --out.")
    ] = False,
    out: Annotated[Path, typer.Option("--out", help="Directory for --write.")] = Path("plans"),
    dataset_root: Annotated[
        Path | None, typer.Option("--dataset-root", help="Local mirror root for every benchmark.")
    ] = None,
) -> None:
    """Per benchmark and per pool: n now, the noise it assumes, the MDE now, the n a target MDE needs
    (reachable or not) and the cost of the current and the proposed design."""
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli.console import out as console
    from evalpipe.errors import ConfigError
    from evalpipe.plan.mde import plan_benchmark, plan_inputs, pool_input, write_plan
    from evalpipe.plan.operating import plan_numerics_lines, plan_operating_lines
    from evalpipe.report.plan import plan_lines
    from evalpipe.resolve import load_run

    if mde is not None and mde <= 0:
        raise ConfigError(f"--mde: must be a positive number of points, got {mde:g}")
    run = load_run(config)
    cfg = run.config
    inputs, manifest = plan_inputs(run, dataset_root, from_run)
    pools = [pool_input(name, members, inputs) for name, members in cfg.pools.items()]
    for block in [*inputs, *pools] if mde is not None else []:
        if isinstance(block, str):
            console.print(block, markup=False, soft_wrap=True)
            continue
        assert mde is not None
        result = plan_benchmark(cfg, block, manifest, mde, from_run, write)
        for line in plan_lines(result):
            console.print(line, markup=False, soft_wrap=True)
        if result.new_plan is not None:
            path = out / f"{block.benchmark}.yaml"
            path.parent.mkdir(parents=True, exist_ok=True)
            write_plan(result.new_plan, path)
            console.print(f"  plan → {path}", markup=False, soft_wrap=True)
    for line in [
        *plan_operating_lines(cfg, [*inputs, *pools], manifest, from_run),
        *plan_numerics_lines(cfg),
    ]:
        console.print(line, markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("plan")(plan)
