"""The runner: a plan's stages in order, resume and ``timings.json`` following from their declarations.

For each stage: on a resume, a stage whose :class:`~evalpipe.run.stages.base.Reuse` rule finds its outputs
complete is kept (it loads them, or says they were kept) instead of run; every other stage runs.  Either
way its wall time goes into ``timings.json`` under its name (a stage that times itself, ``wall_time``
False, adds its own entries), and a write the file system refuses inside it names the stage.

Once a stage has handed on the spine (or the caller gave one), the run directory is *opened*: torn last
records a crash left in its logs are cut (``run.torn_files``), and the EvalScope worker starts, so that its
EvalScope import overlaps the stages before its own.  From then on, Ctrl-C, SIGTERM and a full disk end the
run with the line that says how to resume it; the server is stopped and the worker ended on every path.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING

from evalpipe.artifacts.disk import stage as disk_stage
from evalpipe.artifacts.lock import hold_run_dir
from evalpipe.clock import utc_now
from evalpipe.errors import DiskFull, RunInterrupted, RunOutOfSpace
from evalpipe.evalscope_bridge.runner import WorkerProcess
from evalpipe.evalscope_bridge.task import check_generation
from evalpipe.processes.signals import Terminated
from evalpipe.run.options import SampledRun
from evalpipe.run.stage_clock import StageClock
from evalpipe.run.stages import declared_stages
from evalpipe.run.stages.base import AT, RunFile, Stage, file
from evalpipe.run.stages.state import RunState
from evalpipe.run.torn_files import repair_torn_files

if TYPE_CHECKING:
    from evalpipe.progress import ProgressDisplay
    from evalpipe.run.spec import RunSpec

#: The files of a run directory that no stage writes: the runner's own (the stages' wall times; the torn
#: records a resume cut before any stage appended; the lock it holds while it runs there).  Everything else in a run directory is some stage's.
RUNNER_FILES: tuple[RunFile, ...] = (
    file(AT.timings),
    file(AT.torn_repairs, only="a resume that found a torn last record"),
    file(AT.lock),
)


def execute(plan: RunSpec, progress: ProgressDisplay | None = None) -> RunState:
    """Run ``plan``'s stages (see the module docstring); ``timings.json`` is written once all have run."""
    upstream_path = plan.kind.upstream_path(plan.server)  # a bad endpoint URL: a usage error before any stage
    check_generation(plan.run)
    state = RunState(
        plan=plan,
        progress=progress,
        upstream_path=upstream_path,
        started_at=utc_now(),
        clock=StageClock(plan.target.variant),
    )
    if isinstance(plan.origin, SampledRun):
        state.spine = plan.origin.spine
        state.extension = plan.origin.extension
    with contextlib.ExitStack() as held:  # the run directory's lock, released once the worker has ended
        return _execute(state, held)


def _execute(state: RunState, held: contextlib.ExitStack) -> RunState:
    plan = state.plan
    opened = False
    try:
        with state.server_scope:  # the stop stage closes it; a failed run closes it on the way out
            for stage in declared_stages(plan):
                if not opened and state.has_spine:
                    opened = True
                    held.enter_context(hold_run_dir(state.rundir))
                    _open(state)
                _run_stage(stage, state)
        state.clock.write(state.rundir)
        return state
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated): say how to resume
        if not opened:
            raise
        raise RunInterrupted(str(state.rundir.root), terminated=isinstance(exc, Terminated)) from None
    except DiskFull as exc:  # every file is whole: --resume continues once there is space
        if not opened:
            raise
        raise RunOutOfSpace(exc.message, str(state.rundir.root)) from None
    finally:
        if state.worker is not None:
            state.worker.close()


def _open(state: RunState) -> None:
    rd = state.rundir
    if rd.requests_log.exists() or rd.evalscope_dir.exists():  # a resume (or a variant's)
        for line in repair_torn_files(rd):  # a crash mid-write: whole records only before appending
            state.notice(line)
    # the EvalScope worker starts now: its EvalScope import overlaps the stages up to its own, which hands
    # it its tasks; it is ended on every path (used or not)
    state.worker = WorkerProcess(rd)
    state.worker.spawn()


def _run_stage(stage: Stage, state: RunState) -> None:
    start = time.perf_counter()
    with disk_stage(stage.name):
        kept = state.resuming and stage.reuse is not None and stage.reuse.complete(state)
        if kept and stage.reuse is not None:
            stage.reuse.keep(state)
            state.kept.append(stage.name)
        else:
            stage.run(state)
    if kept or stage.wall_time:
        state.clock.add(stage.name, time.perf_counter() - start)
