"""Hub loading: the dataset ids EvalScope's adapters declare, via ModelScope or Hugging Face.

Only used when a benchmark has no local mirror; needs network access to the hub (never in tests).
Rows are passed through the same canonicalisation as local files, so hashes and fingerprints agree
with a local mirror of the same content.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from evalpipe.config.models import BenchmarkConfig
from evalpipe.errors import DataError
from evalpipe.sources.base import BenchmarkData, SourceRecord, Split, canonical_value
from evalpipe.sources.benchmarks import ceval_record, gsm8k_record, ifeval_record, lcb_record


def adapter_dataset_ids(name: str) -> tuple[str, str | None, list[str]]:
    """(ModelScope id, HF id, subset list) that EvalScope's adapter for ``name`` declares."""
    import evalscope.benchmarks  # noqa: F401  (registers the adapters)
    from evalscope.api.registry import BENCHMARK_REGISTRY

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


def _records(
    rows: Iterable[dict[str, Any]], where: str, build: Callable[..., SourceRecord]
) -> list[SourceRecord]:
    return [build(raw, file=where, line=i + 1, row=i) for i, raw in enumerate(rows)]


def load_from_hub(bench: BenchmarkConfig) -> BenchmarkData:
    ms_id, hf_id, subsets = adapter_dataset_ids(bench.name)
    repo = bench.source.hub or (hf_id if bench.source.hub_backend == "huggingface" else ms_id)
    if not repo:
        raise DataError(f"{bench.name}: no hub dataset id declared by EvalScope; configure source.hub")
    where = f"{bench.source.hub_backend}:{repo}@{bench.source.revision or 'default'}"
    if bench.name == "gsm8k":
        test = _records(_load_split(bench, repo, "main", "test"), where, gsm8k_record)
        train = _records(_load_split(bench, repo, "main", "train"), where, gsm8k_record)
        ev, fs = Split("test", test), Split("train", train)
    elif bench.name == "ifeval":
        ev, fs = Split("train", _records(_load_split(bench, repo, None, "train"), where, ifeval_record)), None
    elif bench.name == "ceval":
        val: list[SourceRecord] = []
        dev: list[SourceRecord] = []
        for subject in subsets:

            def build(raw, *, file, line, row, subject=subject):
                return ceval_record(raw, subject=subject, file=file, line=line, row=row)

            val += _records(_load_split(bench, repo, subject, "val"), f"{where}/{subject}", build)
            dev += _records(_load_split(bench, repo, subject, "dev"), f"{where}/{subject}", build)
        ev, fs = Split("val", val), Split("dev", dev)
    else:
        subset = bench.subset or "release_v6"

        def build_lcb(raw, *, file, line, row):
            return lcb_record(raw, subset=subset, file=file, line=line, row=row)

        ev, fs = Split("test", _records(_load_split(bench, repo, subset, "test"), where, build_lcb)), None
    return BenchmarkData(
        benchmark=bench.name,
        kind="hub",
        location=where,
        eval=ev,
        fewshot=fs,
        hub_id=repo,
        revision=bench.source.revision,
    )
