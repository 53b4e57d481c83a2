"""The speed stage: the serving benchmark on the same launch, the server's own URL, no proxy inside the
latencies (``speed:``; ``evalpipe.speed.stage``).

A run measures its own speed (:func:`own_speed`), unless it is a variant of ``parallel_variants`` whose
speed rounds the parent runs alternating across the variants' servers (:func:`speed_at_barrier`: this
server waits, up, at the barrier).  A resume keeps a ``speed.json`` that already holds every round of this
config.  Only runs with ``speed:`` build these stages, so only they import the speed modules (~0.3 s).
"""

from __future__ import annotations

from evalpipe.run.stages.base import AT, Reuse, Stage, file, tree
from evalpipe.run.stages.state import RunState
from evalpipe.server.lifecycle import watch_server

SETUP_ERROR = "the benchmark could not run: why, in one line"


def own_speed() -> Stage:
    """The benchmark run by this run, after its evaluation, before its server stops."""
    return Stage(
        name="speed",
        inputs=(),
        outputs=(file(AT.speed_json), tree(AT.speed_dir), file(AT.speed_error, only=SETUP_ERROR)),
        run=_measure,
        reuse=Reuse(complete=_measured, keep=_kept),
    )


def speed_at_barrier() -> Stage:
    """The parent's alternating rounds on this variant's server: timed as the wait and the measurement."""
    return Stage(
        name="speed",
        inputs=(),
        outputs=(file(AT.speed_json), tree(AT.speed_dir), file(AT.speed_error, only=SETUP_ERROR)),
        run=_wait_at_barrier,
        wall_time=False,
    )


def _measure(state: RunState) -> None:
    # import cost: only runs with ``speed:`` import the speed stage (9 modules), loaded on this path only
    from evalpipe.speed.run import SpeedRequest, SpeedTarget
    from evalpipe.speed.stage import run_speed_stage

    cfg, rd, handle = state.cfg, state.rundir, state.handle
    if cfg.speed is None:
        raise RuntimeError("the speed stage is planned only for a config with a speed: section")
    with watch_server(handle, rd):
        run_speed_stage(
            SpeedTarget(state.variant or "default", handle.base_url, rd.root, api_key=handle.api_key),
            SpeedRequest(
                cfg.speed,
                cfg.model.served_name,
                base_dir=cfg.base_dir(),
                client_env=state.server.env,
                progress=state.say(),
            ),
        )


def _measured(state: RunState) -> bool:
    # import cost: only runs with ``speed:`` import the speed stage (9 modules), loaded on this path only
    from evalpipe.speed.stage import already_measured

    speed = state.cfg.speed
    return speed is not None and already_measured(state.rundir.root, speed)


def _kept(state: RunState) -> None:
    state.say()(f"{state.variant or 'default'}: speed.json already holds every round (kept)")


def _wait_at_barrier(state: RunState) -> None:
    parent = state.plan.coordination.parent_speed
    barrier = parent.barrier if parent is not None else None
    if barrier is None:
        raise RuntimeError("the barrier's speed stage is planned only for a variant given a barrier")
    rd, handle = state.rundir, state.handle
    with watch_server(handle, rd, during="the wait for the speed rounds"):
        barrier.arrive(handle.base_url)
        waited, measured = barrier.wait(rd.root, state.say())
    state.clock.add("speed_wait", waited)
    state.clock.add("speed", measured)
