"""Load a benchmark's full splits from a local mirror or the hub.

A local mirror holds one folder per benchmark (the layout of ``../shared/datasets``); each benchmark
module (``evalpipe/benchmarks/<name>``) declares its folder name and reads its own files.  A benchmark
that reads your own files (``general_mcq``, ``general_qa``) reads what ``source.local`` names — a folder
in EvalScope's layout or one file — with the columns ``source.id_column``/``stratify_column`` name.
"""

from __future__ import annotations

from pathlib import Path

from evalpipe.benchmarks import benchmark as benchmark_spec
from evalpipe.benchmarks import find
from evalpipe.benchmarks.base import UserColumns
from evalpipe.config.models import BenchmarkConfig, DatasetSource, RunConfig
from evalpipe.errors import ConfigError, DataError
from evalpipe.sources.base import BenchmarkData


def benchmark_dir(cfg: RunConfig, bench: BenchmarkConfig, dataset_root: Path | None) -> Path:
    """Local directory of a benchmark: --dataset-root wins, then source.local, then cfg.dataset_root.

    Your own files (``general_mcq``/``general_qa``) are where ``source.local`` says, whatever the mirror."""
    meta = benchmark_spec(bench.name).meta
    if meta.user_files and bench.source.local:
        return cfg.resolve_path(bench.source.local)
    if dataset_root is not None:
        return Path(dataset_root) / meta.mirror_dir
    if bench.source.local:
        return cfg.resolve_path(bench.source.local)
    if cfg.dataset_root:
        return cfg.resolve_path(cfg.dataset_root) / meta.mirror_dir
    raise ConfigError(
        f"benchmarks[{bench.name}].source: no local mirror configured and hub loading not requested"
    )


def load_benchmark(cfg: RunConfig, name: str, dataset_root: Path | None = None) -> BenchmarkData:
    """Full evaluation split (+ few-shot split) of benchmark ``name`` with canonical ids and hashes."""
    bench = cfg.benchmark(name)
    user_files = benchmark_spec(name).meta.user_files
    local_configured = dataset_root is not None or bench.source.local or cfg.dataset_root
    if not local_configured:  # no mirror anywhere: the hub ids EvalScope's adapter declares
        if user_files:
            raise ConfigError(
                f"benchmarks[{name}].source.local: {name} reads your own files — name your folder "
                "(EvalScope's layout) or file"
            )
        from evalpipe.sources.hub import load_from_hub

        data = load_from_hub(bench)
    else:
        directory = benchmark_dir(cfg, bench, dataset_root)
        if user_files and not directory.exists():
            raise DataError(f"{directory}: not found (benchmarks[{name}].source.local: your folder or file)")
        if not user_files and not directory.is_dir():
            raise DataError(
                f"{directory}: dataset directory not found (benchmark {name}; "
                "without a local copy, remove --dataset-root/source.local/dataset_root to load it from the hub)"
            )
        data = load_local(name, directory, subset=bench.subset, source=bench.source)
    data.check_unique_ids()
    return data


def load_local(
    name: str, directory: Path, *, subset: str | None = None, source: DatasetSource | None = None
) -> BenchmarkData:
    """A benchmark's splits from its local folder (``source``: the columns the config names, if any)."""
    spec = find(name)
    if spec is None:
        raise ConfigError(f"unknown benchmark {name!r}")
    if source is not None:
        spec = spec.with_columns(UserColumns(source.id_column, source.stratify_column))
    return spec.load_local(Path(directory), subset)
