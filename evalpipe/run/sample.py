"""The run's first stage: sample a manifest, or reload the manifest of the run being resumed.

What it hands on (:class:`Spine`) is what every later stage keys on: the run directory, the manifest and the
loaded datasets its records come from.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.run import RunRecord
from evalpipe.config.loader import load_config
from evalpipe.config.models import RunConfig
from evalpipe.errors import ConfigError
from evalpipe.samplers import sample_run
from evalpipe.samplers.loading import load_benchmark, load_local
from evalpipe.sources.base import BenchmarkData


@dataclass
class Spine:
    """What the sampling stage hands on: where the run lives, what was selected, the loaded data."""

    rundir: RunDir
    manifest: Manifest
    datasets: dict[str, BenchmarkData]


def sample_stage(cfg: RunConfig, *, dataset_root: Path | None, out: Path | None, allow_drift: bool) -> Spine:
    if out is not None:
        rd = RunDir(Path(out))
        if rd.evalscope_dir.exists() or rd.outcomes.exists():
            raise ConfigError(f"{rd.root}: already holds a run's EvalScope outputs; use --resume {rd.root}")
    result = sample_run(cfg, dataset_root=dataset_root, out=out, allow_drift=allow_drift)
    return Spine(result.rundir, result.manifest, result.datasets)


def resume_stage(cfg: RunConfig, run_dir: Path, *, dataset_root: Path | None) -> Spine:
    """Reload a run's manifest (never re-sample) and the datasets its records come from."""
    rd = RunDir(Path(run_dir))
    if not rd.manifest.is_file():
        raise not_a_run_directory(rd.root)
    manifest = read_model(rd.manifest, Manifest)
    run = read_model(rd.run_record, RunRecord) if rd.run_record.is_file() else None
    if run is not None:
        check_same_speed_flags(run, cfg, rd)
    if rd.config_copy.is_file():
        started = load_config(rd.config_copy, check_sampling=False)
        a, b = started.model_dump(mode="json"), cfg.model_dump(mode="json")
        diffs = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        if diffs:
            raise ConfigError(
                f"--resume {rd.root}: the config differs from the one the run started with ({rd.config_copy})",
                details=[f"{k} differs" for k in diffs],
            )
    datasets = load_manifest_datasets(cfg, manifest, run, dataset_root=dataset_root)
    return Spine(rd, manifest, datasets)


def not_a_run_directory(run_dir: Path) -> ConfigError:
    """The refusal of ``--resume`` on a directory without a manifest: a resume never samples."""
    return ConfigError(f"--resume {RunDir(Path(run_dir)).root}: no manifest.json (not a run directory)")


def _speed_flags(no_speed: bool, waived: bool) -> str:
    return (
        " ".join(f for f, on in (("--no-speed", no_speed), ("--waive-speed-gate", waived)) if on) or "neither"
    )


def check_same_speed_flags(run: RunRecord, cfg: RunConfig, rd: RunDir) -> None:
    """A run is resumed with the ``--no-speed`` / ``--waive-speed-gate`` it started with (run.json): the
    speed section and its gate are part of what the run measures."""
    started = (run.no_speed, run.speed_gate_waived)
    now = (cfg.no_speed, cfg.speed_gate_waived)
    if started != now:
        raise ConfigError(
            f"--resume {rd.root}: the run started with {_speed_flags(*started)} ({rd.run_record}); "
            f"resume it with the same (given: {_speed_flags(*now)})"
        )


def load_manifest_datasets(
    cfg: RunConfig, manifest: Manifest, run: RunRecord | None, *, dataset_root: Path | None
) -> dict[str, BenchmarkData]:
    """The datasets a manifest's records come from: ``--dataset-root``, else the recorded local copy."""
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
