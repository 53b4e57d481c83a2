"""``evalpipe config validate|schema``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="Validate run configs; print the config JSON Schema.", no_args_is_help=True)


@app.command("validate")
def validate(config: Annotated[Path, typer.Argument(help="Run config YAML")]) -> None:
    """Validate a run config and every sampling rule it references (exit 0, or 2 with every error)."""
    # import cost: the command's modules (~243) load when it runs; `evalpipe --help` stays light
    from evalpipe.cli.console import out
    from evalpipe.resolve import load_run
    from evalpipe.server.chat_template import thinking_kwargs

    cfg = load_run(config).config
    thinking_kwargs(cfg)  # model.thinking needs a reasoning parser with a known toggle
    out.print(
        f"{config}: valid ({len(cfg.benchmarks)} benchmarks: {', '.join(b.name for b in cfg.benchmarks)})"
    )


@app.command("schema")
def schema() -> None:
    """Print the run-config JSON Schema (committed as audits/config.schema.json)."""
    # import cost: the command's modules (~208) load when it runs; `evalpipe --help` stays light
    from evalpipe.resolve.published import config_schema

    typer.echo(json.dumps(config_schema(), indent=2, ensure_ascii=False))
