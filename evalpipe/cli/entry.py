"""The ``evalpipe`` console script: ``entry`` runs the CLI (``cli.main``) and ends the process fast.

Kept apart from ``cli.main`` so that, for ``evalpipe run``, the EvalScope worker starts before typer, rich and
the commands are imported (``evalscope_bridge.prestart``): this module imports the standard library only
until then.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import NoReturn


def _runs_evalscope(args: list[str]) -> bool:
    """``evalpipe run …`` (not its ``--help``): the one command whose EvalScope worker is worth starting before
    the command line is even parsed."""
    return bool(args) and args[0] == "run" and not {"--help", "-h"} & set(args)


def entry() -> NoReturn:
    """The ``evalpipe`` console script (and ``python -m evalpipe.cli.entry``): ``main``, then the process ends
    without the interpreter's teardown.

    ``evalpipe run`` first starts its EvalScope worker (``evalscope_bridge.prestart``): its import (~1.5-2 s)
    then overlaps everything the run does before its EvalScope stage; a run that never reaches that stage ends
    it on the way out.

    When ``main`` returns or exits, every artifact is written (atomic writes, fsync), every child process group
    stopped and every thread joined.  What would remain is Python tearing down the ~2,000 modules a run imports
    (EvalScope's scoring stack, pandas, scipy): 0.3-0.4 s per ``evalpipe run``, about 2 % of a short
    evaluation (``perf/bench_overhead.py``).  So the exit handlers run, the standard streams are flushed, and
    ``os._exit`` ends the process with the same code.  An uncaught exception (a bug) takes the normal path,
    traceback included; a non-numeric ``SystemExit`` too."""
    prestarted = _runs_evalscope(sys.argv[1:])
    if prestarted:
        # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
        from evalpipe.evalscope_bridge.prestart import prestart

        prestart()
    try:
        # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
        from evalpipe.cli.main import main

        code: str | int | None = main()
    except SystemExit as exc:
        code = exc.code
    finally:
        if prestarted:
            # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
            from evalpipe.evalscope_bridge.prestart import discard_prestarted

            discard_prestarted()
    if isinstance(code, str):
        sys.exit(code)  # a message: Python prints it and exits 1, as it would have
    status = code or 0
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`evalpipe … | head`): nothing more can reach it
            status = status or 1
    os._exit(status)


if __name__ == "__main__":
    entry()
