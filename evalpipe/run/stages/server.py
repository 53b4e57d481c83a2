"""The server's stages: launch (or attach to) it and verify its resolved ``/server_info``; stop it.

The server stays up from the launch stage to the stop stage (``RunState.server_scope``): the materialize
stage (which reads the context the server resolved), the evaluation and the speed benchmark run on it in
between.
"""

from __future__ import annotations

from evalpipe.run.stages.base import AT, Stage, file, tree
from evalpipe.run.stages.state import RunState
from evalpipe.server.lifecycle import managed_server

LAUNCHED = "a launched server process (not an attachment)"
ROUTER = "a fleet of workers behind a router"


def _launch(state: RunState) -> None:
    state.handle = state.server_scope.enter_context(
        managed_server(state.cfg, state.server, state.rundir, variant=state.variant, kind=state.kind)
    )


LAUNCH = Stage(
    name="launch",
    inputs=(file(AT.manifest),),
    outputs=(
        file(AT.server_launch),
        file(AT.server_verification),
        file(AT.server_log, only=LAUNCHED),
        file(AT.server_info, only="a server that serves /server_info"),
        file(AT.model_info, only="a server that serves /model_info"),
        file(AT.fleet_json, only=ROUTER),
        tree(AT.worker_files("*").dir, only=ROUTER),
    ),
    run=_launch,
)


def _stop(state: RunState) -> None:
    state.server_scope.close()


STOP = Stage(
    name="stop",
    inputs=(),
    outputs=(
        file(AT.server_launch, only=LAUNCHED),
        file(AT.fleet_json, only=ROUTER),
        tree(AT.worker_files("*").dir, only=ROUTER),
    ),
    run=_stop,
)
