"""``variants:``: every variant runs the stage sequence on the same manifest in ``RUN/<variant>/`` — one after
the other in this process, or at the same time each in a process of its own (``parallel_variants``) — then
the first is compared with the others (``compare.json``), and only then is each variant audited, once: its
report cites the comparison it is an arm of (the variant under test: its comparison with the first control).
``run_variants`` returns a :class:`PairedOutcome` — the variants' results, the comparisons' files and the
verdict — that the command line only shows.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from evalpipe.artifacts import RunDir, read_jsonl, read_model, write_model
from evalpipe.artifacts.lock import hold_run_dir
from evalpipe.artifacts.schema.compare import CompareResult
from evalpipe.artifacts.schema.evalscope import IndexMap
from evalpipe.artifacts.schema.outcomes import CacheRepair, OutcomeRow
from evalpipe.artifacts.schema.provenance import Provenance
from evalpipe.artifacts.schema.run import RunRecord
from evalpipe.artifacts.schema.summary import Summary
from evalpipe.artifacts.schema.timings import StageTimings
from evalpipe.compare import AAPair, Arms, GatePolicy, PairedDesign, compare_noise, compare_runs
from evalpipe.config.models import RunConfig
from evalpipe.errors import ArtifactError, ConfigError, EvalpipeError, RunInterrupted, RunStopped
from evalpipe.evalscope_bridge.stage import StageResult
from evalpipe.numerics.compare import numerics_for
from evalpipe.processes.signals import Terminated
from evalpipe.resolve import ResolvedRun
from evalpipe.run.compare_files import write_compare
from evalpipe.run.extend import Extension, extend_stage
from evalpipe.run.options import Coordination, SampledRun, ServerTarget
from evalpipe.run.parallel_variants import check_disjoint, run_at_once
from evalpipe.run.pilot import checked_decision, decide, share_decision
from evalpipe.run.pipeline import RunResult, run
from evalpipe.run.sample import Spine, resume_stage, sample_stage
from evalpipe.run.sequential_stop import SequentialArm, arm_for
from evalpipe.run.spec import RunSpec
from evalpipe.run.stage_clock import StageClock
from evalpipe.speed.stage import compare_variant_dirs

if TYPE_CHECKING:
    from evalpipe.artifacts.schema.speed_compare import SpeedComparison
    from evalpipe.progress import ProgressDisplay


def prepare_variant_dirs(root: RunDir, variants: list[str], labels: dict[str, str]) -> dict[str, RunDir]:
    """Copy the spine (manifest, ids, run record, config) into ``root/<variant>/`` for each variant."""
    out: dict[str, RunDir] = {}
    record = read_model(root.run_record, RunRecord)
    for name in variants:
        sub = RunDir(root.root / name)
        sub.root.mkdir(parents=True, exist_ok=True)
        for src, dst in ((root.manifest, sub.manifest), (root.sampled_ids, sub.sampled_ids),
                         (root.sources, sub.sources), (root.config_copy, sub.config_copy)):  # fmt: skip
            if not dst.exists():
                shutil.copyfile(src, dst)
            elif dst.read_bytes() != src.read_bytes():  # a copy decides what the arm sends: never a stale one
                raise ArtifactError(f"{dst}: differs from the run's {src}, its original; nothing was rewritten")
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
    resolved: ResolvedRun,
    *,
    dataset_root: Path | None = None,
    out: Path | None = None,
    resume: Path | None = None,
    allow_drift: bool = False,
    progress: ProgressDisplay | None = None,
    extend: Path | None = None,
) -> PairedOutcome:
    """Paired control: every variant on the same manifest, each in ``RUN/<variant>/``, then compare, then
    audit each variant once, its report citing its comparison.

    The first variant is the one under test; it is compared with each following one (the controls).  With
    ``parallel_variants`` the variants run at the same time, each in its own process on servers it shares
    with no other (``evalpipe.run.parallel_variants``); otherwise one after the other.
    """
    cfg = resolved.config
    if cfg.parallel_variants and extend is not None:
        raise ConfigError(
            "--extend with parallel_variants: true is not supported; set parallel_variants: false to grow "
            "a run (the variants then extend one after the other)"
        )
    if cfg.parallel_variants:
        check_disjoint(resolved)  # before anything is sampled: one line naming what two variants would share
    clock = StageClock()
    with clock.stage("sample"):
        extension: Extension | None = None
        if resume is not None:
            root_spine = resume_stage(cfg, resume, dataset_root=dataset_root)
        elif extend is not None:  # every variant grows from its own directory onto the same new manifest
            root_spine, extension = extend_stage(
                resolved, extend, dataset_root=dataset_root, out=out, allow_drift=allow_drift
            )
        else:
            root_spine = sample_stage(cfg, dataset_root=dataset_root, out=out, allow_drift=allow_drift)
    with hold_run_dir(root_spine.rundir):  # one process at a time in the run directory (a resume waits its turn)
        return _variants_of(resolved, root_spine, _Start(resume, extension, progress, clock, dataset_root))


@dataclass(frozen=True)
class _Start:
    """How a paired run started: resumed or extended, its display, its clock, its datasets' root."""

    resume: Path | None
    extension: Extension | None
    progress: ProgressDisplay | None
    clock: StageClock
    dataset_root: Path | None


def _variants_of(resolved: ResolvedRun, root_spine: Spine, start: _Start) -> PairedOutcome:
    """``run_variants`` once the manifest is known and the run directory held."""
    cfg = resolved.config
    names = [v.name for v in cfg.variants]
    labels = {v.name: v.label or v.name for v in cfg.variants}
    resume, extension, progress, clock, dataset_root = (
        start.resume, start.extension, start.progress, start.clock, start.dataset_root
    )
    dirs = prepare_variant_dirs(root_spine.rundir, names, labels)
    finished: set[str] = set()
    try:
        if cfg.parallel_variants:
            with clock.stage("variants"):
                run_at_once(cfg, root_spine.rundir.root, dirs, dataset_root=dataset_root, progress=progress,
                            finished=finished)  # fmt: skip
            results = {name: finished_variant(dirs[name], root_spine) for name in names}
        else:
            results = _run_in_turn(resolved, root_spine, dirs, resume=resume, progress=progress,
                                   extension=extension, finished=finished)  # fmt: skip
    except EvalpipeError as exc:
        if not isinstance(exc, RunInterrupted):  # the run stopped before any comparison: audit what finished
            _audit_finished([name for name in names if name in finished], dirs)
        raise
    compare_start = time.perf_counter()
    compares, cited = _compare_arms(cfg, root_spine.rundir, dirs, labels)
    clock.add("compare", time.perf_counter() - compare_start)
    for name in names:
        clock.stages += results[name].timings
    _audit_once(names, dirs, results, cited, clock)
    clock.write(root_spine.rundir)
    return PairedOutcome(root_spine.rundir, results, compares)


def _compare_arms(
    cfg: RunConfig, root: RunDir, dirs: dict[str, RunDir], labels: dict[str, str]
) -> tuple[list[PairedFiles], dict[str, _Cited]]:
    """Compare the variant under test (the first) with each control, its A/A repeat beside it (or, with no
    control, record the A/A noise); each comparison's files, and what each variant's report cites."""
    names = [v.name for v in cfg.variants]
    compares: list[PairedFiles] = []
    cited: dict[str, _Cited] = {}
    speed_comparison: SpeedComparison | None = None
    first = names[0]
    repeat_of = {v.repeat_of: v.name for v in reversed(cfg.variants) if v.repeat_of is not None}
    controls = [v.name for v in cfg.variants[1:] if v.repeat_of is None]
    for other in controls:
        # the A/A noise of this control: its own repeat, else the repeat of the variant under test
        again = repeat_of.get(other, repeat_of.get(first))
        noise_pair = (other, again) if other in repeat_of else (first, again)
        comparison = compare_runs(
            PairedDesign(
                Arms(dirs[first].root, dirs[other].root, labels[first], labels[other]),
                aa=AAPair(dirs[again].root, dirs[noise_pair[0]].root, labels[again])
                if again is not None
                else None,
                gate=GatePolicy.of(cfg),
            )
        )
        target = root.root if len(controls) == 1 else root.root / f"compare-{first}-vs-{other}"
        comparison = _with_numerics(cfg, comparison)
        json_path, _ = write_compare(comparison, target)
        speed_comparison = None
        if cfg.speed is not None:  # the first variant is the test, as in compare.json
            speed_comparison = compare_variant_dirs(
                dirs[first].root,
                dirs[other].root,
                target,
                min_output_throughput_ratio=cfg.gates.min_output_throughput_ratio,
            )
        compares.append(PairedFiles(json_path, RunDir(target).speed_compare if speed_comparison else None))
        _cite(cited, (first, other, again), comparison, speed_comparison)
    if not controls and first in repeat_of:  # A/A only: the server's own noise is the record
        again = repeat_of[first]
        comparison = compare_noise(
            Arms(dirs[first].root, dirs[again].root, labels[first], labels[again]), GatePolicy.of(cfg)
        )
        comparison = _with_numerics(cfg, comparison)
        json_path, _ = write_compare(comparison, root.root)
        if cfg.speed is not None:  # the speed noise: the same launch settings measured twice
            speed_comparison = compare_variant_dirs(
                dirs[first].root,
                dirs[again].root,
                root.root,
                min_output_throughput_ratio=cfg.gates.min_output_throughput_ratio,
            )
        speed_path = root.speed_compare if speed_comparison else None
        compares.append(PairedFiles(json_path, speed_path))
        _cite(cited, (first, again), comparison, speed_comparison)
    return compares, cited


def _with_numerics(cfg: RunConfig, comparison: CompareResult) -> CompareResult:
    """``comparison`` with its arms' numerics block when the config probes numerics."""
    if cfg.numerics is None:
        return comparison
    block = numerics_for(comparison, fail_above=cfg.numerics.fail_above)
    return comparison.model_copy(update={"numerics": block}) if block is not None else comparison


@dataclass(frozen=True)
class PairedFiles:
    """One paired comparison's files: ``compare.json`` (and the pages beside it) and, with ``speed:``, the
    ``speed_compare.json`` written beside it (None without one)."""

    compare_json: Path
    speed_compare: Path | None = None


@dataclass
class PairedOutcome:
    """What a paired run hands its caller to show: the run's root, each variant's result (its summary from
    the one audit after the comparison), the comparisons' files, and the verdict that decides the exit."""

    rundir: RunDir
    results: dict[str, RunResult]
    comparisons: list[PairedFiles]

    @property
    def verdict(self) -> Summary | None:
        """The variants' summary with the worst exit code (the first of them on a tie); None: none audited."""
        worst: Summary | None = None
        for result in self.results.values():
            if result.summary is not None and (worst is None or result.summary.exit_code > worst.exit_code):
                worst = result.summary
        return worst


@dataclass(frozen=True)
class _Cited:
    """The comparison a variant's report cites, and its serving-speed counterpart."""

    comparison: CompareResult
    speed: SpeedComparison | None


def _cite(
    cited: dict[str, _Cited],
    names: tuple[str | None, ...],
    comparison: CompareResult,
    speed: SpeedComparison | None,
) -> None:
    """Each of ``names`` (the arms and the A/A arm of ``comparison``) cites it, unless an earlier comparison
    took it already: the variant under test cites its comparison with the first control."""
    for name in names:
        if name is not None and name not in cited:
            cited[name] = _Cited(comparison, speed)


def _audit_finished(names: list[str], dirs: dict[str, RunDir]) -> None:
    """A stopped run's variants that did finish, audited without a comparison (there is none yet): their
    reports say what they found, as a single run's would.  The resume audits them again, after it."""
    # import cost: the audit (~36 modules), loaded when the audit runs
    from evalpipe.run.audit import audit_run

    for name in names:
        audit_run(dirs[name].root)


def _audit_once(
    names: list[str],
    dirs: dict[str, RunDir],
    results: dict[str, RunResult],
    cited: dict[str, _Cited],
    clock: StageClock,
) -> None:
    """Audit every variant once, after the comparisons: its report cites the comparison it is an arm of (a
    variant in none cites the first), and its audit's wall time joins ``timings.json`` under its name."""
    from evalpipe.run.audit import audit_run  # import cost: loaded when the audit runs, as in pipeline.run

    fallback = cited.get(names[0])
    for name in names:
        own = cited.get(name, fallback)
        variant_clock = StageClock(name)
        with variant_clock.stage("audit"):
            results[name].summary = audit_run(
                dirs[name].root,
                comparison=own.comparison if own else None,
                speed_comparison=own.speed if own else None,
            )
        results[name].timings += variant_clock.stages
        clock.stages += variant_clock.stages


def _run_in_turn(
    resolved: ResolvedRun,
    root_spine: Spine,
    dirs: dict[str, RunDir],
    *,
    resume: Path | None,
    progress: ProgressDisplay | None,
    extension: Extension | None = None,
    finished: set[str],
) -> dict[str, RunResult]:
    """Each variant after the other, in this process (a stopped variant stops the whole run); ``finished``
    gains each variant whose run ended.

    With the sequential rule stopping inside the run (``evalpipe.run.sequential_stop``) the control runs
    first — whole: there is no test arm to judge it against yet, so its spend is the plan's — then the variant
    under test, which stops at the rule's first crossing on the control's units, then the others (the A/A
    arm), which send exactly the units up to that crossing."""
    cfg = resolved.config
    order = list(dirs)
    arms = {name: arm_for(cfg, name, root_spine.rundir.root, together=False) for name in order}
    first = arms[order[0]]
    if first is not None:
        order.remove(first.control)
        order.insert(0, first.control)
    seq = cfg.generation.sequential
    turn = _Turn(resolved, root_spine, dirs, order, arms, progress, finished)
    try:
        if first is not None and seq is not None and seq.pilot is not None:
            root = root_spine.rundir
            piloted: dict[str, RunResult] = {}
            # checked against the config, the manifest and its copies in the arms before anything is sent
            decision = checked_decision(cfg, root, root_spine.manifest, [d.root for d in dirs.values()])
            if decision is None:  # every arm sends its pilot, then the rule decides once
                piloted = _arms_in_turn(turn, resume=resume, extension=extension)
                finished.clear()
                decision = decide(
                    cfg, root, root_spine.manifest, read_model(dirs[order[0]].index_map, IndexMap)
                )
                if progress is not None:
                    progress.console.print(decision.statement, markup=False, soft_wrap=True)
            share_decision(root, [d.root for d in dirs.values()])
            resume, extension = root.root, None  # the rest continues every arm's pilot
            second = replace(turn, decided_at=decision.decided_at)
            rest = _arms_in_turn(second, resume=resume, extension=extension)
            for name, result in piloted.items():  # both passes' stages (two launches) in timings.json
                rest[name].timings[:0] = result.timings
            return rest
        return _arms_in_turn(turn, resume=resume, extension=extension)
    except RunStopped as exc:  # a variant's run stopped: the whole run is resumed from its root
        exc.run_dir = str(root_spine.rundir.root)
        raise
    except KeyboardInterrupt as exc:
        raise RunInterrupted(str(root_spine.rundir.root), terminated=isinstance(exc, Terminated)) from None


@dataclass(frozen=True)
class _Turn:
    """What every pass of the variants in turn shares: the run, its spine, the variants' directories in the
    order they run, their sequential arms, the progress display and the set of variants whose run ended."""

    resolved: ResolvedRun
    root_spine: Spine
    dirs: dict[str, RunDir]
    order: list[str]
    arms: dict[str, SequentialArm | None]
    progress: ProgressDisplay | None
    finished: set[str]
    #: When the internal pilot was decided (its ``decided_at``); None before it, or without a pilot.
    decided_at: str | None = None


def _arms_in_turn(turn: _Turn, *, resume: Path | None, extension: Extension | None) -> dict[str, RunResult]:
    """One pass of every variant in turn's order, each run to its end (its pilot, or its whole run)."""
    resolved, root_spine, dirs, arms = turn.resolved, turn.root_spine, turn.dirs, turn.arms
    results: dict[str, RunResult] = {}
    for name in turn.order:
        sub = dirs[name]
        if resume is not None and _ran_to_its_end(sub, turn.decided_at):
            # a resume after the arm's run had ended (a kill in a later arm, or in compare): its files stand,
            # neither its EvalScope stage nor its sequential stop state is made again
            results[name] = finished_variant(sub, root_spine)
            turn.finished.add(name)
            continue
        resuming = resume is not None and (sub.evalscope_dir.exists() or sub.outcomes.exists())
        spine = Spine(sub, root_spine.manifest, root_spine.datasets)
        arm = arms[name]
        if arm is not None:
            arm.begin()
        try:
            own_extension = (
                replace(extension, old=RunDir(extension.old.root / name))
                if extension is not None and not resuming
                else None
            )
            plan = RunSpec(
                resolved,
                SampledRun(spine, resuming=resuming, extension=own_extension),
                ServerTarget(variant=name),
                Coordination(sequential_arm=arm),
                audit=False,  # audited once, after the comparison (``run_variants``)
            )
            results[name] = run(plan, turn.progress)
            turn.finished.add(name)
        finally:
            if arm is not None:
                arm.end()
    return results


def _ran_to_its_end(rd: RunDir, decided_at: str | None) -> bool:
    """The arm's run ended whole (its last stage, the outcomes and their provenance, written) — after the
    internal pilot's decision when there is one (``decided_at``: its first pass ended before it)."""
    if not (rd.outcomes.is_file() and rd.provenance.is_file()):
        return False
    finished = read_model(rd.provenance, Provenance).finished_at
    if finished is None:
        return False
    return decided_at is None or datetime.fromisoformat(finished) > datetime.fromisoformat(decided_at)


def finished_variant(rd: RunDir, root: Spine) -> RunResult:
    """A variant's RunResult from the files its own process wrote (``parallel_variants``)."""
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
