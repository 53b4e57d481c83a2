"""What the EvalScope worker changes in EvalScope, and what it asks of it outside ``run_task``.

Changes (each installed per benchmark, before its ``run_task``; read in EvalScope 1.14):

* ``install_nltk_guard``: NLTK data is never downloaded (EvalScope would try at scoring time);
* ``register_adapter``: an adapter EvalScope does not ship is registered by the module its benchmark names;
* ``prepare_code_execution``: a benchmark that executes model-written code reviews in the run's sandbox;
* ``install_evaluator``: an ``Evaluator`` subclass per benchmark that hands the adapter to the render gate
  before any request, reports progress, and records each sample whose request or review raised
  (EvalScope's ``ignore_errors`` only counts them);
* ``install_disk_guard`` (once per worker): EvalScope's prediction/review cache writer appends each line
  whole or not at all, and a write the file system refuses (full, over quota, read-only) is reported to the
  parent at once (``Failed`` with the file) — EvalScope itself logs such an error per sample and carries on.

Questions: ``rendered_samples`` (a loaded dataset as the parent checks it), ``load_separately`` (the dataset
outside ``run_task``, on a resume), ``cache_identity_problem`` (why EvalScope would refuse its own cache).
``preload`` imports what every benchmark needs, so that a worker started early has it ready.

The only worker code that names EvalScope's modules: when EvalScope upgrades, this file changes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evalpipe.artifacts.schema.sandbox import SandboxRecord
from evalpipe.evalscope_bridge.facts import BUDGET_STOP_REASONS
from evalpipe.evalscope_bridge.protocol import Channel, RenderedSample, Sample, Start
from evalpipe.evalscope_bridge.scheduling import NotSent, PredictionCount, SequenceGate


def install_disk_guard(channel: Channel) -> None:
    """Replace ``JsonlWriter.write`` (EvalScope's predictions and reviews caches): one ``O_APPEND`` write of
    the whole line, cut back if refused part-way (``artifacts.disk.append_whole``); a disk error is sent
    to the parent as ``Failed`` naming the file (once), then raised for EvalScope as before."""
    import json
    import os

    from evalscope.utils import io_utils

    from evalpipe.artifacts.disk import append_whole, is_disk_error
    from evalpipe.evalscope_bridge.protocol import Failed

    reported = threading.Event()

    def write(self: Any, record: Any) -> None:
        path = str(self._path)
        data = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        try:
            parent = os.path.dirname(path)
            if parent:
                os.makedirs(parent, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                append_whole(fd, data)
            finally:
                os.close(fd)
        except OSError as exc:
            if not is_disk_error(exc):
                raise
            if not reported.is_set():
                reported.set()
                channel.emit(Failed(benchmark="", error=f"{exc.strerror}: {path}", refused_path=path,
                                    refused_errno=exc.errno))  # fmt: skip
            raise OSError(exc.errno, exc.strerror, path) from None

    io_utils.JsonlWriter.write = write


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def preload() -> None:
    """Import what every benchmark's ``run_task`` imports, whichever the benchmarks (seconds: EvalScope's own
    import brings HF ``datasets``; its OpenAI client is imported at the first task)."""
    import evalscope
    import evalscope.evaluation_versioning
    import evalscope.evaluator.evaluator
    import evalscope.models.openai_compatible  # noqa: F401
    from evalscope import TaskConfig, run_task  # noqa: F401


def install_nltk_guard(benchmark: str) -> None:
    """Replace EvalScope's "find or download" NLTK check by "find or fail"; forbid ``nltk.download``.

    A missing resource then fails the one review that needs it (IFEval's ``match_score`` turns that
    into an empty score, which the outcome table classifies as ``scoring_error``) instead of trying
    the network in the middle of scoring.
    """
    from evalscope.utils import resource_utils

    mirror_map = resource_utils.MIRROR_MAP

    def find_or_fail(name: str) -> None:
        import nltk

        meta = mirror_map.get(name)
        resource = meta["resource_path"] if meta else name
        try:
            nltk.data.find(resource)
        except LookupError:
            raise LookupError(
                f"NLTK resource {name!r} is not installed and evalpipe does not download at run time "
                f"(install it with `python -m nltk.downloader {name}` or point NLTK_DATA at a copy)"
            ) from None

    def refuse_download(*args: Any, **kwargs: Any) -> bool:
        raise RuntimeError("evalpipe forbids NLTK downloads during a run")

    resource_utils.check_nltk_data = find_or_fail
    from evalpipe.benchmarks import find

    spec = find(benchmark)
    if spec is not None and spec.meta.nltk_module:  # only these import NLTK (slow to import otherwise)
        import importlib

        import nltk

        nltk.download = refuse_download
        nltk_user: Any = importlib.import_module(spec.meta.nltk_module)  # an (untyped) EvalScope module
        nltk_user.check_nltk_data = find_or_fail


def register_adapter(benchmark: str) -> None:
    """Make sure EvalScope knows the benchmark's adapter (one EvalScope does not ship is registered by
    the module the benchmark names)."""
    from evalpipe.benchmarks import find

    spec = find(benchmark)
    if spec is not None:
        spec.register_evalscope_adapter()


def prepare_code_execution(benchmark: str, sandbox: SandboxRecord | None) -> None:
    """A benchmark whose review executes model-written code gets the run's sandbox before EvalScope runs
    (``Benchmark.prepare_review``); without one the worker refuses to run it — never unsandboxed by
    accident."""
    from evalpipe.benchmarks import find
    from evalpipe.sandbox.preflight import launcher_for

    spec = find(benchmark)
    if spec is None or not spec.meta.executes_code:
        return
    if sandbox is None:
        raise RuntimeError(f"{benchmark} executes model-written code and no code sandbox was resolved")
    spec.prepare_review(launcher_for(sandbox))


def rendered_samples(loaded: dict[str, Any], repeats: int) -> list[RenderedSample]:
    """Every sample of a loaded dataset (subset → samples) as the parent checks it: position, prompt hash,
    final user message (one per row: with ``repeats`` > 1 EvalScope loads each row that many times)."""
    from evalpipe.hashing import message_text, prompt_sha256

    samples = []
    for subset, dataset in loaded.items():
        for sample in dataset:
            if repeats > 1:
                # attempt copies of one row (id = position × repeats + attempt, group_id = position): the
                # prompt is rendered once per row; every copy must be that row
                if sample.group_id != sample.id // repeats:
                    raise RuntimeError(
                        f"{subset}[{sample.id}]: group_id {sample.group_id} is not id // {repeats}"
                    )
                if sample.id % repeats:
                    continue
            messages = [m.model_dump(mode="json", exclude_none=True) for m in sample.input]
            users = [m for m in messages if m.get("role") == "user"]
            samples.append(
                RenderedSample(
                    subset=subset,
                    index=sample.id // repeats,
                    prompt_sha256=prompt_sha256(messages),
                    n_messages=len(messages),
                    user_text=message_text(users[-1].get("content")) if users else None,
                )
            )
    return samples


def load_separately(task_kwargs: dict[str, Any], benchmark: str) -> dict[str, Any]:
    """The dataset as the adapter loads it, outside ``run_task`` (resume only: see ``main``)."""
    from evalscope.api.registry import get_benchmark
    from evalscope.config import TaskConfig
    from evalscope.utils.model_utils import seed_everything

    task = TaskConfig(**task_kwargs)
    if task.seed is not None:  # as run_task does before its own load
        seed_everything(task.seed)
    loaded: dict[str, Any] = get_benchmark(benchmark, task).load_dataset()
    return loaded


def cache_identity_problem(task_kwargs: dict[str, Any]) -> str | None:
    """Why EvalScope would refuse its own cache (e.g. the api_url changed), or None.

    evalpipe has verified every cached row itself, so a refusal for transport reasons is answered with
    ``rerun_review=True``: predictions are reused, reviews recomputed.
    """
    from evalscope.api.registry import get_benchmark
    from evalscope.config import TaskConfig, load_task_config_snapshot
    from evalscope.evaluation_versioning import (
        ResolvedBenchmarkSpec,
        build_evaluation_identity,
        validate_cached_evaluation_identity,
    )

    from evalpipe.evalscope_bridge.layout import task_snapshot

    snapshot = load_task_config_snapshot(str(task_snapshot(task_kwargs["work_dir"])))
    if snapshot is None:
        return None
    task = TaskConfig(**task_kwargs)
    specs, versions = {}, {}
    for name in task.datasets:
        meta = get_benchmark(name, task).benchmark_meta
        specs[name] = ResolvedBenchmarkSpec.from_meta(meta, task)
        versions[name] = meta.evaluation_version
    try:
        validate_cached_evaluation_identity(snapshot, build_evaluation_identity(specs, versions, task), False)
    except ValueError as exc:
        return str(exc)
    return None


class ErrorsLog:
    """``evalscope_errors.jsonl``, shared by every benchmark of the worker: one line per failed sample."""

    def __init__(self, path: str) -> None:
        from evalpipe.artifacts import JsonlAppender

        self._log = JsonlAppender(Path(path))
        self._lock = threading.Lock()

    def append(self, record: BaseModel) -> None:
        with self._lock:
            self._log.append(record)
            self._log.fsync()


def install_evaluator(
    benchmark: str,
    channel: Channel,
    errors: ErrorsLog,
    on_adapter: Callable[[Any], None],
    last_prediction: Callable[[], None] = lambda: None,
    gate: SequenceGate | None = None,
    repeats: int = 1,
) -> None:
    """Register an Evaluator for ``benchmark`` that hands its adapter to ``on_adapter`` (the render gate:
    its loaded samples are reported before any request), reports progress and per-sample errors, and calls
    ``last_prediction`` once its last pending prediction has returned.

    With a ``gate`` (``generation.sequential``): the work items go in the gate's order (row ``id // repeats``:
    EvalScope numbers attempt copies ``row × repeats + attempt``), each request waits for the parent's
    release and a halted row raises ``NotSent`` (reported with ``sent`` false, not as an error), and every
    sample's correctness is reported for the rule's looks — the cached ones' too, from their cached score."""
    from evalscope.api.registry import EVALUATOR_REGISTRY
    from evalscope.evaluator.evaluator import DefaultEvaluator

    from evalpipe.artifacts.schema.evalscope import ErrorPhase, EvalscopeErrorRecord

    # EvalScope ships no type information: its classes, and the work items below, are Any to mypy.
    class EvalpipeEvaluator(DefaultEvaluator):  # type: ignore[misc]  # DefaultEvaluator is Any (untyped EvalScope)
        def __init__(self, benchmark: Any, *args: Any, **kwargs: Any) -> None:
            super().__init__(benchmark, *args, **kwargs)
            on_adapter(benchmark)
            self._predictions = PredictionCount(last_prediction)

        def _collect_work_items(self, dataset_dict: Any) -> Any:
            ctx = super()._collect_work_items(dataset_dict)
            if gate is not None:  # FIFO pool: the order the rule consumes units is the order they are sent
                ctx.work_items.sort(key=lambda item: gate.position(item.subset, _row(item) // repeats))
            channel.emit(Start(benchmark=benchmark, total=ctx.grand_total, cached=ctx.total_cached))
            if gate is not None:
                for subset, scores in ctx.cached_scores_by_subset.items():
                    for cached in scores:
                        value = cached.score.main_value
                        channel.emit(
                            Sample(
                                benchmark=benchmark,
                                subset=subset,
                                index=int(cached.sample_id),
                                ok=True,
                                correct=1.0 if value == 1.0 else 0.0,
                                cached=True,
                            )
                        )
            self._predictions.expect(sum(1 for item in ctx.work_items if item.needs_predict))
            return ctx

        def _predict_sample(self, sample: Any, model_prediction_dir: str) -> Any:
            try:  # EvalScope's retries happen inside: a return or a raise here is the sample's last request
                return super()._predict_sample(sample, model_prediction_dir)
            finally:
                self._predictions.returned()

        def _process_work_item(self, item: Any, model_prediction_dir: str) -> Any:
            index = _row(item)
            try:
                if gate is not None and item.needs_predict and not gate.admit(item.subset, index // repeats):
                    self._predictions.returned()  # never sent: it will not return either
                    raise NotSent(f"{benchmark} {item.subset}[{index}]: the sequential rule stopped first")
                result = super()._process_work_item(item, model_prediction_dir)
            except NotSent:
                channel.emit(
                    Sample(benchmark=benchmark, subset=item.subset, index=int(index), ok=False, sent=False)
                )
                raise
            except Exception as exc:
                phase: ErrorPhase = (
                    "predict" if item.needs_predict and not item.prediction_persisted else "review"
                )
                errors.append(
                    EvalscopeErrorRecord(
                        benchmark=benchmark,
                        subset=item.subset,
                        index=int(index),
                        phase=phase,
                        error_type=type(exc).__name__,
                        message=str(exc)[:2000],
                        at=now(),
                    )
                )
                channel.emit(
                    Sample(
                        benchmark=benchmark,
                        subset=item.subset,
                        index=int(index),
                        ok=False,
                        phase=phase,
                        correct=0.0 if gate is not None else None,
                    )
                )
                raise
            correct = _correct(*result) if gate is not None else None
            channel.emit(
                Sample(benchmark=benchmark, subset=item.subset, index=int(index), ok=True, correct=correct)
            )
            return result

    EVALUATOR_REGISTRY[benchmark] = EvalpipeEvaluator


def _row(item: Any) -> int:
    """An EvalScope work item's sample id (``row × repeats + attempt``)."""
    return int(item.sample.id if item.sample is not None else item.task_state.sample_id)


def _correct(task_state: Any, sample_score: Any) -> float:
    """The summary's rule on one answered sample, as the worker sees it: review score 1 and not stopped by
    the output budget (``outcomes.classify``); no review score (batch scoring, an excluded review) is 0."""
    if sample_score is None:
        return 0.0
    choices = getattr(getattr(task_state, "output", None), "choices", None) or []
    stop = getattr(choices[0], "stop_reason", None) if choices else None
    if stop in BUDGET_STOP_REASONS:
        return 0.0
    return 1.0 if sample_score.score.main_value == 1.0 else 0.0
