"""The EvalScope ``TaskConfig`` arguments for one benchmark of a run (EvalScope's config keys live here).

One task per benchmark, each with its own work directory, because EvalScope's ``generation_config``
is per task and the run config sets ``max_tokens`` per benchmark.  The API key is never part of the
task, nor of the worker's environment: the recording proxy adds it to the requests it forwards.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalpipe.config.models import RunConfig
from evalpipe.errors import ConfigError
from evalpipe.hashing import attempt_seed
from evalpipe.server.chat_template import thinking_kwargs

if TYPE_CHECKING:
    from evalpipe.resolve import ResolvedRun

# Keys that may legitimately differ between a run and its resume: transport, resume mechanics, and
# paths inside the run directory (always ``datasets/<benchmark>`` and ``evalscope/<benchmark>``, so a
# run directory can be moved or copied and still be resumed).
RESUME_VOLATILE_KEYS = frozenset({"api_url", "use_cache", "rerun_review", "work_dir"})


def model_id(served_name: str) -> str:
    """File-system-safe model id: EvalScope names its predictions/reviews directories after it."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", served_name).strip("._")
    return safe or "model"


def check_generation(run: ResolvedRun) -> None:
    """Settings the bridge cannot honour without breaking the index ↔ manifest mapping (each benchmark's
    own, from its plugin as the run resolved it)."""
    cfg = run.config
    if cfg.generation.n != 1:
        raise ConfigError(
            "generation.n: must be 1 (EvalScope turns n > 1 into repeated samples; ask for them with "
            "generation.repeats, which keeps every attempt tied to its manifest entry)"
        )
    for bench in cfg.benchmarks:
        bad = sorted(run.benchmarks[bench.name].meta.forbidden_extra_params & bench.extra_params.keys())
        if bad:
            raise ConfigError(
                f"benchmark {bench.name}: extra_params {', '.join(bad)} make EvalScope drop sampled rows; "
                "filter dates in the sampling rule instead"
            )
    thinking_kwargs(cfg)  # ConfigError naming model.thinking when the toggle is unknown
    env = cfg.server.api_key_env
    if env and not os.environ.get(env):
        raise ConfigError(f"server.api_key_env: environment variable {env} is not set")


#: Seconds added to the client-side bound for connecting and transferring the answer after the server ends.
CLIENT_TIMEOUT_MARGIN_S = 60.0


def client_timeout_s(cfg: RunConfig) -> float:
    """EvalScope's own request timeout: long enough that time queued in the proxy never trips it.

    The proxy enforces ``request_timeout_s`` on server time and admits attempts first come first served.
    Each benchmark's EvalScope keeps at most ``concurrency`` (its ``eval_batch_size``) requests open, so an
    attempt has at most ``benchmarks running together × concurrency`` attempts ahead of it, which leave the
    ``concurrency`` slots in at most that many rounds of ``request_timeout_s`` each; then its own round.
    """
    g = cfg.generation
    together = len(cfg.benchmarks) if g.schedule == "pipelined" else 1
    return g.request_timeout_s * (max(together, 1) + 1) + CLIENT_TIMEOUT_MARGIN_S


def generation_config(cfg: RunConfig, benchmark: str) -> dict[str, Any]:
    g = cfg.generation
    out: dict[str, Any] = {
        "temperature": g.temperature,
        "top_p": g.top_p,
        "max_tokens": cfg.max_tokens_for(benchmark),
        # request_timeout_s itself is enforced by the proxy on server time (queue wait excluded)
        "timeout": client_timeout_s(cfg),
        # EvalScope's `retries` is the total number of attempts; ours counts re-sends after a failure
        "retries": g.retries + 1,
        "retry_interval": g.retry_interval_s,
        "stream": g.stream,
    }
    if g.seed is not None:
        out["seed"] = g.seed
    toggle = thinking_kwargs(cfg)
    if toggle is not None:
        out["extra_body"] = {"chat_template_kwargs": toggle}
    return out


def build_task(
    cfg: RunConfig,
    benchmark: str,
    *,
    api_url: str,
    dataset_dir: Path,
    subsets: list[str],
    work_dir: Path,
    use_cache: bool = False,
    rerun_review: bool = False,
) -> dict[str, Any]:
    """Keyword arguments of ``evalscope.TaskConfig`` for ``benchmark`` (JSON-serialisable)."""
    bench = cfg.benchmark(benchmark)
    dataset_args: dict[str, Any] = {
        "dataset_id": str(Path(dataset_dir).resolve()),
        "subset_list": list(subsets),
        "few_shot_num": bench.few_shot,
    }
    if bench.extra_params:
        dataset_args["extra_params"] = dict(bench.extra_params)
    if bench.review_timeout_s is not None:  # BenchmarkMeta.review_timeout, set from dataset_args
        dataset_args["review_timeout"] = bench.review_timeout_s
    work = str(Path(work_dir).resolve())
    return {
        "model": cfg.model.served_name,
        "model_id": model_id(cfg.model.served_name),
        "eval_type": "openai_api",
        "api_url": api_url,
        "datasets": [benchmark],
        "dataset_args": {benchmark: dataset_args},
        "generation_config": generation_config(cfg, benchmark),
        "eval_batch_size": cfg.generation.concurrency,
        # Retries are EvalScope's (generation.retries, each attempt visible); the OpenAI SDK's own
        # silent retries are switched off so one failed request is one recorded failure.
        "model_args": {"max_retries": 0},
        "work_dir": work,
        "no_timestamp": True,
        "seed": cfg.sampling_seed,
        "ignore_errors": True,
        "analysis_report": False,
        "use_cache": work if use_cache else None,
        "rerun_review": rerun_review,
        # absent at 1 (EvalScope's default), so a run recorded before repeats existed still resumes
        **({"repeats": cfg.task_attempts(benchmark)} if cfg.task_attempts(benchmark) > 1 else {}),
    }


def evalscope_index(position: int, attempt: int, repeats: int) -> int:
    """EvalScope's sample index of ``attempt`` at a dataset position: its loader copies each row ``repeats``
    times in a row and renumbers (``MemoryDataset.reindex``: id = position × repeats + attempt, group_id =
    position)."""
    return position * repeats + attempt


def request_seeds(
    cfg: RunConfig, benchmark: str, entries: Iterable[tuple[str, int, str]], repeats: int
) -> dict[str, dict[int, int]] | None:
    """Subset → EvalScope sample index → the seed its request carries, for entries ``(subset, position,
    source_id)``: attempt k of a sample sends ``attempt_seed(generation.seed, benchmark, source_id, k)``
    (distinct per attempt, the same in every arm of a paired run); None when the run sets no seed."""
    if cfg.generation.seed is None:
        return None
    out: dict[str, dict[int, int]] = {}
    for subset, position, source_id in entries:
        for attempt in range(repeats):
            seed = attempt_seed(cfg.generation.seed, benchmark, source_id, attempt)
            assert seed is not None
            out.setdefault(subset, {})[evalscope_index(position, attempt, repeats)] = seed
    return out


def task_repeats(task: dict[str, Any]) -> int:
    value = task.get("repeats", 1)
    return value if isinstance(value, int) and value > 0 else 1


def _comparable(task: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in task.items() if k not in RESUME_VOLATILE_KEYS}
    gen = out.get("generation_config")
    if isinstance(gen, dict):  # the client timeout is transport (it depends on the schedule, not the answers)
        out["generation_config"] = {k: v for k, v in gen.items() if k != "timeout"}
    args = out.get("dataset_args")
    if isinstance(args, dict):
        out["dataset_args"] = {
            name: {k: v for k, v in a.items() if k != "dataset_id"} if isinstance(a, dict) else a
            for name, a in args.items()
        }
    return out


def task_differences(recorded: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """Keys whose values differ between two tasks (ignoring transport, resume mechanics, run-dir paths)."""
    a, b = _comparable(recorded), _comparable(current)
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
