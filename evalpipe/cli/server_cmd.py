"""``evalpipe server command|preflight`` — inspect a launch without spending GPU time."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from evalpipe.artifacts.schema.server import PreflightReport

app = typer.Typer(
    help="Show the exact server launch command; run the preflight checks.", no_args_is_help=True
)

ConfigArg = Annotated[Path, typer.Argument(help="Run config YAML")]
VariantOpt = Annotated[str | None, typer.Option("--variant", help="Apply this named server variant")]


def shell_line(argv: list[str]) -> str:
    """One shell-quoted line; an unresolved API key placeholder stays a ``"$VAR"`` expansion."""
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.server.launch_env import API_KEY_PLACEHOLDER_PREFIX

    parts = []
    for i, arg in enumerate(argv):
        is_key = i > 0 and argv[i - 1] == "--api-key" and arg.startswith(API_KEY_PLACEHOLDER_PREFIX)
        parts.append(f'"{arg}"' if is_key else shlex.quote(arg))
    return " ".join(parts)


@app.command("command")
def command(config: ConfigArg, variant: VariantOpt = None) -> None:
    """Print the exact server argv as one shell-quoted line (nothing is launched).

    A router fleet prints each launched worker's argv first, each after a ``# worker N`` line.  The API key
    is printed as a reference to its environment variable, never as its value.
    """
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli.console import err
    from evalpipe.resolve import load_run
    from evalpipe.server.launch_env import server_env
    from evalpipe.server.variants import effective_server

    resolved = load_run(config, check_sampling=False)
    cfg = resolved.config
    server = effective_server(cfg, variant)
    kind = resolved.kinds[server.kind]
    version = kind.engine_version(server_env(server)) if kind.launches_process else None
    note = kind.launch_note(server, version)
    if note:
        err.print(note, markup=False, soft_wrap=True)
    for what, argv in kind.member_argvs(cfg, server):  # a fleet's workers, launched before it
        typer.echo(f"# {what}")
        if argv:
            typer.echo(shell_line(argv))
    if kind.member_argvs(cfg, server):
        typer.echo(f"# {kind.name}")
    if kind.launches_process:
        typer.echo(shell_line(kind.argv(cfg, server, engine_version=version, resolve_secrets=False)))


@app.command("preflight")
def preflight(config: ConfigArg, variant: VariantOpt = None) -> None:
    """Run the preflight rules alone (exit 2 naming the flag on the first failure; warnings shown)."""
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli.console import err, out
    from evalpipe.resolve import load_run
    from evalpipe.server.preflight import PreflightRefused, preflight_for

    run = load_run(config, check_sampling=False)
    needing = [spec.meta.display_name for spec in run.benchmarks.values() if spec.meta.nltk_module]
    try:
        report = preflight_for(run.config, variant, kinds=run.kinds, punkt_needed=", ".join(needing) or None)
    except PreflightRefused as exc:
        _print_checks(exc.report, out)
        raise
    _print_checks(report, out)
    for w in report.warnings:
        err.print(f"[bold yellow]warning:[/] {w.message}", markup=True, soft_wrap=True)
    out.print(f"preflight ok ({len(report.checks)} checks, {len(report.warnings)} warning(s))")


def _print_checks(report: PreflightReport, console: Console) -> None:
    marks = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL", "skipped": "skip"}
    for c in report.checks:
        console.print(f"  {marks[c.status]}  {c.rule}: {c.message}", markup=False, soft_wrap=True)
