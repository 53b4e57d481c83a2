"""Root CLI app; maps ``EvalpipeError`` to exit codes in one place.

Heavy imports (EvalScope, SGLang, pandas) happen inside command functions so ``--help`` is instant.
"""

from __future__ import annotations

import sys

import typer

from evalpipe.errors import EvalpipeError, ExitCode, RunStopped
from evalpipe.processes.signals import ctrl_c_interrupts

app = typer.Typer(
    name="evalpipe",
    help="Auditable accuracy sign-off for LLM serving releases.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,  # locals can hold API keys
)


def _register() -> None:
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli import compare_cmd, config_cmd, sample_cmd

    app.add_typer(config_cmd.app, name="config")
    sample_cmd.register(app)
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli import plan_cmd

    plan_cmd.register(app)
    # --- registration of later stages (one line each) ---
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli import server_cmd

    app.add_typer(server_cmd.app, name="server")
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli.run_cmd import register as register_run

    register_run(app)
    compare_cmd.register(app)
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli import speed_cmd

    speed_cmd.register(app)
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli import selftest_cmd

    selftest_cmd.register(app)
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli import replay_cmd

    replay_cmd.register(app)
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli.audit_cmd import register as register_audit

    register_audit(app)
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli import benchmarks_cmd

    benchmarks_cmd.register(app)
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli import explore_cmd

    explore_cmd.register(app)


_register()


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point: run the app, turn expected errors into one line + exit code."""
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.cli.console import err

    ctrl_c_interrupts()
    try:
        rv = app(args=argv, standalone_mode=False)
        if isinstance(rv, int) and rv != 0:  # typer.Exit(code) under standalone_mode=False
            sys.exit(rv)
    except RunStopped as exc:  # one line: what stopped the run, its directory, the resume command
        err.print(exc.resume_line(), markup=False, highlight=False, soft_wrap=True)
        for line in exc.details:
            err.print(f"  {line}", markup=False, soft_wrap=True)
        sys.exit(int(exc.exit_code))
    except EvalpipeError as exc:
        # import cost: rich only when the command runs
        from rich.markup import escape

        err.print(f"[bold red]error:[/] {escape(exc.message)}", markup=True, soft_wrap=True)
        for line in exc.details:
            err.print(f"  {line}", markup=False, soft_wrap=True)
        sys.exit(int(exc.exit_code))
    except KeyboardInterrupt as exc:
        err.print("interrupted")
        sys.exit(int(_interrupt_code(exc)))
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except SystemExit:
        raise
    except Exception as exc:  # usage errors arrive as click exceptions (typer >= 0.2x vendors its own click)
        # import cost: click only when the command runs
        import click

        if isinstance(exc, (click.exceptions.Abort, typer.Abort)):  # click's wrapping of a KeyboardInterrupt
            sys.exit(int(_interrupt_code(exc.__context__)))
        if isinstance(exc, (click.exceptions.ClickException, typer.TyperException)) and hasattr(exc, "show"):
            exc.show()  # "Usage: … Error: No such command 'x'." — one message, no traceback
            sys.exit(int(ExitCode.USAGE))
        raise
    return 0


def _interrupt_code(exc: BaseException | None) -> ExitCode:
    """130 for Ctrl-C, 143 for SIGTERM (``Terminated``)."""
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.processes.signals import Terminated

    return ExitCode.TERMINATED if isinstance(exc, Terminated) else ExitCode.INTERRUPTED


if __name__ == "__main__":  # the console script is ``cli.entry`` (``python -m evalpipe.cli.entry``)
    sys.exit(main())
