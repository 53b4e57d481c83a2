"""Load a benchmark's full splits from a local mirror or the hub.

Local mirror layout (that of ``../shared/datasets``), any of .jsonl/.csv/.parquet per file:

* ``gsm8k/test``, ``gsm8k/train`` (few-shot split)
* ``ifeval/input_data``
* ``ceval/val/<subject>_val``, ``ceval/dev/<subject>_dev`` (few-shot split)
* ``livecodebench/*`` (every file in the folder; ids must be unique across files)
"""

from __future__ import annotations

from pathlib import Path

from evalpipe.config.models import BenchmarkConfig, RunConfig
from evalpipe.errors import ConfigError, DataError
from evalpipe.schema.sources import SourceFile
from evalpipe.sources.base import BenchmarkData, RecordHasher, SourceRecord, Split, find_file, read_rows
from evalpipe.sources.benchmarks import ceval_record, gsm8k_record, ifeval_record, lcb_record

# The folder of each benchmark inside a mirror root, and its EvalScope split names.
MIRROR_DIRS = {"gsm8k": "gsm8k", "ifeval": "ifeval", "ceval": "ceval", "live_code_bench": "livecodebench"}
EVAL_SPLIT = {"gsm8k": "test", "ifeval": "train", "ceval": "val", "live_code_bench": "test"}
FEWSHOT_SPLIT = {"gsm8k": "train", "ceval": "dev"}
DEFAULT_SUBSET = {"gsm8k": "main", "ifeval": "default", "ceval": None, "live_code_bench": "release_v6"}


def benchmark_dir(cfg: RunConfig, bench: BenchmarkConfig, dataset_root: Path | None) -> Path:
    """Local directory of a benchmark: --dataset-root wins, then source.local, then cfg.dataset_root."""
    if dataset_root is not None:
        return Path(dataset_root) / MIRROR_DIRS[bench.name]
    if bench.source.local:
        return cfg.resolve_path(bench.source.local)
    if cfg.dataset_root:
        return cfg.resolve_path(cfg.dataset_root) / MIRROR_DIRS[bench.name]
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
            raise DataError(f"{directory}: dataset directory not found (benchmark {name})")
        data = load_local(name, directory, subset=bench.subset)
    data.check_unique_ids()
    return data


def _rows(path: Path, build) -> tuple[list[SourceRecord], SourceFile]:
    rows, info = read_rows(path)
    hasher = RecordHasher()
    out = []
    try:
        for row_index, (line, raw) in enumerate(rows):
            out.append(hasher.add(build(raw, file=str(path), line=line, row=row_index)))
    finally:
        hasher.finish()
    return out, info.result()


def load_local(name: str, directory: Path, *, subset: str | None = None) -> BenchmarkData:
    directory = Path(directory)
    if name == "gsm8k":
        return _load_gsm8k(directory)
    if name == "ifeval":
        return _load_ifeval(directory)
    if name == "ceval":
        return _load_ceval(directory)
    if name == "live_code_bench":
        return _load_lcb(directory, subset or DEFAULT_SUBSET["live_code_bench"])
    raise ConfigError(f"unknown benchmark {name!r}")


def _load_gsm8k(directory: Path) -> BenchmarkData:
    test, tinfo = _rows(find_file(directory, "test"), gsm8k_record)
    train, rinfo = _rows(find_file(directory, "train"), gsm8k_record)
    return BenchmarkData(
        benchmark="gsm8k",
        kind="local",
        location=str(directory),
        eval=Split("test", test, [tinfo]),
        fewshot=Split("train", train, [rinfo]),
    )


def _load_ifeval(directory: Path) -> BenchmarkData:
    recs, info = _rows(find_file(directory, "input_data"), ifeval_record)
    return BenchmarkData(
        benchmark="ifeval", kind="local", location=str(directory), eval=Split("train", recs, [info])
    )


def _ceval_split(directory: Path, split: str) -> tuple[list[SourceRecord], list]:
    split_dir = directory / split
    if not split_dir.is_dir():
        raise DataError(f"{split_dir}: C-Eval {split} directory not found")
    files = sorted(p for p in split_dir.iterdir() if p.suffix in (".csv", ".jsonl", ".parquet"))
    if not files:
        raise DataError(f"{split_dir}: no <subject>_{split}.csv files")
    records: list[SourceRecord] = []
    infos = []
    suffix = f"_{split}"
    for path in files:
        if not path.stem.endswith(suffix):
            raise DataError(f"{path}: expected a file named <subject>{suffix}{path.suffix}")
        subject = path.stem[: -len(suffix)]

        def build(raw, *, file, line, row, subject=subject):
            return ceval_record(raw, subject=subject, file=file, line=line, row=row)

        recs, info = _rows(path, build)
        records.extend(recs)
        infos.append(info)
    return records, infos


def _load_ceval(directory: Path) -> BenchmarkData:
    val, vinfo = _ceval_split(directory, "val")
    dev, dinfo = _ceval_split(directory, "dev")
    return BenchmarkData(
        benchmark="ceval",
        kind="local",
        location=str(directory),
        eval=Split("val", val, vinfo),
        fewshot=Split("dev", dev, dinfo),
    )


def _load_lcb(directory: Path, subset: str) -> BenchmarkData:
    files = sorted(p for p in directory.iterdir() if p.suffix in (".jsonl", ".parquet"))
    if not files:
        raise DataError(f"{directory}: no LiveCodeBench .jsonl/.parquet files")
    records: list[SourceRecord] = []
    infos = []
    for path in files:

        def build(raw, *, file, line, row):
            return lcb_record(raw, subset=subset, file=file, line=line, row=row)

        recs, info = _rows(path, build)
        records.extend(recs)
        infos.append(info)
    return BenchmarkData(
        benchmark="live_code_bench", kind="local", location=str(directory), eval=Split("test", records, infos)
    )
