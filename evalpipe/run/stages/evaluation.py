"""The EvalScope stage: every benchmark through the recording proxy, on the launched (or attached) server.

The proxy is the run's one admission point: never more than ``generation.concurrency`` attempts at the
server, whichever benchmark sends them; ``request_timeout_s`` counts server time only.  EvalScope runs in
the worker the runner started when the spine was known (its import overlaps the stages before this one).
On a resume the stage runs again: every cached row is identity-checked against its manifest entry and only
what is missing or moved is asked again (``evalpipe.evalscope_bridge.stage``).  With an internal pilot the
paired run's parent copies ``pilot.json`` in between a variant's two passes (``evalpipe.run.pilot``): no
stage writes it, so it is no stage's input; this stage (which attempts to send) and the outcomes (which
attempts a unit has) read it when it is there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalpipe.artifacts.schema.evalscope import IndexMap
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.config.models import RunConfig
from evalpipe.evalscope_bridge.stage import run_evalscope
from evalpipe.recording.proxy import Forwarding, recording_proxy
from evalpipe.run.pilot import arm_decision
from evalpipe.run.sequential_stop import SequentialArm, SequentialStopper, dropped_entries
from evalpipe.run.stages.base import AT, Stage, file, tree
from evalpipe.run.stages.state import RunState
from evalpipe.server.lifecycle import watch_server

if TYPE_CHECKING:
    from evalpipe.server.kinds.base import ServerHandle


def _evalscope(state: RunState) -> None:
    cfg, rd, handle = state.cfg, state.rundir, state.handle
    if state.worker is None:
        raise RuntimeError("the EvalScope worker: started when the spine is known, before any stage after it")
    arm = state.plan.coordination.sequential_arm
    with recording_proxy(
        handle.base_url,
        rd,
        api_key=handle.api_key,  # the EvalScope worker holds no key
        forwarding=Forwarding(
            concurrency=cfg.generation.concurrency,
            upstream_timeout_s=cfg.generation.request_timeout_s,
            resend_failed=_fleet_resends(handle),
            resend_delay_s=_fleet_watch_interval(handle),
        ),
    ) as proxy:
        api_url = proxy.base_url.rstrip("/") + state.upstream_path
        with watch_server(handle, rd, proxy=proxy):
            state.evalscope = run_evalscope(
                state.plan.run,
                rd,
                state.index_map,
                api_url=api_url,
                resume=state.resuming,
                progress=state.progress,
                extending=state.extension is not None,
                worker=state.worker,
                stopper=_stopper(arm, cfg, state, state.spine.manifest, state.index_map)
                if arm is not None
                else None,
            )
        proxy.flush()


def _stopper(
    arm: SequentialArm, cfg: RunConfig, state: RunState, manifest: Manifest, index_map: IndexMap
) -> SequentialStopper:
    """This arm's stopper over the manifest's order: earlier generations first after ``--extend``
    (extension.json), entries the context fit dropped in their places as units without an answer."""
    # import cost: the sampler's thread pool stays out of the pipeline's import
    from evalpipe.samplers.extend import entry_generations

    # an internal pilot's decision (pilot.json, copied here once every arm sent its pilot), checked first
    pilot = arm_decision(cfg, state.rundir, manifest)
    return SequentialStopper(
        arm,
        cfg,
        manifest.seed,
        index_map,
        generations=entry_generations(state.rundir.root),
        dropped=dropped_entries(manifest, index_map),
        pilot=pilot,
    )


def _fleet_resends(handle: ServerHandle) -> int:
    """Behind a router, the proxy re-sends a request a dying worker failed; a single server: never."""
    return handle.server.router_settings().resend_failed if handle.fleet_watch is not None else 0


def _fleet_watch_interval(handle: ServerHandle) -> float:
    """Re-sends one watch interval apart: by then the fleet watch has taken the dead worker out of the
    rotation."""
    return handle.server.router_settings().watch_interval_s


EVALSCOPE = Stage(
    name="evalscope",
    inputs=(
        file(AT.manifest),
        tree(AT.datasets_dir),
        file(AT.index_map),
        file(AT.code_sandbox),
        file(AT.extension),
    ),
    outputs=(
        file(AT.requests_log),
        file(AT.responses_log),
        file(AT.recorder_log),
        tree(AT.evalscope_dir),
        file(AT.evalscope_log),
        file(AT.evalscope_tasks),
        file(AT.prompt_hashes),
        file(AT.evalscope_errors),  # one line per sample whose request or review raised inside EvalScope
        file(AT.cache_repairs, only="a resume that dropped cached rows that did not match their entries"),
        file(AT.sequential_stop, only="a variant whose sequential rule stops inside the run"),
        file(AT.replay_misses, only="the replay server, for requests it holds no recorded answer to"),
    ),
    run=_evalscope,
)
