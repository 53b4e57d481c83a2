"""The EvalScope stage of a run: per benchmark, render → check → (verify cache) → run.

1. The worker loads the materialized dataset through EvalScope's adapter and reports every sample as
   rendered, before any request is sent.  Each must sit at the index the index map says and contain
   its entry's question: this catches a stale dataset cache, a filter inside EvalScope, or any other
   way the positional index could drift from the manifest.
2. Each entry's rendered-prompt hash is recorded the first time it is seen (``prompt_hashes.jsonl``);
   on resume a prompt rendered differently than recorded stops the run (mixing prompts is not a run).
3. On resume, every cached prediction/review is checked against its entry (``identity``); failures
   are dropped from the cache and recorded in ``cache_repairs.jsonl``; EvalScope re-requests them.
4. EvalScope runs with ``ignore_errors``; its progress drives the terminal display.

One EvalScope worker process serves every benchmark (EvalScope is imported once), one thread each.
``generation.schedule`` decides how benchmarks share the server: ``pipelined`` sends their requests side by
side (the recording proxy keeps the server at ``generation.concurrency`` requests in total), ``sequential``
one benchmark's requests at a time — the next one's load and checks overlap the previous one's requests,
its first request follows the previous one's last answer.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from evalpipe.artifacts import JsonlAppender, RunDir, read_jsonl, read_model, write_model
from evalpipe.artifacts.schema.evalscope import (
    EvalscopeTask,
    EvalscopeTasks,
    IndexMap,
    IndexMapEntry,
    PromptHashRecord,
)
from evalpipe.artifacts.schema.outcomes import CacheRepair
from evalpipe.config.models import RunConfig
from evalpipe.errors import ConfigError, DataError, EvalpipeError
from evalpipe.evalscope_bridge.identity import Expected, contains_question, verify_and_repair
from evalpipe.evalscope_bridge.layout import predictions_file, reviews_file
from evalpipe.evalscope_bridge.protocol import Finished, RenderedSample, Sample, Start, WorkerEvent
from evalpipe.evalscope_bridge.runner import Ran, WorkerProcess
from evalpipe.evalscope_bridge.task import (
    build_task,
    check_generation,
    evalscope_index,
    request_seeds,
    task_differences,
    task_repeats,
)
from evalpipe.sandbox.preflight import for_run as sandbox_for_run

if TYPE_CHECKING:
    from evalpipe.artifacts.schema.sandbox import SandboxRecord
    from evalpipe.benchmarks import Benchmark
    from evalpipe.progress import ProgressDisplay
    from evalpipe.resolve import ResolvedRun

logger = logging.getLogger(__name__)


class SequentialGate(Protocol):
    """What the stage asks of the sequential rule stopping inside a paired run
    (``evalpipe.run.sequential_stop.SequentialStopper`` implements it; the stage never imports the run)."""

    def sequence(self, benchmark: str) -> list[tuple[str, int]] | None: ...

    def attempts(self, benchmark: str) -> list[int] | None: ...

    def asked_total(self, benchmark: str) -> int | None: ...

    def begin(self, benchmark: str) -> None: ...

    def observe(self, benchmark: str, event: Sample) -> None: ...

    def poll(self, worker: WorkerProcess) -> None: ...

    def finish(self, benchmark: str) -> None: ...

    def write(self, rundir: RunDir) -> None: ...


class RenderingChanged(EvalpipeError):
    """On resume, EvalScope renders some prompts differently than when the run started."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class BenchmarkStage:
    benchmark: str
    samples: int
    repairs: int = 0
    rerun_review: bool = False
    cache_identity_reason: str | None = None
    errors: int = 0


@dataclass
class StageResult:
    benchmarks: list[BenchmarkStage] = field(default_factory=list)
    repairs: list[CacheRepair] = field(default_factory=list)
    punkt_tab: bool = True


def check_rendering(benchmark: str, entries: list[IndexMapEntry], samples: list[RenderedSample]) -> None:
    """Every rendered sample must be the index map's entry at its (subset, index)."""
    expected = {(e.subset, e.index): e for e in entries}
    seen: set[tuple[str, int]] = set()
    problems: list[str] = []
    for s in samples:
        key = (s.subset, s.index)
        entry = expected.get(key)
        if entry is None:
            problems.append(f"{key[0]}[{key[1]}]: EvalScope loaded a sample the index map does not have")
            continue
        seen.add(key)
        if not contains_question(s.user_text, entry.question):
            problems.append(
                f"{key[0]}[{key[1]}]: rendered prompt does not contain the question of {entry.source_id}"
            )
    for key in sorted(expected.keys() - seen):
        problems.append(f"{key[0]}[{key[1]}]: {expected[key].source_id} was not loaded by EvalScope")
    if problems:
        raise DataError(
            f"{benchmark}: the materialized dataset does not load back through EvalScope as written "
            f"({len(problems)} problem(s))",
            details=problems[:20],
        )


def load_prompt_hashes(rundir: RunDir) -> dict[tuple[str, str], PromptHashRecord]:
    """First recorded hash per (benchmark, source_id)."""
    out: dict[tuple[str, str], PromptHashRecord] = {}
    for rec in read_jsonl(rundir.prompt_hashes, PromptHashRecord):
        out.setdefault((rec.benchmark, rec.source_id), rec)
    return out


def _record_hashes(
    rundir: RunDir,
    benchmark: str,
    entries: list[IndexMapEntry],
    samples: list[RenderedSample],
    recorded: dict[tuple[str, str], PromptHashRecord],
    evalscope_version: str,
) -> None:
    by_key = {(s.subset, s.index): s for s in samples}
    changed: list[str] = []
    new: list[PromptHashRecord] = []
    for e in entries:
        s = by_key[(e.subset, e.index)]
        prev = recorded.get((benchmark, e.source_id))
        if prev is not None:
            if prev.prompt_sha256 != s.prompt_sha256:
                changed.append(
                    f"{e.subset}/{e.source_id}: recorded {prev.prompt_sha256[:12]}, now {s.prompt_sha256[:12]}"
                )
            continue
        rec = PromptHashRecord(
            benchmark=benchmark,
            subset=e.subset,
            index=e.index,
            source_id=e.source_id,
            prompt_sha256=s.prompt_sha256,
            n_messages=s.n_messages,
            recorded_at=_now(),
            evalscope_version=evalscope_version,
        )
        new.append(rec)
        recorded[(benchmark, e.source_id)] = rec
    if changed:
        raise RenderingChanged(
            f"{benchmark}: EvalScope renders {len(changed)} prompt(s) differently than when this run started "
            "(EvalScope, template or few-shot data changed); start a new run instead of resuming",
            details=changed[:20],
        )
    if new:
        with JsonlAppender(rundir.prompt_hashes) as log:
            for rec in new:
                log.append(rec)
            log.fsync()


class _ProgressSink:
    """Feeds worker events into a rich progress task for one benchmark (and a gated benchmark's samples to
    the sequential rule)."""

    def __init__(
        self,
        progress: ProgressDisplay | None,
        benchmark: str,
        total: int,
        stopper: SequentialGate | None = None,
    ) -> None:
        self.progress = progress
        self.benchmark = benchmark
        self.failed = 0
        self.total = total
        self.stopper = stopper
        self.task_id = progress.add_task(benchmark, total=total) if progress is not None else None

    def __call__(self, event: WorkerEvent) -> None:
        if isinstance(event, Sample) and self.stopper is not None:
            self.stopper.observe(self.benchmark, event)
        if isinstance(event, Sample) and event.cached:  # counted in Start's ``cached``
            return
        if isinstance(event, Sample) and not event.ok and event.sent:
            self.failed += 1
        if self.progress is None or self.task_id is None:
            return
        if isinstance(event, Start):
            self.total = event.total or self.total
            asked = self.stopper.asked_total(self.benchmark) if self.stopper is not None else None
            if asked is not None:  # an internal pilot's pass: the attempts it may send, not the task's
                self.total = min(self.total, asked)
            self.progress.update(self.task_id, total=self.total, completed=min(event.cached, self.total))
        elif isinstance(event, Sample):
            desc = self.benchmark if not self.failed else f"{self.benchmark} [red]({self.failed} failed)[/]"
            self.progress.update(self.task_id, advance=1, description=desc)
        elif isinstance(event, Finished):
            self.progress.update(self.task_id, completed=self.total)


def _load_tasks(rundir: RunDir) -> EvalscopeTasks | None:
    return read_model(rundir.evalscope_tasks, EvalscopeTasks) if rundir.evalscope_tasks.is_file() else None


def run_evalscope(
    resolved: ResolvedRun,
    rundir: RunDir,
    index_map: IndexMap,
    *,
    api_url: str,
    resume: bool = False,
    progress: ProgressDisplay | None = None,
    extending: bool = False,
    worker: WorkerProcess | None = None,
    stopper: SequentialGate | None = None,
) -> StageResult:
    """Run every materialized benchmark through EvalScope against ``api_url``.

    ``extending`` (``evalpipe run --extend``): the caches were seeded from another run's predictions
    (``evalscope_bridge.extend``); they are verified like a resume's and reviewed afresh.  ``worker``: one
    the run spawned when it started (its EvalScope import done meanwhile); the stage ends it either way
    (without one it starts its own).  ``stopper``: the sequential rule stopping inside a paired run
    (``evalpipe.run.sequential_stop``): its benchmarks send in sequence order, as far as it releases.
    ``resolved``: the run's config with its benchmarks' plugins, which the stage asks and never looks up."""
    # import cost: kept out of the pipeline's import, loaded when the EvalScope stage runs
    from evalpipe.server.nltk_data import punkt_tab_available

    cfg, benchmarks = resolved.config, resolved.benchmarks
    check_generation(resolved)
    result = StageResult(punkt_tab=punkt_tab_available())
    if not result.punkt_tab:
        _warn_without_punkt(index_map, benchmarks, progress)
    # the run's code sandbox (resolved by the preflight; resolved here when the stage runs on its own)
    executing = [d.benchmark for d in index_map.datasets if benchmarks[d.benchmark].meta.executes_code]
    code_sandbox = sandbox_for_run(cfg.code_execution, rundir, executing)
    previous = _load_tasks(rundir) if resume else None
    if not resume and not extending:
        for path in (rundir.prompt_hashes, rundir.evalscope_errors, rundir.cache_repairs):
            path.unlink(missing_ok=True)
    run = _StageRun(
        cfg, rundir, resume=resume, extending=extending, progress=progress, code_sandbox=code_sandbox,
        tasks={t.benchmark: t for t in previous.tasks} if previous else {},
        recorded=load_prompt_hashes(rundir), result=result,
    )  # fmt: skip
    _run_benchmarks(run, _benchmark_tasks(run, index_map, api_url), worker=worker, stopper=stopper)
    if stopper is not None:
        stopper.write(rundir)
    return result


def _warn_without_punkt(
    index_map: IndexMap, benchmarks: Mapping[str, Benchmark], progress: ProgressDisplay | None
) -> None:
    """Up front, not after the run: the sampled prompts that need NLTK's punkt_tab will be scoring errors,
    not "wrong".  ``benchmarks``: the run's plugins, by name."""
    needs_punkt = [
        e
        for spec in benchmarks.values()
        for e in index_map.for_benchmark(spec.meta.name)
        if spec.needs_punkt(e)
    ]
    if not needs_punkt:
        return
    labels = ", ".join(dict.fromkeys(benchmarks[e.benchmark].meta.display_name for e in needs_punkt))
    message = (
        f"NLTK punkt_tab is not installed: {len(needs_punkt)} sampled {labels} prompt(s) count sentences or "
        "capital words and will be reported as scoring_error (nothing is downloaded at run time; "
        "install it with `python -m nltk.downloader punkt_tab`)"
    )
    if progress is not None:
        progress.console.print(f"[yellow]warning:[/] {message}")
    else:
        logger.warning(message)


@dataclass
class _StageRun:
    """What every step of one stage run shares: the config, the run directory, how it runs (``resume``,
    ``extending``), the progress display and the code sandbox, and what the steps add to as they go — the
    tasks record, the prompt hashes recorded, the result."""

    cfg: RunConfig
    rundir: RunDir
    resume: bool
    extending: bool
    progress: ProgressDisplay | None
    code_sandbox: SandboxRecord | None
    tasks: dict[str, EvalscopeTask]
    recorded: dict[tuple[str, str], PromptHashRecord]
    result: StageResult


def _benchmark_tasks(run: _StageRun, index_map: IndexMap, api_url: str) -> list[Planned]:
    """Every benchmark's task, and the checks that need no process: a fresh run on top of old EvalScope
    outputs, a resume whose EvalScope settings changed."""
    cfg, rundir, resume, extending, tasks = run.cfg, run.rundir, run.resume, run.extending, run.tasks
    planned: list[Planned] = []
    for ds in index_map.datasets:
        name = ds.benchmark
        entries = index_map.for_benchmark(name)
        work_dir = rundir.evalscope_work_dir(name)
        task = build_task(
            cfg,
            name,
            api_url=api_url,
            dataset_dir=rundir.root / ds.path,
            subsets=ds.subsets,
            work_dir=work_dir,
            use_cache=resume or extending,
            rerun_review=extending,
        )
        if not resume and not extending and work_dir.exists() and any(work_dir.iterdir()):
            # EvalScope appends to its caches: a fresh run on top of old ones would mix two runs
            raise ConfigError(f"{work_dir}: EvalScope outputs from an earlier run; resume that run instead")
        old = tasks.get(name)
        if resume and old is not None:
            diffs = task_differences(old.task, task)
            if diffs:
                raise ConfigError(
                    f"{name}: cannot resume: EvalScope settings differ from the ones this run started with",
                    details=[f"{k}: {old.task.get(k)!r} → {task.get(k)!r}" for k in diffs],
                )
        planned.append((name, entries, work_dir, task))
    return planned


Planned = tuple[str, list[IndexMapEntry], Any, dict[str, Any]]


def expected_cost(cfg: RunConfig, benchmark: str, samples: int) -> int:
    """Generation budget of a benchmark: max_tokens × samples (what its tail can cost at worst)."""
    return cfg.max_tokens_for(benchmark) * samples


def _prepare(run: _StageRun, plan: Planned, worker: WorkerProcess) -> tuple[BenchmarkStage, str]:
    """Everything between a worker's rendering and its first request: check the rendering against the
    index map, record prompt hashes, verify the cache (resume), record the task."""
    rundir, tasks, recorded, result = run.rundir, run.tasks, run.recorded, run.result
    resume, extending = run.resume, run.extending
    name, entries, work_dir, task = plan
    stage = BenchmarkStage(benchmark=name, samples=len(entries))
    rendered = worker.rendered(name)
    version = rendered.evalscope_version
    check_rendering(name, entries, rendered.samples)
    _record_hashes(rundir, name, entries, rendered.samples, recorded, version)
    if resume or extending:
        repairs = _verify_cache(
            rundir, name, task["model_id"], work_dir, entries, recorded, task_repeats(task)
        )
        stage.repairs = len(repairs)
        result.repairs.extend(repairs)
    tasks[name] = EvalscopeTask(
        benchmark=name,
        work_dir=str(work_dir.relative_to(rundir.root)),
        model_id=task["model_id"],
        task=task,
        started_at=_now(),
        resumed=resume,
        worker_pid=rendered.pid,
    )
    _write_tasks(rundir, tasks, version, result.punkt_tab)
    return stage, version


def _finish(run: _StageRun, stage: BenchmarkStage, ran: Ran, failed: int, version: str) -> None:
    stage.errors = failed
    stage.rerun_review = ran.finished.rerun_review
    stage.cache_identity_reason = ran.cache_identity.reason if ran.cache_identity is not None else None
    if stage.rerun_review:
        run.tasks[stage.benchmark] = run.tasks[stage.benchmark].model_copy(update={"rerun_review": True})
        _write_tasks(run.rundir, run.tasks, version, run.result.punkt_tab)


#: Seconds between checks of the running benchmarks while waiting (keeps Ctrl-C responsive).
_POLL_S = 0.5
#: The same while the sequential rule gates a benchmark: each check is one of its looks (judge, release).
_LOOK_S = 0.1


def _run_benchmarks(
    run: _StageRun,
    planned: list[Planned],
    *,
    worker: WorkerProcess | None = None,
    stopper: SequentialGate | None = None,
) -> None:
    """Every benchmark in one worker, one thread each there and one reader thread each here.

    ``pipelined``: every benchmark's requests at once, sharing the proxy's slots, largest expected cost
    first — each benchmark is checked (rendering, hashes, cache) before it is told to run, in cost order,
    so the costliest benchmark's requests queue first and its tail overlaps the others' work.
    ``sequential``: in the config's order, one benchmark's requests at a time (the worker's
    ``GenerationTurns``): the next benchmark's load and checks happen while the previous one generates,
    its first request follows the previous one's last answer.  The first failure ends the worker (its
    process group) and the error is raised here.  With a ``stopper``, every look of the wait loop is one of
    the sequential rule's (``SequentialStopper.poll``: judge, release, halt).
    """
    # import cost: concurrent.futures.thread stays out of the pipeline's import
    from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait

    if not planned:
        return
    cfg = run.cfg
    together = cfg.generation.schedule == "pipelined"
    order = list(range(len(planned)))
    if together:
        order.sort(key=lambda i: -expected_cost(cfg, planned[i][0], len(planned[i][1])))
    stages: dict[str, BenchmarkStage] = {}
    with contextlib.ExitStack() as stack:
        # entered first, so it is shut down last: after the worker is gone and its readers have ended
        pool = stack.enter_context(
            ThreadPoolExecutor(max_workers=len(planned), thread_name_prefix="evalscope")
        )
        worker = stack.enter_context(worker if worker is not None else WorkerProcess(run.rundir))
        sequences = _start(run, worker, planned, order, stopper)
        running: dict[Future[tuple[Ran, int]], tuple[BenchmarkStage, str]] = {}
        for i in order:
            plan = planned[i]
            gated = stopper if plan[0] in sequences else None
            sink = _ProgressSink(run.progress, plan[0], len(plan[1]), gated)
            stage, version = _prepare(run, plan, worker)
            stages[plan[0]] = stage
            begin = functools.partial(gated.begin, plan[0]) if gated is not None else None
            running[pool.submit(_run_benchmark, worker, plan[0], plan[3], sink, begin)] = (stage, version)
        pending = set(running)
        while pending:
            done, pending = wait(
                pending, timeout=_LOOK_S if sequences else _POLL_S, return_when=FIRST_EXCEPTION
            )
            for fut in done:
                ran, failed = fut.result()  # raises the worker's error: the stack ends the worker
                stage, version = running[fut]
                if stopper is not None and stage.benchmark in sequences:
                    stopper.finish(stage.benchmark)
                _finish(run, stage, ran, failed, version)
            if stopper is not None and sequences:
                stopper.poll(worker)
        worker.wait_exit()
    run.result.benchmarks.extend(stages[p[0]] for p in planned)


def _start(
    run: _StageRun, worker: WorkerProcess, planned: list[Planned], order: list[int], stopper: SequentialGate | None
) -> dict[str, Any]:
    """Tell the worker every benchmark's task (``planned`` in ``order``), with the sequence of each one the
    sequential rule gates and each one's request seeds; returns the gated benchmarks' sequences."""
    sequences = {}
    attempts: dict[str, list[int]] = {}
    if stopper is not None:
        for plan in planned:
            sequence = stopper.sequence(plan[0])
            if sequence is not None:
                sequences[plan[0]] = sequence
            asked = stopper.attempts(plan[0])
            if asked is not None:
                attempts[plan[0]] = asked
    seeds = {
        name: request_seeds(
            run.cfg, name, ((e.subset, e.index, e.source_id) for e in entries), task_repeats(task)
        )
        for name, entries, _, task in planned
    }
    worker.start(
        [(planned[i][0], planned[i][3]) for i in order],
        together=run.cfg.generation.schedule == "pipelined",
        code_sandbox=run.code_sandbox,
        sequences=sequences,
        attempts=attempts,
        request_seeds={name: s for name, s in seeds.items() if s is not None},
    )
    return sequences


def _run_benchmark(
    worker: WorkerProcess,
    benchmark: str,
    task: dict[str, Any],
    sink: _ProgressSink,
    begin: Callable[[], None] | None = None,
) -> tuple[Ran, int]:
    ran = worker.run(benchmark, task, on_event=sink, on_sent=begin)
    return ran, sink.failed


def _write_tasks(rundir: RunDir, tasks: dict[str, EvalscopeTask], version: str, punkt: bool) -> None:
    write_model(
        rundir.evalscope_tasks,
        EvalscopeTasks(evalscope_version=version, nltk_punkt_tab=punkt, tasks=list(tasks.values())),
    )


def _verify_cache(
    rundir: RunDir,
    benchmark: str,
    model_id: str,
    work_dir: Any,
    entries: list[IndexMapEntry],
    recorded: dict[tuple[str, str], PromptHashRecord],
    repeats: int = 1,
) -> list[CacheRepair]:
    by_subset: dict[str, dict[int, Expected]] = defaultdict(dict)
    for e in entries:
        rec = recorded.get((benchmark, e.source_id))
        wanted = Expected(e.source_id, e.question, rec.prompt_sha256 if rec else None)
        for attempt in range(repeats):
            by_subset[e.subset][evalscope_index(e.index, attempt, repeats)] = wanted
    repairs: list[CacheRepair] = []
    for subset, expected in by_subset.items():
        check = verify_and_repair(
            benchmark,
            subset,
            predictions_file(work_dir, model_id, benchmark, subset),
            reviews_file(work_dir, model_id, benchmark, subset),
            expected,
        )
        repairs.extend(check.repairs)
    if repairs:
        with JsonlAppender(rundir.cache_repairs) as log:
            for r in repairs:
                log.append(r)
            log.fsync()
    return repairs
