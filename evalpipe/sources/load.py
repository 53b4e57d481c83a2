"""Load a benchmark's full splits from a local mirror or the hub.

A local mirror holds one folder per benchmark (the layout of ``../shared/datasets``); each benchmark
module (``evalpipe/benchmarks/<name>``) declares its folder name and reads its own files.
"""

from __future__ import annotations

from pathlib import Path

from evalpipe.benchmarks import benchmark as benchmark_spec
from evalpipe.benchmarks import find
from evalpipe.config.models import BenchmarkConfig, RunConfig
from evalpipe.errors import ConfigError, DataError
from evalpipe.sources.base import BenchmarkData


def benchmark_dir(cfg: RunConfig, bench: BenchmarkConfig, dataset_root: Path | None) -> Path:
    """Local directory of a benchmark: --dataset-root wins, then source.local, then cfg.dataset_root."""
    folder = benchmark_spec(bench.name).meta.mirror_dir
    if dataset_root is not None:
        return Path(dataset_root) / folder
    if bench.source.local:
        return cfg.resolve_path(bench.source.local)
    if cfg.dataset_root:
        return cfg.resolve_path(cfg.dataset_root) / folder
    raise ConfigError(
        f"benchmarks[{bench.name}].source: no local mirror configured and hub loading not requested"
    )


def load_benchmark(cfg: RunConfig, name: str, dataset_root: Path | None = None) -> BenchmarkData:
    """Full evaluation split (+ few-shot split) of benchmark ``name`` with canonical ids and hashes."""
    bench = cfg.benchmark(name)
    local_configured = dataset_root is not None or bench.source.local or cfg.dataset_root
    if not local_configured:  # no mirror anywhere: the hub ids EvalScope's adapter declares
        from evalpipe.sources.hub import load_from_hub

        data = load_from_hub(bench)
    else:
        directory = benchmark_dir(cfg, bench, dataset_root)
        if not directory.is_dir():
            raise DataError(
                f"{directory}: dataset directory not found (benchmark {name}; "
                "without a local copy, remove --dataset-root/source.local/dataset_root to load it from the hub)"
            )
        data = load_local(name, directory, subset=bench.subset)
    data.check_unique_ids()
    return data


def load_local(name: str, directory: Path, *, subset: str | None = None) -> BenchmarkData:
    spec = find(name)
    if spec is None:
        raise ConfigError(f"unknown benchmark {name!r}")
    return spec.load_local(Path(directory), subset)
