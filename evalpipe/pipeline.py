"""``evalpipe run``: the stages of a run, in order, each talking to the next through the run directory.

    sample (or reload the run's manifest on --resume)
      → materialize the sampled records for EvalScope (datasets/, index_map.json)
      → [server launch + recording proxy: issue C]
      → EvalScope per benchmark (render → identity checks → cache repair on resume → run)
      → outcomes.jsonl
      → [audit + report: issue D]

Each stage is one call below so the later stages slot in without reshaping the function.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalpipe.config.models import RunConfig
from evalpipe.errors import ConfigError
from evalpipe.io import read_model
from evalpipe.rundir import RunDir
from evalpipe.schema.manifest import Manifest
from evalpipe.schema.outcomes import OutcomeRow
from evalpipe.sources.base import BenchmarkData

if TYPE_CHECKING:
    from rich.progress import Progress

    from evalpipe.evalscope_bridge.stage import StageResult
    from evalpipe.schema.evalscope import IndexMap


@dataclass
class RunResult:
    rundir: RunDir
    manifest: Manifest
    index_map: IndexMap
    evalscope: StageResult
    outcomes: list[OutcomeRow]
    resumed: bool


@dataclass
class Spine:
    """What the sampling stage hands on: where the run lives, what was selected, the loaded data."""

    rundir: RunDir
    manifest: Manifest
    datasets: dict[str, BenchmarkData]


def resolve_endpoint(cfg: RunConfig, endpoint: str | None) -> str:
    """The OpenAI base URL EvalScope talks to: ``--endpoint``, else ``server.endpoint`` (kind: endpoint)."""
    from evalpipe.evalscope_bridge.task import normalize_endpoint

    if endpoint:
        return normalize_endpoint(endpoint)
    if cfg.server.kind == "endpoint" and cfg.server.endpoint:
        return normalize_endpoint(cfg.server.endpoint)
    raise ConfigError(
        f"server.kind is {cfg.server.kind!r}: pass --endpoint URL to run against an already running "
        "OpenAI-compatible server"
    )


def sample_stage(cfg: RunConfig, *, dataset_root: Path | None, out: Path | None, allow_drift: bool) -> Spine:
    from evalpipe.samplers import sample_run

    if out is not None:
        rd = RunDir(Path(out))
        if rd.evalscope_dir.exists() or rd.outcomes.exists():
            raise ConfigError(f"{rd.root}: already holds a run's EvalScope outputs; use --resume {rd.root}")
    result = sample_run(cfg, dataset_root=dataset_root, out=out, allow_drift=allow_drift)
    return Spine(result.rundir, result.manifest, result.datasets)


def resume_stage(cfg: RunConfig, run_dir: Path, *, dataset_root: Path | None) -> Spine:
    """Reload a run's manifest (never re-sample) and the datasets its records come from."""
    from evalpipe.config.loader import load_config
    from evalpipe.schema.run import RunRecord
    from evalpipe.sources.registry import load_benchmark, load_local

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
    datasets: dict[str, BenchmarkData] = {}
    for block in manifest.benchmarks:
        name = block.benchmark
        recorded_dir = run.dataset_locations.get(name) if run else None
        if (
            dataset_root is None
            and block.dataset.kind == "local"
            and recorded_dir
            and Path(recorded_dir).is_dir()
        ):
            data = load_local(name, Path(recorded_dir), subset=cfg.benchmark(name).subset)
            data.check_unique_ids()
        else:
            data = load_benchmark(cfg, name, dataset_root)
        datasets[name] = data
    return Spine(rd, manifest, datasets)


def run(
    cfg: RunConfig,
    *,
    endpoint: str | None = None,
    dataset_root: Path | None = None,
    out: Path | None = None,
    resume: Path | None = None,
    allow_drift: bool = False,
    progress: Progress | None = None,
) -> RunResult:
    """Sample → materialize → EvalScope → outcomes against an already running server."""
    from evalpipe.evalscope_bridge.materialize import materialize
    from evalpipe.evalscope_bridge.outcomes import write_outcomes
    from evalpipe.evalscope_bridge.stage import run_evalscope
    from evalpipe.evalscope_bridge.task import check_generation

    api_url = resolve_endpoint(cfg, endpoint)
    check_generation(cfg)

    # 1. sample (or reload the manifest of the run being resumed)
    if resume is not None:
        if out is not None and Path(out).resolve() != Path(resume).resolve():
            raise ConfigError("--out and --resume name different run directories")
        spine = resume_stage(cfg, resume, dataset_root=dataset_root)
    else:
        spine = sample_stage(cfg, dataset_root=dataset_root, out=out, allow_drift=allow_drift)

    # 2. materialize exactly the sampled records, in manifest order
    index_map = materialize(spine.rundir, spine.manifest, spine.datasets, cfg)

    # 3. EvalScope, benchmark by benchmark
    stage = run_evalscope(cfg, spine.rundir, index_map, api_url=api_url, resume=resume is not None,
                          progress=progress)  # fmt: skip

    # 4. one outcome row per manifest entry
    outcomes = write_outcomes(spine.rundir, spine.manifest, index_map)

    return RunResult(spine.rundir, spine.manifest, index_map, stage, outcomes, resume is not None)
