"""Hub loading: the dataset ids EvalScope's adapters declare, via ModelScope or Hugging Face.

Only used when a benchmark has no local mirror; needs network access to the hub (never in tests).
Rows are passed through the same canonicalisation as local files, so hashes and fingerprints agree
with a local mirror of the same content.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evalpipe.config.models import BenchmarkConfig
from evalpipe.errors import DataError
from evalpipe.sources.base import BenchmarkData, canonical_value


def adapter_dataset_ids(name: str) -> tuple[str, str | None, list[str]]:
    """(ModelScope id, HF id, subset list) that EvalScope's adapter for ``name`` declares."""
    import evalscope.benchmarks  # noqa: F401  (registers the adapters)
    from evalscope.api.registry import BENCHMARK_REGISTRY

    from evalpipe.benchmarks import find

    spec = find(name)
    if spec is not None:
        spec.register_evalscope_adapter()
    meta = BENCHMARK_REGISTRY.get(name)
    if meta is None:
        raise DataError(f"EvalScope has no benchmark named {name!r}")
    return meta.dataset_id, getattr(meta, "hf_dataset_id", None), list(meta.subset_list)


def _load_split(
    bench: BenchmarkConfig, repo: str, subset: str | None, split: str
) -> Iterable[dict[str, Any]]:
    try:
        if bench.source.hub_backend == "huggingface":
            from datasets import load_dataset

            ds = load_dataset(repo, subset, split=split, revision=bench.source.revision)
        else:
            from modelscope import MsDataset

            ds = MsDataset.load(
                repo, subset_name=subset, split=split, version=bench.source.revision or "master"
            )
    except Exception as exc:  # hub clients raise many types
        raise DataError(
            f"hub dataset {repo} [{subset}/{split}]: could not load ({type(exc).__name__}: {exc})"
        ) from None
    for row in ds:
        yield {k: canonical_value(v) for k, v in dict(row).items()}


def load_from_hub(bench: BenchmarkConfig) -> BenchmarkData:
    ms_id, hf_id, subsets = adapter_dataset_ids(bench.name)
    repo = bench.source.hub or (hf_id if bench.source.hub_backend == "huggingface" else ms_id)
    if not repo:
        raise DataError(f"{bench.name}: no hub dataset id declared by EvalScope; configure source.hub")
    where = f"{bench.source.hub_backend}:{repo}@{bench.source.revision or 'default'}"
    from evalpipe.benchmarks import benchmark

    def rows(subset: str | None, split: str) -> Iterable[dict[str, Any]]:
        return _load_split(bench, repo, subset, split)

    splits = benchmark(bench.name).load_hub(rows, where, bench.subset, subsets)
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
