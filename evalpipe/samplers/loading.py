"""Load a configured benchmark's full splits from a local mirror or the hub.

Here, beside the samplers that read it, because loading asks the benchmark's plugin (its mirror folder, its
reader, its EvalScope adapter's hub ids) — ``evalpipe.benchmarks`` imports its own modules by name, so a module
that asks the registry lives outside it; ``evalpipe.sources`` below holds what every benchmark's reader shares (the
canonical rows, the file readers, the hub client and its offline check) and names no benchmark.

A local mirror holds one folder per benchmark (the layout of ``../shared/datasets``); each benchmark
module (``evalpipe/benchmarks/<name>``) declares its folder name and reads its own files.  A benchmark
that reads your own files (``general_mcq``, ``general_qa``) reads what ``source.local`` names — a folder
in EvalScope's layout or one file — with the columns ``source.id_column``/``stratify_column`` name.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evalpipe.benchmarks import benchmark as benchmark_spec
from evalpipe.benchmarks import find
from evalpipe.benchmarks.base import UserColumns
from evalpipe.benchmarks.parts import DataPart, EvalScopePart
from evalpipe.config.models import BenchmarkConfig, DatasetSource, RunConfig
from evalpipe.errors import ConfigError, DataError
from evalpipe.sources import hub
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
    spec: DataPart | None = find(name)
    if spec is None:
        raise ConfigError(f"unknown benchmark {name!r}")
    if source is not None:
        spec = spec.with_columns(UserColumns(source.id_column, source.stratify_column))
    return spec.load_local(Path(directory), subset)


def adapter_dataset_ids(name: str) -> tuple[str, str | None, list[str]]:
    """(ModelScope id, HF id, subset list) that EvalScope's adapter for ``name`` declares."""
    # import cost: evalscope, only on this path
    import evalscope.benchmarks  # noqa: F401  (registers the adapters)
    from evalscope.api.registry import BENCHMARK_REGISTRY

    binding: EvalScopePart | None = find(name)
    if binding is not None:
        binding.register_evalscope_adapter()
    meta = BENCHMARK_REGISTRY.get(name)
    if meta is None:
        raise DataError(f"EvalScope has no benchmark named {name!r}")
    return meta.dataset_id, getattr(meta, "hf_dataset_id", None), list(meta.subset_list)


#: Seconds the reachability check may take (name resolution and TCP connect together).


def load_from_hub(bench: BenchmarkConfig) -> BenchmarkData:
    ms_id, hf_id, subsets = adapter_dataset_ids(bench.name)
    repo = bench.source.hub or (hf_id if bench.source.hub_backend == "huggingface" else ms_id)
    if not repo:
        raise DataError(f"{bench.name}: no hub dataset id declared by EvalScope; configure source.hub")
    unreachable = hub.hub_unreachable(bench.source.hub_backend)
    if unreachable is not None:  # offline: one bounded check instead of the client's own deadline
        raise hub.hub_failure(bench, repo, f"hub not reachable: {unreachable}")
    where = f"{bench.source.hub_backend}:{repo}@{bench.source.revision or 'default'}"

    def rows(subset: str | None, split: str) -> Iterable[dict[str, Any]]:
        return hub.load_split(bench, repo, subset, split)

    splits = benchmark_spec(bench.name).load_hub(rows, where, bench.subset, subsets)
    ev, fs = splits.eval, splits.fewshot
    return BenchmarkData(
        benchmark=bench.name,
        kind="hub",
        location=where,
        eval=ev,
        fewshot=fs,
        hub_id=repo,
        revision=bench.source.revision,
    )
