"""The EvalScope worker process: ``python -m evalpipe.evalscope_bridge.worker``.

EvalScope runs in a child process per benchmark (see ``runner``) so that its process-wide side effects
— ``logging.basicConfig(force=True)`` at import, tqdm bars, the HF ``datasets`` cache location read at
import, the patches below — never leak into evalpipe or a test session, and so that an interrupt can
end it (and the LiveCodeBench test processes it spawns) as one process group.

Protocol (one JSON object per line):

* stdin, line 1: ``WorkerSpec`` (its task is the one that runs).
* channel → parent: ``{"event": "rendered", "samples": [...]}`` — every sample as the adapter built it
  (subset, index, prompt hash, final user message), before any request is sent.  On a fresh run the
  samples come from the dataset load of the run itself (EvalScope's ``load_dataset``), which then waits
  for the parent's answer: no separate rendering pass, and what was checked is what is sent.  On a resume
  (``use_cache``) the dataset is loaded once before ``run_task``, because EvalScope validates and reads its
  cache before its own load, and the parent checks prompts and repairs the cache before that.
* stdin, line 2: ``{"action": "run", "task": {...}}`` (the same task) or ``{"action": "exit"}``.
* channel → parent: ``cache_identity`` (resume only), ``start``, one ``sample`` per finished sample,
  ``finished``; ``failed`` before a non-zero exit.

Inside the child: NLTK data is never downloaded (EvalScope would try at scoring time), and an
``Evaluator`` subclass reports progress and records each sample whose request or review raised —
EvalScope's ``ignore_errors`` only counts them.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evalpipe.schema.sandbox import SandboxRecord


class WorkerSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    benchmark: str
    task: dict[str, Any]
    api_key_env: str | None = None
    errors_log: str
    channel_fd: int
    #: The run's code sandbox (``code_sandbox.json``): required when the benchmark executes model code.
    code_sandbox: SandboxRecord | None = None


class Channel:
    """Line-oriented JSON events to the parent (thread-safe: EvalScope reports from worker threads)."""

    def __init__(self, fd: int) -> None:
        self._fh = os.fdopen(fd, "w", encoding="utf-8", buffering=1)
        self._lock = threading.Lock()

    def emit(self, event: str, **fields: Any) -> None:
        line = json.dumps({"event": event, **fields}, ensure_ascii=False)
        with self._lock:
            self._fh.write(line + "\n")
            self._fh.flush()

    def close(self) -> None:
        self._fh.close()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


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


def rendered_samples(loaded: dict[str, Any], repeats: int) -> list[dict[str, Any]]:
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
                {
                    "subset": subset,
                    "index": sample.id // repeats,
                    "prompt_sha256": prompt_sha256(messages),
                    "n_messages": len(messages),
                    "user_text": message_text(users[-1].get("content")) if users else None,
                }
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


class NotRun(BaseException):
    """The parent answered the rendering with ``exit``: leave ``run_task`` before any request.

    A ``BaseException`` so that EvalScope's ``except Exception`` handlers do not turn it into an error.
    """


class RenderGate:
    """Wraps the adapter's ``load_dataset``: report the loaded samples, then wait for the parent's verdict."""

    def __init__(
        self, channel: Channel, version: str, task: dict[str, Any], cache_identity: dict[str, Any] | None
    ):
        self.channel = channel
        self.version = version
        self.task = task
        self.cache_identity = cache_identity
        self.passed = False

    def install(self, adapter: Any) -> None:
        load = adapter.load_dataset

        def gated_load(*args: Any, **kwargs: Any) -> Any:
            loaded = load(*args, **kwargs)
            if not self.passed:
                self.wait(loaded)
            return loaded

        adapter.load_dataset = gated_load

    def wait(self, loaded: dict[str, Any]) -> None:
        repeats = int(self.task.get("repeats") or 1)
        self.channel.emit(
            "rendered", evalscope_version=self.version, samples=rendered_samples(loaded, repeats)
        )
        command = json.loads(sys.stdin.readline() or '{"action": "exit"}')
        if command.get("action") != "run":
            raise NotRun
        if command.get("task") != self.task:
            raise RuntimeError(
                "the parent asked to run a different task than the one this worker was started with"
            )
        self.passed = True
        if self.cache_identity is not None:
            self.channel.emit("cache_identity", **self.cache_identity)


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


def install_evaluator(benchmark: str, channel: Channel, errors_log: str, gate: RenderGate) -> None:
    """Register an Evaluator for ``benchmark`` that reports its loaded samples through ``gate`` before any
    request, progress, and per-sample errors."""
    from evalscope.api.registry import EVALUATOR_REGISTRY
    from evalscope.evaluator.evaluator import DefaultEvaluator

    from evalpipe.io import JsonlAppender
    from evalpipe.schema.evalscope import ErrorPhase, EvalscopeErrorRecord

    errors = JsonlAppender(Path(errors_log))
    lock = threading.Lock()

    # EvalScope ships no type information: its classes, and the work items below, are Any to mypy.
    class EvalpipeEvaluator(DefaultEvaluator):  # type: ignore[misc]  # DefaultEvaluator is Any (untyped EvalScope)
        def __init__(self, benchmark: Any, *args: Any, **kwargs: Any) -> None:
            super().__init__(benchmark, *args, **kwargs)
            gate.install(benchmark)

        def _collect_work_items(self, dataset_dict: Any) -> Any:
            ctx = super()._collect_work_items(dataset_dict)
            channel.emit("start", total=ctx.grand_total, cached=ctx.total_cached)
            return ctx

        def _process_work_item(self, item: Any, model_prediction_dir: str) -> Any:
            index = item.sample.id if item.sample is not None else item.task_state.sample_id
            try:
                result = super()._process_work_item(item, model_prediction_dir)
            except Exception as exc:
                phase: ErrorPhase = (
                    "predict" if item.needs_predict and not item.prediction_persisted else "review"
                )
                record = EvalscopeErrorRecord(
                    benchmark=benchmark,
                    subset=item.subset,
                    index=int(index),
                    phase=phase,
                    error_type=type(exc).__name__,
                    message=str(exc)[:2000],
                    at=_now(),
                )
                with lock:
                    errors.append(record)
                    errors.fsync()
                channel.emit("sample", subset=item.subset, index=int(index), ok=False, phase=phase)
                raise
            channel.emit("sample", subset=item.subset, index=int(index), ok=True)
            return result

    EVALUATOR_REGISTRY[benchmark] = EvalpipeEvaluator


def main() -> int:
    spec = WorkerSpec.model_validate_json(sys.stdin.readline())
    channel = Channel(spec.channel_fd)
    try:
        import evalscope

        register_adapter(spec.benchmark)
        install_nltk_guard(spec.benchmark)
        task_kwargs: dict[str, Any] = spec.task
        cache_identity = None
        if task_kwargs.get("use_cache") and not task_kwargs.get("rerun_review"):
            problem = cache_identity_problem(task_kwargs)
            if problem is not None:
                task_kwargs = {**task_kwargs, "rerun_review": True}
            cache_identity = {"rerun_review": problem is not None, "reason": problem}
        gate = RenderGate(channel, evalscope.__version__, spec.task, cache_identity)
        if spec.task.get("use_cache"):
            # a resume: EvalScope validates and reads its cache before it loads the dataset, and the
            # parent must see the prompts (recorded hashes) and repair the cache before either happens
            gate.wait(load_separately(spec.task, spec.benchmark))
        install_evaluator(spec.benchmark, channel, spec.errors_log, gate)
        prepare_code_execution(spec.benchmark, spec.code_sandbox)

        from evalscope import TaskConfig, run_task

        api_key = os.environ.get(spec.api_key_env) if spec.api_key_env else None
        task = TaskConfig(**task_kwargs, api_key=api_key or "EMPTY")
        run_task(task)
        if not gate.passed:
            raise RuntimeError(f"EvalScope finished without loading the {spec.benchmark} dataset")
        channel.emit("finished", ran=True, rerun_review=bool(task_kwargs.get("rerun_review")))
        return 0
    except NotRun:
        channel.emit("finished", ran=False)
        return 0
    except BaseException as exc:
        traceback.print_exc()
        channel.emit("failed", error=f"{type(exc).__name__}: {exc}"[:2000])
        return 1
    finally:
        channel.close()


if __name__ == "__main__":  # the guard LiveCodeBench's spawned test processes rely on
    sys.exit(main())
