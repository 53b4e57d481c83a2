"""``evalpipe run``: the stages of a run, in order, each talking to the next through the run directory.

    sample (or reload the run's manifest on --resume)
      → materialize the sampled records for EvalScope (datasets/, index_map.json)
      → preflight + component tests (launched servers only)
      → launch (or attach to) the server, verify its resolved /server_info
      → recording proxy between EvalScope and the server (requests.jsonl, responses.jsonl.gz)
      → EvalScope per benchmark (render → identity checks → cache repair on resume → run)
      → speed benchmark on the same server, no proxy (``speed:``; speed.json)
      → outcomes.jsonl, provenance.json
      → audit: summary.json, report.md, report.html

With ``variants:`` every variant runs on the same manifest in ``RUN/<variant>/`` and the first is
compared with the others (``compare.json``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from evalpipe.config.models import RunConfig, ServerConfig
from evalpipe.errors import ConfigError, RunInterrupted, RunStopped
from evalpipe.io import read_model
from evalpipe.rundir import RunDir
from evalpipe.schema.manifest import Manifest
from evalpipe.schema.outcomes import OutcomeRow
from evalpipe.schema.timings import ServerUtilisation, StageName, StageTime
from evalpipe.sources.base import BenchmarkData

if TYPE_CHECKING:
    from evalpipe.evalscope_bridge.stage import StageResult
    from evalpipe.progress import ProgressDisplay
    from evalpipe.schema.evalscope import IndexMap
    from evalpipe.schema.run import ExtensionRecord, RunRecord
    from evalpipe.schema.summary import Summary
    from evalpipe.speed.barrier import VariantBarrier
    from evalpipe.speed.compare import SpeedComparison

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


class StageClock:
    """Wall time of each stage, in the order they ran (printed at the end, saved as ``timings.json``)."""

    def __init__(self, variant: str | None = None) -> None:
        self.variant = variant
        self.stages: list[StageTime] = []
        self.utilisation: ServerUtilisation | None = None

    @contextmanager
    def stage(self, name: StageName) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - start)

    def add(self, name: StageName, seconds: float) -> None:
        self.stages.append(StageTime(stage=name, seconds=round(seconds, 3), variant=self.variant))

    def write(self, rd: RunDir) -> None:
        from evalpipe.io import write_model
        from evalpipe.schema.timings import StageTimings

        write_model(rd.timings, StageTimings(stages=self.stages, utilisation=self.utilisation))


@dataclass
class Spine:
    """What the sampling stage hands on: where the run lives, what was selected, the loaded data."""

    rundir: RunDir
    manifest: Manifest
    datasets: dict[str, BenchmarkData]


def sample_stage(cfg: RunConfig, *, dataset_root: Path | None, out: Path | None, allow_drift: bool) -> Spine:
    from evalpipe.samplers import sample_run

    if out is not None:
        rd = RunDir(Path(out))
        if rd.evalscope_dir.exists() or rd.outcomes.exists():
            raise ConfigError(f"{rd.root}: already holds a run's EvalScope outputs; use --resume {rd.root}")
    result = sample_run(cfg, dataset_root=dataset_root, out=out, allow_drift=allow_drift)
    return Spine(result.rundir, result.manifest, result.datasets)


def extend_stage(
    cfg: RunConfig, old_run: Path, *, dataset_root: Path | None, out: Path | None, allow_drift: bool
) -> tuple[Spine, ExtensionPlan]:
    """The larger selection for ``--extend RUN``: the config's plans with RUN's n_h as floors; refuses
    (exit 2, the problems as details) unless it contains every entry of RUN's manifest."""
    from evalpipe.samplers import sample_run
    from evalpipe.samplers.extend import (
        check_contains,
        floored_allocation,
        plan_allocation,
        selected_allocation,
    )
    from evalpipe.samplers.run import build_manifest, load_datasets

    old_rd = RunDir(Path(old_run))
    if not old_rd.manifest.is_file():
        raise ConfigError(f"--extend {old_rd.root}: no manifest.json (not a run directory)")
    old = read_model(old_rd.manifest, Manifest)
    datasets = load_datasets(cfg, dataset_root)
    planned, _ = build_manifest(cfg, datasets, allow_drift=allow_drift)
    allocations: dict[str, dict[str, int]] = {}
    notes: list[str] = []
    for block in planned.benchmarks:
        try:
            old_block = old.sampling_for(block.benchmark)
        except KeyError:
            continue
        populations = {s.stratum: s.population for s in block.strata}
        floors = floored_allocation(selected_allocation(old_block), plan_allocation(block.plan, populations))
        allocations[block.benchmark] = floors.allocation
        notes += floors.notes(block.benchmark)
    new, _ = build_manifest(cfg, datasets, allow_drift=allow_drift, allocations=allocations)
    check = check_contains(old, new)
    if check.problems:
        raise ConfigError(
            f"--extend {old_rd.root}: the new selection does not contain the old one", details=check.problems
        )
    if out is not None and (RunDir(Path(out)).evalscope_dir.exists() or RunDir(Path(out)).outcomes.exists()):
        raise ConfigError(f"{out}: already holds a run's EvalScope outputs")
    result = sample_run(
        cfg,
        dataset_root=dataset_root,
        out=out,
        allow_drift=allow_drift,
        allocations=allocations,
        datasets=datasets,
    )
    plan = ExtensionPlan(
        old_rd, len(old.entries), len(result.manifest.entries), check.reused, len(check.added), notes
    )
    return Spine(result.rundir, result.manifest, result.datasets), plan


@dataclass(frozen=True)
class ExtensionPlan:
    """What ``--extend`` reuses and adds (written as extension.json once the caches are seeded)."""

    old: RunDir
    old_samples: int
    new_samples: int
    reused: int
    added: int
    floor_notes: list[str]

    def record(self) -> ExtensionRecord:
        from evalpipe.schema.run import ExtensionRecord

        statement = f"extended from {self.old_samples} to {self.new_samples} samples; {self.reused} reused"
        if self.floor_notes:
            statement += "; " + "; ".join(self.floor_notes)
        return ExtensionRecord(
            extended_from=str(self.old.root),
            old_samples=self.old_samples,
            new_samples=self.new_samples,
            reused=self.reused,
            added=self.added,
            floor_notes=self.floor_notes,
            statement=statement,
        )


def resume_stage(cfg: RunConfig, run_dir: Path, *, dataset_root: Path | None) -> Spine:
    """Reload a run's manifest (never re-sample) and the datasets its records come from."""
    from evalpipe.config.loader import load_config
    from evalpipe.schema.run import RunRecord

    rd = RunDir(Path(run_dir))
    if not rd.manifest.is_file():
        raise ConfigError(f"--resume {rd.root}: no manifest.json (not a run directory)")
    manifest = read_model(rd.manifest, Manifest)
    if rd.config_copy.is_file():
        started = load_config(rd.config_copy, check_plans=False)
        a, b = started.model_dump(mode="json"), cfg.model_dump(mode="json")
        diffs = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        if diffs:
            raise ConfigError(
                f"--resume {rd.root}: the config differs from the one the run started with ({rd.config_copy})",
                details=[f"{k} differs" for k in diffs],
            )
    run = read_model(rd.run_record, RunRecord) if rd.run_record.is_file() else None
    datasets = load_manifest_datasets(cfg, manifest, run, dataset_root=dataset_root)
    return Spine(rd, manifest, datasets)


def server_for(cfg: RunConfig, *, endpoint: str | None, variant: str | None) -> ServerConfig:
    """The server this run talks to: the (variant's) launch config, or an attachment to ``endpoint``.

    With ``--endpoint`` the config's server settings are still what ``/server_info`` is verified against.
    """
    from evalpipe.server.variants import effective_server

    server = effective_server(cfg, variant)
    if endpoint:
        return server.model_copy(update={"kind": "endpoint", "endpoint": endpoint})
    return server


def _say(progress: ProgressDisplay | None) -> Callable[[str], None]:
    """One line per speed round: through the progress display's console when there is one."""
    if progress is not None:
        return lambda line: progress.console.print(line, markup=False, highlight=False)
    import sys

    return lambda line: print(line, file=sys.stderr, flush=True)


def load_manifest_datasets(
    cfg: RunConfig, manifest: Manifest, run: RunRecord | None, *, dataset_root: Path | None
) -> dict[str, BenchmarkData]:
    """The datasets a manifest's records come from: ``--dataset-root``, else the recorded local copy."""
    from evalpipe.sources.load import load_benchmark, load_local

    datasets: dict[str, BenchmarkData] = {}
    for block in manifest.benchmarks:
        name = block.benchmark
        recorded_dir = run.dataset_locations.get(name) if run else None
        if dataset_root is None and block.dataset.is_local and recorded_dir and Path(recorded_dir).is_dir():
            bench = cfg.benchmark(name)
            data = load_local(name, Path(recorded_dir), subset=bench.subset, source=bench.source)
            data.check_unique_ids()
        else:
            data = load_benchmark(cfg, name, dataset_root)
        datasets[name] = data
    return datasets


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
) -> RunResult:
    """One run directory: sample → materialize → launch/attach + verify → proxy → EvalScope → speed → outcomes
    → provenance → audit.  ``spine`` (variants) reuses an already sampled manifest.

    ``speed_by_parent`` (a variant of ``parallel_variants``): the speed benchmark is the parent's — with
    ``speed_barrier`` this variant's server waits, up, at the barrier for the alternating rounds
    (``evalpipe.speed.barrier``); without, the rounds are already in the run (resumed) and nothing is measured.
    """
    from evalpipe.clock import utc_now
    from evalpipe.evalscope_bridge.materialize import materialize
    from evalpipe.evalscope_bridge.outcomes import write_outcomes
    from evalpipe.evalscope_bridge.runner import WorkerProcess
    from evalpipe.evalscope_bridge.stage import run_evalscope
    from evalpipe.evalscope_bridge.task import check_generation
    from evalpipe.io import write_model
    from evalpipe.provenance import collect_provenance, run_component_tests
    from evalpipe.sandbox.preflight import for_run as sandbox_for_run
    from evalpipe.server.context_fit import check_context_fit, dropped_entries
    from evalpipe.server.kinds.registry import server_kind
    from evalpipe.server.lifecycle import managed_server, watch_server
    from evalpipe.server.preflight import punkt_needed, run_preflight
    from evalpipe.server.proxy import recording_proxy

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
                from evalpipe.evalscope_bridge.extend import seed_from_run

                seed_from_run(extension.old, rd, index_map, cfg.generation.repeats)
                write_model(rd.extension, extension.record())

        # 3. preflight and component tests, before any GPU time is spent; the sandbox for model-written
        #    code is resolved for every kind of server (a requested one that is missing: exit 2)
        with clock.stage("preflight"):
            sandbox_for_run(
                cfg.code_execution,
                rd,
                [d.benchmark for d in index_map.datasets],
                fresh=True,
                say=_notice(progress),
            )
            if kind.preflight_before_run:
                run_preflight(
                    cfg,
                    server,
                    punkt_needed=punkt_needed(cfg),
                    variant=variant,
                    rundir=rd,
                )
            component_results = run_component_tests(cfg, rd) if cfg.component_tests else []
            if cfg.speed is not None and not speed_by_parent:  # client, tokenizer: refused before the launch
                from evalpipe.speed.stage import check_before_launch

                check_before_launch(cfg.speed, cfg.base_dir())

        # 4. launch (or attach), verify /server_info, record every request through the proxy
        mark = time.perf_counter()
        with managed_server(cfg, server, rd, variant=variant) as handle:
            clock.add("launch", time.perf_counter() - mark)
            # the proxy is the run's one admission point: never more than generation.concurrency attempts
            # at the server, whichever benchmark sends them; request_timeout_s counts server time only
            with (
                clock.stage("evalscope"),
                recording_proxy(
                    handle.base_url,
                    rd,
                    concurrency=cfg.generation.concurrency,
                    upstream_timeout_s=cfg.generation.request_timeout_s,
                ) as proxy,
            ):
                api_url = proxy.base_url.rstrip("/") + upstream_path
                with watch_server(handle, rd):
                    stage = run_evalscope(
                        cfg,
                        rd,
                        index_map,
                        api_url=api_url,
                        resume=resume is not None,
                        progress=progress,
                        extending=extension is not None,
                        worker=worker,
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
        from evalpipe.audit.utilisation import utilisation_of_run

        clock.utilisation = utilisation_of_run(rd, cfg.generation.concurrency)

        # 5. one outcome row per manifest entry; provenance of what produced them
        with clock.stage("outcomes"):
            outcomes = write_outcomes(rd, spine.manifest, index_map)
            prov = collect_provenance(server=server, started_at=started_at, component_tests=component_results)
            prov.finished_at = utc_now()
            write_model(rd.provenance, prov)

        # 6. audit: summary.json, report.md, report.html (the verdict is raised by the caller)
        summary = None
        if audit:
            from evalpipe.audit.run import audit_run

            with clock.stage("audit"):
                summary = audit_run(rd.root)
        clock.write(rd)
        return RunResult(
            rd, spine.manifest, index_map, stage, outcomes, resume is not None, summary, timings=clock.stages
        )
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated): say how to resume
        from evalpipe.server.lifecycle import Terminated

        raise RunInterrupted(str(rd.root), terminated=isinstance(exc, Terminated)) from None
    finally:
        worker.close()


def _notice(progress: ProgressDisplay | None) -> Callable[[str], None]:
    """Where a stage's one-line notice goes: the progress display's console, else the log."""
    if progress is None:
        return logger.info
    console = progress.console
    return lambda line: console.print(line, markup=False, soft_wrap=True)


def prepare_variant_dirs(root: RunDir, variants: list[str], labels: dict[str, str]) -> dict[str, RunDir]:
    """Copy the spine (manifest, ids, run record, config) into ``root/<variant>/`` for each variant."""
    import shutil

    from evalpipe.io import read_model as _read
    from evalpipe.io import write_model
    from evalpipe.schema.run import RunRecord

    out: dict[str, RunDir] = {}
    record = _read(root.run_record, RunRecord)
    for name in variants:
        sub = RunDir(root.root / name)
        sub.root.mkdir(parents=True, exist_ok=True)
        for src, dst in ((root.manifest, sub.manifest), (root.sampled_ids, sub.sampled_ids),
                         (root.sources, sub.sources), (root.config_copy, sub.config_copy)):  # fmt: skip
            if not dst.exists():
                shutil.copyfile(src, dst)
        if not sub.run_record.exists():
            write_model(
                sub.run_record,
                record.model_copy(
                    update={
                        "run_id": f"{record.run_id}/{name}",
                        "variant": name,
                        "variant_label": labels.get(name),
                    }
                ),
            )
        out[name] = sub
    return out


def run_variants(
    cfg: RunConfig,
    *,
    dataset_root: Path | None = None,
    out: Path | None = None,
    resume: Path | None = None,
    allow_drift: bool = False,
    progress: ProgressDisplay | None = None,
    on_variant_done: Callable[[str, RunResult], None] | None = None,
    extend: Path | None = None,
) -> tuple[RunDir, dict[str, RunResult], list[Path]]:
    """Paired control: every variant on the same manifest, each in ``RUN/<variant>/``, then compare.

    The first variant is the one under test; it is compared with each following one (the controls).  With
    ``parallel_variants`` the variants run at the same time, each in its own process on servers it shares
    with no other (``evalpipe.parallel_variants``); otherwise one after the other.
    """
    from evalpipe.compare import compare_runs, write_compare

    names = [v.name for v in cfg.variants]
    labels = {v.name: v.label or v.name for v in cfg.variants}
    if cfg.parallel_variants and extend is not None:
        raise ConfigError(
            "--extend with parallel_variants: true is not supported; set parallel_variants: false to grow "
            "a run (the variants then extend one after the other)"
        )
    if cfg.parallel_variants:
        from evalpipe.parallel_variants import check_disjoint

        check_disjoint(cfg)  # before anything is sampled: one line naming what two variants would share
    clock = StageClock()
    with clock.stage("sample"):
        extension: ExtensionPlan | None = None
        if resume is not None:
            root_spine = resume_stage(cfg, resume, dataset_root=dataset_root)
        elif extend is not None:  # every variant grows from its own directory onto the same new manifest
            root_spine, extension = extend_stage(
                cfg, extend, dataset_root=dataset_root, out=out, allow_drift=allow_drift
            )
        else:
            root_spine = sample_stage(cfg, dataset_root=dataset_root, out=out, allow_drift=allow_drift)
    dirs = prepare_variant_dirs(root_spine.rundir, names, labels)
    if cfg.parallel_variants:
        from evalpipe.parallel_variants import run_at_once

        with clock.stage("variants"):
            run_at_once(cfg, root_spine.rundir.root, dirs, dataset_root=dataset_root, progress=progress)
        results = {name: finished_variant(dirs[name], root_spine) for name in names}
        if on_variant_done is not None:
            for name in names:
                on_variant_done(name, results[name])
    else:
        results = _run_in_turn(cfg, root_spine, dirs, resume=resume, dataset_root=dataset_root,
                               progress=progress, on_variant_done=on_variant_done,
                               extension=extension)  # fmt: skip
    compare_start = time.perf_counter()
    compares: list[Path] = []
    speed_comparison: SpeedComparison | None = None
    first = names[0]
    repeat_of = {v.repeat_of: v.name for v in reversed(cfg.variants) if v.repeat_of is not None}
    controls = [v.name for v in cfg.variants[1:] if v.repeat_of is None]
    for other in controls:
        # the A/A noise of this control: its own repeat, else the repeat of the variant under test
        again = repeat_of.get(other, repeat_of.get(first))
        noise_pair = (other, again) if other in repeat_of else (first, again)
        comparison = compare_runs(
            dirs[first].root,
            dirs[other].root,
            label_a=labels[first],
            label_b=labels[other],
            run_aa=dirs[again].root if again is not None else None,
            label_aa=labels[again] if again is not None else None,
            aa_control=dirs[noise_pair[0]].root if again is not None else None,
            margins=lambda block: cfg.gates.points_for("non_inferiority_margin_pts", block),
        )
        target = (
            root_spine.rundir.root
            if len(controls) == 1
            else root_spine.rundir.root / f"compare-{first}-vs-{other}"
        )
        json_path, _ = write_compare(comparison, target)
        compares.append(json_path)
        if cfg.speed is not None:  # the first variant is the test, as in compare.json
            from evalpipe.speed.stage import compare_variant_dirs

            speed_comparison = compare_variant_dirs(
                dirs[first].root,
                dirs[other].root,
                target,
                min_output_throughput_ratio=cfg.gates.min_output_throughput_ratio,
            )
    if not controls and first in repeat_of:  # A/A only: the server's own noise is the record
        again = repeat_of[first]
        comparison = compare_runs(
            dirs[first].root,
            dirs[again].root,
            label_a=labels[first],
            label_b=labels[again],
            margins=lambda block: cfg.gates.points_for("non_inferiority_margin_pts", block),
            aa_only=True,
        )
        json_path, _ = write_compare(comparison, root_spine.rundir.root)
        compares.append(json_path)
        if cfg.speed is not None:  # the speed noise: the same launch settings measured twice
            from evalpipe.speed.stage import compare_variant_dirs

            speed_comparison = compare_variant_dirs(
                dirs[first].root,
                dirs[again].root,
                root_spine.rundir.root,
                min_output_throughput_ratio=cfg.gates.min_output_throughput_ratio,
            )
    if len(compares) == 1:  # the variants' reports now cite the paired comparison (and their gates)
        from evalpipe.audit.run import audit_run

        for name in names:
            results[name].summary = audit_run(
                dirs[name].root, comparison=comparison, speed_comparison=speed_comparison
            )
    clock.add("compare", time.perf_counter() - compare_start)
    for name in names:
        clock.stages += results[name].timings
    clock.write(root_spine.rundir)
    return root_spine.rundir, results, compares


def _run_in_turn(
    cfg: RunConfig,
    root_spine: Spine,
    dirs: dict[str, RunDir],
    *,
    resume: Path | None,
    dataset_root: Path | None,
    progress: ProgressDisplay | None,
    on_variant_done: Callable[[str, RunResult], None] | None,
    extension: ExtensionPlan | None = None,
) -> dict[str, RunResult]:
    """Each variant after the other, in this process (a stopped variant stops the whole run)."""
    results: dict[str, RunResult] = {}
    try:
        for name, sub in dirs.items():
            resuming = resume is not None and (sub.evalscope_dir.exists() or sub.outcomes.exists())
            spine = Spine(sub, root_spine.manifest, root_spine.datasets)
            results[name] = run(
                cfg,
                dataset_root=dataset_root,
                resume=sub.root if resuming else None,
                progress=progress,
                variant=name,
                spine=spine,
                extension=replace(extension, old=RunDir(extension.old.root / name))
                if extension is not None and not resuming
                else None,
            )
            if on_variant_done is not None:
                on_variant_done(name, results[name])
    except RunStopped as exc:  # a variant's run stopped: the whole run is resumed from its root
        exc.run_dir = str(root_spine.rundir.root)
        raise
    except KeyboardInterrupt as exc:
        from evalpipe.server.lifecycle import Terminated

        raise RunInterrupted(str(root_spine.rundir.root), terminated=isinstance(exc, Terminated)) from None
    return results


def finished_variant(rd: RunDir, root: Spine) -> RunResult:
    """A variant's RunResult from the files its own process wrote (``parallel_variants``)."""
    from evalpipe.evalscope_bridge.stage import StageResult
    from evalpipe.io import read_jsonl
    from evalpipe.schema.evalscope import IndexMap
    from evalpipe.schema.outcomes import CacheRepair
    from evalpipe.schema.summary import Summary
    from evalpipe.schema.timings import StageTimings

    outcomes = [r for r in read_jsonl(rd.outcomes, OutcomeRow) if isinstance(r, OutcomeRow)]
    repairs = [r for r in read_jsonl(rd.cache_repairs, CacheRepair) if isinstance(r, CacheRepair)]
    return RunResult(
        rundir=rd,
        manifest=root.manifest,
        index_map=read_model(rd.index_map, IndexMap),
        evalscope=StageResult(repairs=repairs),
        outcomes=outcomes,
        resumed=bool(repairs),
        summary=read_model(rd.summary, Summary) if rd.summary.is_file() else None,
        timings=read_model(rd.timings, StageTimings).stages if rd.timings.is_file() else [],
    )
