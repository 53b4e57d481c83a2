"""The server's stages: launch (or attach to) it and verify its resolved ``/server_info``; stop it.

The server stays up from the launch stage to the stop stage (``RunState.server_scope``): the evaluation and
the speed benchmark run on it in between.  Lengths beyond the context the server resolved are dropped
before anything is sent (kv_probe: ``run.context_fit.cap_to_served_context``) and the records
re-materialized, so the launch stage may rewrite the materialize stage's files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalpipe.artifacts import RunDir, write_model
from evalpipe.evalscope_bridge.extend import seed_from_run
from evalpipe.evalscope_bridge.materialize import materialize
from evalpipe.run.context_fit import cap_to_served_context, dropped_entries
from evalpipe.run.stages.base import AT, Stage, file, tree
from evalpipe.run.stages.preparation import EXTEND_ONLY
from evalpipe.run.stages.state import RunState
from evalpipe.server.lifecycle import managed_server

SHORTER_CONTEXT = "the server resolved a shorter context than the config's: the records beyond it are dropped"
LAUNCHED = "a launched server process (not an attachment)"
ROUTER = "a fleet of workers behind a router"


def _launch(state: RunState) -> None:
    cfg, spine, rd = state.cfg, state.spine, state.rundir
    state.handle = state.server_scope.enter_context(
        managed_server(cfg, state.server, rd, variant=state.variant)
    )
    fit = state.fit
    capped = cap_to_served_context(fit, spine.manifest, spine.datasets, _served_info(rd), cfg.max_tokens_for)
    if capped is None:
        return
    for line in capped.served_drops[len(fit.served_drops) :]:
        state.notice(line)
    state.fit = capped
    write_model(rd.context_fit, capped)
    state.index_map = materialize(rd, spine.manifest, spine.datasets, cfg, skip=dropped_entries(capped, cfg))
    if state.extension is not None:
        seed_from_run(state.extension.old, rd, state.index_map, cfg.generation.repeats)


def _served_info(rd: RunDir) -> dict[str, Any] | None:
    """The server's saved ``/server_info``; behind a router, the worker resolving the least context (every
    request may land on any of them)."""
    from evalpipe.server.served_context import served_context

    def read(path: Path) -> object:
        return json.loads(path.read_text(encoding="utf-8"))

    if rd.server_info.is_file():
        info = read(rd.server_info)
        return info if isinstance(info, dict) else None
    workers = [read(w.server_info) for w in rd.workers() if w.server_info.is_file()]
    sized = [(c[0], w) for w in workers if isinstance(w, dict) and (c := served_context(w)) is not None]
    return min(sized, key=lambda t: t[0])[1] if sized else None


LAUNCH = Stage(
    name="launch",
    inputs=(file(AT.manifest), file(AT.context_fit)),
    outputs=(
        file(AT.server_launch),
        file(AT.server_verification),
        file(AT.server_log, only=LAUNCHED),
        file(AT.server_info, only="a server that serves /server_info"),
        file(AT.model_info, only="a server that serves /model_info"),
        file(AT.fleet_json, only=ROUTER),
        tree(AT.worker_files("*").dir, only=ROUTER),
        file(AT.context_fit, only=SHORTER_CONTEXT),
        tree(AT.datasets_dir, only=SHORTER_CONTEXT),
        file(AT.index_map, only=SHORTER_CONTEXT),
        tree(AT.evalscope_dir, only=f"{SHORTER_CONTEXT}, after {EXTEND_ONLY}"),
        file(AT.requests_log, only=f"{SHORTER_CONTEXT}, after {EXTEND_ONLY}"),
        file(AT.responses_log, only=f"{SHORTER_CONTEXT}, after {EXTEND_ONLY}"),
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
