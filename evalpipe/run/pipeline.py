"""``evalpipe run``: the stages of one run directory, in order, each talking to the next through its files.

    sample (``evalpipe.run.sample``; reload the run's manifest on --resume; ``evalpipe.run.extend`` on --extend)
      → materialize the sampled records for EvalScope (datasets/, index_map.json)
      → preflight + component tests (launched servers only)
      → launch (or attach to) the server, verify its resolved /server_info; lengths beyond the context it
        resolved are dropped (kv_probe: ``run.context_fit.cap_to_served_context``) and re-materialized
      → recording proxy between EvalScope and the server (requests.jsonl, responses.jsonl.gz)
      → EvalScope per benchmark (render → identity checks → cache repair on resume → run)
      → speed benchmark on the same server, no proxy (``speed:``; speed.json)
      → outcomes.jsonl, provenance.json
      → audit: summary.json, report.md, report.html, explorer.html

With ``variants:`` every variant runs this sequence on the same manifest in ``RUN/<variant>/`` and the first
is compared with the others (``evalpipe.run.variants``).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalpipe.artifacts import RunDir, write_model
from evalpipe.artifacts.schema.evalscope import IndexMap
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.timings import StageTime
from evalpipe.audit.utilisation import utilisation_of_run
from evalpipe.benchmarks import code_benchmarks, punkt_needed
from evalpipe.clock import utc_now
from evalpipe.config.models import RunConfig, ServerConfig
from evalpipe.errors import ConfigError, DiskFull, RunInterrupted, RunOutOfSpace
from evalpipe.evalscope_bridge.extend import seed_from_run
from evalpipe.evalscope_bridge.materialize import materialize
from evalpipe.evalscope_bridge.outcomes import write_outcomes
from evalpipe.evalscope_bridge.runner import WorkerProcess
from evalpipe.evalscope_bridge.stage import StageResult, run_evalscope
from evalpipe.evalscope_bridge.task import check_generation
from evalpipe.processes.signals import Terminated
from evalpipe.recording.proxy import recording_proxy
from evalpipe.run.context_fit import cap_to_served_context, check_context_fit, dropped_entries
from evalpipe.run.extend import ExtensionPlan, extend_stage
from evalpipe.run.provenance import collect_provenance, run_component_tests
from evalpipe.run.sample import Spine, resume_stage, sample_stage
from evalpipe.run.sequential_stop import SequentialArm, SequentialStopper
from evalpipe.run.stage_clock import StageClock
from evalpipe.run.torn_files import repair_torn_files
from evalpipe.sandbox.preflight import for_run as sandbox_for_run
from evalpipe.server.kinds.registry import server_kind
from evalpipe.server.lifecycle import managed_server, watch_server
from evalpipe.server.preflight import run_preflight
from evalpipe.server.variants import effective_server

if TYPE_CHECKING:
    from evalpipe.artifacts.schema.summary import Summary
    from evalpipe.progress import ProgressDisplay
    from evalpipe.server.kinds.base import ServerHandle
    from evalpipe.speed.barrier import VariantBarrier

logger = logging.getLogger(__name__)


@dataclass
class RunResult:
    rundir: RunDir
    manifest: Manifest
    index_map: IndexMap
    evalscope: StageResult
    outcomes: list[OutcomeRow]
    resumed: bool
    summary: Summary | None = None
    timings: list[StageTime] = field(default_factory=list)


def server_for(cfg: RunConfig, *, endpoint: str | None, variant: str | None) -> ServerConfig:
    """The server this run talks to: the (variant's) launch config, or an attachment to ``endpoint``.

    With ``--endpoint`` the config's server settings are still what ``/server_info`` is verified against.
    """
    server = effective_server(cfg, variant)
    if endpoint:
        return server.model_copy(update={"kind": "endpoint", "endpoint": endpoint})
    return server


def _say(progress: ProgressDisplay | None) -> Callable[[str], None]:
    """One line per speed round: through the progress display's console when there is one."""
    if progress is not None:
        return lambda line: progress.console.print(line, markup=False, highlight=False)
    return lambda line: print(line, file=sys.stderr, flush=True)


def run(
    cfg: RunConfig,
    *,
    endpoint: str | None = None,
    dataset_root: Path | None = None,
    out: Path | None = None,
    resume: Path | None = None,
    allow_drift: bool = False,
    progress: ProgressDisplay | None = None,
    variant: str | None = None,
    spine: Spine | None = None,
    audit: bool = True,
    extend: Path | None = None,
    extension: ExtensionPlan | None = None,
    speed_by_parent: bool = False,
    speed_barrier: VariantBarrier | None = None,
    sequential_arm: SequentialArm | None = None,
) -> RunResult:
    """One run directory: sample → materialize → launch/attach + verify → proxy → EvalScope → speed → outcomes
    → provenance → audit.  ``spine`` (variants) reuses an already sampled manifest.

    ``speed_by_parent`` (a variant of ``parallel_variants``): the speed benchmark is the parent's — with
    ``speed_barrier`` this variant's server waits, up, at the barrier for the alternating rounds
    (``evalpipe.speed.barrier``); without, the rounds are already in the run (resumed) and nothing is measured.
    ``sequential_arm`` (a variant of a paired run with ``generation.sequential.in_run``): the rule stops this
    variant's gated benchmarks inside the EvalScope stage (``evalpipe.run.sequential_stop``).
    """
    server = server_for(cfg, endpoint=endpoint, variant=variant)
    kind = server_kind(server.kind)
    upstream_path = kind.upstream_path(server)  # a bad endpoint URL is a usage error before anything runs
    check_generation(cfg)
    started_at = utc_now()
    clock = StageClock(variant)

    # 1. sample (or reload the manifest of the run being resumed)
    if spine is None:
        with clock.stage("sample"):
            if resume is not None:
                if out is not None and Path(out).resolve() != Path(resume).resolve():
                    raise ConfigError("--out and --resume name different run directories")
                spine = resume_stage(cfg, resume, dataset_root=dataset_root)
            elif extend is not None:
                spine, extension = extend_stage(
                    cfg, extend, dataset_root=dataset_root, out=out, allow_drift=allow_drift
                )
            else:
                spine = sample_stage(cfg, dataset_root=dataset_root, out=out, allow_drift=allow_drift)
    rd = spine.rundir
    try:
        if rd.requests_log.exists() or rd.evalscope_dir.exists():  # a resume (or a variant's)
            for line in repair_torn_files(rd):  # a crash mid-write: whole records only before appending
                _notice(progress)(line)
    except DiskFull as exc:
        raise RunOutOfSpace(exc.message, str(rd.root)) from None

    # the EvalScope worker starts now: its EvalScope import overlaps the stages up to its own, which hands
    # it its tasks; it is ended on every path (used or not)
    worker = WorkerProcess(rd)
    try:
        worker.spawn()
        # 2. every sampled prompt must fit the context (refuse, or drop with consent); then materialize
        #    exactly the sampled records, in manifest order
        with clock.stage("materialize"):
            fit = check_context_fit(cfg, spine.manifest, spine.datasets)
            write_model(rd.context_fit, fit)
            index_map = materialize(rd, spine.manifest, spine.datasets, cfg, skip=dropped_entries(fit, cfg))
            if extension is not None:  # the old run's answers become this run's verified cache
                seed_from_run(extension.old, rd, index_map, cfg.generation.repeats)
                write_model(rd.extension, extension.record())

        # 3. preflight and component tests, before any GPU time is spent; the sandbox for model-written
        #    code is resolved for every kind of server (a requested one that is missing: exit 2)
        with clock.stage("preflight"):
            sandbox_for_run(
                cfg.code_execution,
                rd,
                code_benchmarks([d.benchmark for d in index_map.datasets]),
                fresh=True,
                say=_notice(progress),
            )
            if kind.preflight_before_run:
                run_preflight(
                    cfg,
                    server,
                    punkt_needed=punkt_needed([b.name for b in cfg.benchmarks]),
                    variant=variant,
                    rundir=rd,
                )
            component_results = run_component_tests(cfg, rd) if cfg.component_tests else []
            if cfg.speed is not None and not speed_by_parent:  # client, tokenizer: refused before the launch
                # only runs with ``speed:`` import the speed stage (clients, tokenizer: ~0.3 s)
                from evalpipe.speed.stage import check_before_launch

                check_before_launch(cfg.speed, cfg.base_dir())

        # 4. launch (or attach), verify /server_info, record every request through the proxy
        mark = time.perf_counter()
        with managed_server(cfg, server, rd, variant=variant) as handle:
            clock.add("launch", time.perf_counter() - mark)
            # lengths beyond the context the server resolved are dropped before anything is sent
            capped = cap_to_served_context(
                fit, spine.manifest, spine.datasets, _served_info(rd), cfg.max_tokens_for
            )
            if capped is not None:
                for line in capped.served_drops[len(fit.served_drops) :]:
                    _notice(progress)(line)
                fit = capped
                write_model(rd.context_fit, fit)
                skip = dropped_entries(fit, cfg)
                index_map = materialize(rd, spine.manifest, spine.datasets, cfg, skip=skip)
                if extension is not None:
                    seed_from_run(extension.old, rd, index_map, cfg.generation.repeats)
            # the proxy is the run's one admission point: never more than generation.concurrency attempts
            # at the server, whichever benchmark sends them; request_timeout_s counts server time only
            with (
                clock.stage("evalscope"),
                recording_proxy(
                    handle.base_url,
                    rd,
                    concurrency=cfg.generation.concurrency,
                    upstream_timeout_s=cfg.generation.request_timeout_s,
                    api_key=handle.api_key,  # the EvalScope worker holds no key
                    resend_failed=_fleet_resends(handle),
                    resend_delay_s=_fleet_watch_interval(handle),
                ) as proxy,
            ):
                api_url = proxy.base_url.rstrip("/") + upstream_path
                with watch_server(handle, rd, proxy=proxy):
                    stage = run_evalscope(
                        cfg,
                        rd,
                        index_map,
                        api_url=api_url,
                        resume=resume is not None,
                        progress=progress,
                        extending=extension is not None,
                        worker=worker,
                        stopper=_stopper(sequential_arm, cfg, rd, spine.manifest, index_map)
                        if sequential_arm is not None
                        else None,
                    )
                proxy.flush()
            if cfg.speed is not None and speed_barrier is not None:  # the parent alternates the rounds
                with watch_server(handle, rd, during="the wait for the speed rounds"):
                    speed_barrier.arrive(handle.base_url)
                    waited, measured = speed_barrier.wait(rd.root, _say(progress))
                clock.add("speed_wait", waited)
                clock.add("speed", measured)
            elif cfg.speed is not None and not speed_by_parent:
                # same launch, the server's own URL: no proxy inside the latencies
                from evalpipe.speed.stage import run_speed_stage

                with clock.stage("speed"), watch_server(handle, rd):
                    run_speed_stage(
                        cfg.speed,
                        handle.base_url,
                        rd.root,
                        variant=variant or "default",
                        served_model=cfg.model.served_name,
                        api_key=handle.api_key,
                        base_dir=cfg.base_dir(),
                        say=_say(progress),
                    )
            mark = time.perf_counter()
        clock.add("stop", time.perf_counter() - mark)
        clock.utilisation = utilisation_of_run(rd, cfg.generation.concurrency)

        # 5. one outcome row per manifest entry; provenance of what produced them
        with clock.stage("outcomes"):
            outcomes = write_outcomes(rd, spine.manifest, index_map)
            prov = collect_provenance(server=server, started_at=started_at, component_tests=component_results)
            prov.finished_at = utc_now()
            write_model(rd.provenance, prov)

        # 6. audit: summary.json, report.md, report.html, explorer.html (the verdict is raised by the caller)
        summary = None
        if audit:
            # the audit runs last: its report and statistics modules (~0.3-0.6 s) load after EvalScope has run
            from evalpipe.run.audit import audit_run

            with clock.stage("audit"):
                summary = audit_run(rd.root)
        clock.write(rd)
        return RunResult(
            rd, spine.manifest, index_map, stage, outcomes, resume is not None, summary, timings=clock.stages
        )
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated): say how to resume
        raise RunInterrupted(str(rd.root), terminated=isinstance(exc, Terminated)) from None
    except DiskFull as exc:  # every file is whole: --resume continues once there is space
        raise RunOutOfSpace(exc.message, str(rd.root)) from None
    finally:
        worker.close()


def _served_info(rd: RunDir) -> dict[str, Any] | None:
    """The server's saved ``/server_info``; behind a router, the worker resolving the least context (every
    request may land on any of them)."""
    from evalpipe.server.served_context import served_context

    def read(path: Path) -> object:
        return json.loads(path.read_text(encoding="utf-8"))

    if rd.server_info.is_file():
        info = read(rd.server_info)
        return info if isinstance(info, dict) else None
    workers = [read(p) for p in sorted(rd.server_dir.glob("workers/*/server_info.json"))]
    sized = [(c[0], w) for w in workers if isinstance(w, dict) and (c := served_context(w)) is not None]
    return min(sized, key=lambda t: t[0])[1] if sized else None


def _stopper(
    arm: SequentialArm, cfg: RunConfig, rd: RunDir, manifest: Manifest, index_map: IndexMap
) -> SequentialStopper:
    """This arm's stopper over the manifest's order: earlier generations first after ``--extend``
    (extension.json), entries the context fit dropped in their places as units without an answer."""
    from evalpipe.samplers.extend import entry_generations

    materialised = {(e.benchmark, e.source_id) for e in index_map.entries}
    dropped = [
        (e.benchmark, e.subset, e.source_id)
        for e in manifest.entries
        if (e.benchmark, e.source_id) not in materialised
    ]
    return SequentialStopper(
        arm, cfg, manifest.seed, index_map, generations=entry_generations(rd.root), dropped=dropped
    )


def _fleet_resends(handle: ServerHandle) -> int:
    """Behind a router, the proxy re-sends a request a dying worker failed; a single server: never."""
    return handle.server.router_settings().resend_failed if handle.fleet_watch is not None else 0


def _fleet_watch_interval(handle: ServerHandle) -> float:
    """Re-sends one watch interval apart: by then the fleet watch has taken the dead worker out of the
    rotation."""
    return handle.server.router_settings().watch_interval_s


def _notice(progress: ProgressDisplay | None) -> Callable[[str], None]:
    """Where a stage's one-line notice goes: the progress display's console, else the log."""
    if progress is None:
        return logger.info
    console = progress.console
    return lambda line: console.print(line, markup=False, soft_wrap=True)
