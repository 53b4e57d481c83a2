"""Write the sampled records as local datasets EvalScope loads with its own adapters.

One HF ``datasets`` directory per benchmark, ``RunDir.datasets_dir/<benchmark>``::

    README.md                    # ``configs:`` block: config = adapter subset, split = adapter split
    <subset>/<eval_split>.parquet      # the sampled rows, in manifest order
    <subset>/<fewshot_split>.parquet   # the full few-shot split (GSM8K train, C-Eval subject dev)

Why parquet with explicit columns: the values must reach the adapter exactly as read from the source.
CSV goes through pandas type inference (``"0.50"`` → ``0.5``) and the JSON loader turns LiveCodeBench's
``contest_date`` into a timestamp the adapter then fails to parse; a parquet string column keeps the
text byte-for-byte (CRLF included).  IFEval is the exception (``.jsonl``, see ``write_config``).

Row order is manifest order, so EvalScope's positional ``index`` *i* is the *i*-th manifest entry of
that subset; the mapping is written to ``index_map.json``.

An adapter that reads a user's own files (``general_mcq``, ``general_qa``: ``load_from_disk`` with
EvalScope's ``LocalDataLoader``) gets that loader's flat layout instead (``BenchmarkMeta.layout``
``local_files``): ``<subset>_<split>.jsonl`` in the dataset folder, no README.
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalpipe.artifacts import RunDir, atomic_write_bytes, atomic_write_text, write_model
from evalpipe.artifacts.schema.evalscope import IndexMap, IndexMapEntry, MaterializedDataset
from evalpipe.artifacts.schema.manifest import Manifest, ManifestEntry
from evalpipe.benchmarks.base import BenchmarkMeta
from evalpipe.benchmarks.parts import EvalScopePart
from evalpipe.errors import ConfigError, DataError
from evalpipe.hashing import sha256_hex
from evalpipe.sources.base import BenchmarkData, SourceRecord

if TYPE_CHECKING:
    from evalpipe.resolve import ResolvedRun


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    cols: list[str] = []
    seen: set[str] = set()
    for row in rows:
        for key in row:
            if key not in seen:
                seen.add(key)
                cols.append(key)
    return cols


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> str:
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")
    atomic_write_bytes(path, data)
    return sha256_hex(data)


def write_config(
    directory: Path,
    splits: list[tuple[str, list[dict[str, Any]]]],
    *,
    all_strings: bool,
    what: str,
    fmt: str = "parquet",
) -> dict[str, str]:
    """Write one config's split files with one shared schema; returns ``{relative path: sha256}``.

    HF ``datasets`` takes a config's features from its first file and casts the others to them, so
    every split must have the same columns and types: the union of columns (a column a split lacks,
    e.g. C-Eval's ``explanation`` in val, is null there) with each type inferred over all rows.

    ``fmt="jsonl"`` (IFEval): the rows as JSON objects.  IFEval's ``kwargs`` are lists of dicts with
    different keys per instruction — often all empty, which parquet cannot store at all — and the JSON
    loader hands them to the adapter exactly as in the source.
    """

    # import cost: pyarrow, only on this path
    import pyarrow as pa
    import pyarrow.parquet as pq

    if fmt == "jsonl":
        return {
            f"{directory.name}/{split}.jsonl": _write_jsonl(directory / f"{split}.jsonl", rows)
            for split, rows in splits
        }
    cols = _columns([row for _, rows in splits for row in rows])
    types = {}
    for col in cols:
        if all_strings:
            types[col] = pa.string()
            continue
        values = [row.get(col) for _, rows in splits for row in rows]
        try:
            types[col] = pa.array(values).type
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise DataError(f"{what}: column {col!r} cannot be written as one typed column ({exc})") from None
    out: dict[str, str] = {}
    for split, rows in splits:
        arrays = {}
        for col in cols:
            try:
                arrays[col] = pa.array([row.get(col) for row in rows], type=types[col])
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise DataError(f"{what}/{split}: column {col!r} does not fit its type ({exc})") from None
        buf = io.BytesIO()
        pq.write_table(pa.table(arrays) if cols else pa.table({}), buf)
        data = buf.getvalue()
        rel = f"{directory.name}/{split}.parquet"
        atomic_write_bytes(directory / f"{split}.parquet", data)
        out[rel] = sha256_hex(data)
    return out


def _readme(configs: list[tuple[str, list[tuple[str, str]]]]) -> str:
    # import cost: yaml, only on this path
    import yaml

    block = {
        "configs": [
            {"config_name": name, "data_files": [{"split": split, "path": path} for split, path in files]}
            for name, files in configs
        ]
    }
    front = yaml.safe_dump(block, sort_keys=False, allow_unicode=True)
    return f"---\n{front}---\n\nSampled records materialized by evalpipe for EvalScope (do not edit).\n"


def _resolve_entries(
    benchmark: str, entries: list[ManifestEntry], data: BenchmarkData
) -> list[tuple[ManifestEntry, SourceRecord]]:
    by_id = {r.source_id: r for r in data.eval.records}
    out = []
    for e in entries:
        rec = by_id.get(e.source_id)
        if rec is None:
            raise DataError(
                f"{benchmark}: manifest entry {e.source_id!r} is not in the dataset at {data.location}"
            )
        if rec.record_sha256 != e.record_sha256:
            raise DataError(
                f"{benchmark}: record {e.source_id!r} changed since the manifest was written",
                details=[f"manifest: {e.record_sha256}", f"dataset:  {rec.record_sha256}"],
            )
        out.append((e, rec))
    return out


def _fewshot_records(
    benchmark: str, subset: str, data: BenchmarkData, few_shot: int, per_subset: bool
) -> list[SourceRecord]:
    if data.fewshot is None:
        raise DataError(f"{benchmark}: few_shot={few_shot} but the dataset has no few-shot split")
    if per_subset:
        recs = [r for r in data.fewshot.records if r.subset == subset]
    else:
        recs = list(data.fewshot.records)
    if len(recs) < few_shot:
        raise DataError(
            f"{benchmark}/{subset}: few_shot={few_shot} but the few-shot split has {len(recs)} rows"
        )
    return recs


REGROUPED_CONFIG = "default"  # the config an EvalScope ``reformat_subset`` adapter loads


def _write(
    out_dir: Path, config: str, splits: list[tuple[str, list[dict[str, Any]]]], f: BenchmarkMeta
) -> dict[str, str]:
    if f.layout == "local_files":  # EvalScope's LocalDataLoader reads <dataset>/<subset>_<split>.jsonl
        return {
            f"{config}_{split}.jsonl": _write_jsonl(out_dir / f"{config}_{split}.jsonl", rows)
            for split, rows in splits
        }
    return write_config(
        out_dir / config, splits, all_strings=f.all_strings, what=f"{f.name}/{config}", fmt=f.file_format
    )


def _split_names(f: BenchmarkMeta, subset: str, fewshot_rows: dict[str, int]) -> list[str]:
    return [f.eval_split] + ([f.fewshot_split] if subset in fewshot_rows and f.fewshot_split else [])


def materialize(
    rundir: RunDir,
    manifest: Manifest,
    datasets: Mapping[str, BenchmarkData],
    run: ResolvedRun,
    *,
    skip: Collection[tuple[str, str]] = (),
) -> IndexMap:
    """Write every benchmark's dataset directory (as ``run``'s plugin for it says) and ``index_map.json``.

    ``skip``: ``(benchmark, source_id)`` entries left out (prompts dropped by the context-fit preflight)."""
    rundir.datasets_dir.mkdir(parents=True, exist_ok=True)
    materialized: list[MaterializedDataset] = []
    index_entries: list[IndexMapEntry] = []
    for block in manifest.benchmarks:
        name = block.benchmark
        spec: EvalScopePart = run.benchmarks[name]
        f = spec.meta
        bench = run.config.benchmark(name)
        if f.max_few_shot is not None and bench.few_shot > f.max_few_shot:
            raise ConfigError(f"benchmark {name}: few_shot must be 0 ({name} has no few-shot split)")
        data = datasets.get(name)
        if data is None:
            raise DataError(f"{name}: dataset not loaded")
        kept = [e for e in manifest.entries_for(name) if (name, e.source_id) not in skip]
        pairs = _resolve_entries(name, kept, data)
        out_dir = rundir.datasets_dir / name
        if out_dir.exists():
            shutil.rmtree(out_dir)  # a stale subset from an earlier materialization must not survive
        if not pairs:
            continue  # every entry dropped: nothing for EvalScope to run
        out_dir.mkdir(parents=True)

        subsets: list[str] = []
        for e, _ in pairs:
            if e.subset not in subsets:
                subsets.append(e.subset)
        files: dict[str, str] = {}
        fewshot_rows: dict[str, int] = {}
        regrouped_rows: list[dict[str, Any]] = []
        pinned = bench.fingerprint is not None
        for subset in subsets:
            chosen = [(e, r) for e, r in pairs if e.subset == subset]
            rows = []
            for i, (e, rec) in enumerate(chosen):
                where = f"{rec.file}:{rec.row + 1}"
                row = spec.materialize_row(rec, pinned, where)
                question = spec.question_text(row)
                if not isinstance(question, str):
                    raise DataError(f"{where}: field {f.question_field!r} must be text")
                rows.append(row)
                ids = spec.instruction_ids(row)
                index_entries.append(
                    IndexMapEntry(
                        benchmark=name,
                        subset=subset,
                        index=i,
                        source_id=e.source_id,
                        record_sha256=e.record_sha256,
                        stratum=e.stratum,
                        question=question,
                        instruction_ids=ids,
                        choice_order=spec.choice_order(row),
                    )
                )
            if f.regrouped:
                regrouped_rows.extend(rows)
                continue
            splits: list[tuple[str, list[dict[str, Any]]]] = [(f.eval_split, rows)]
            if bench.few_shot > 0 and f.fewshot_split is not None:
                shots = _fewshot_records(name, subset, data, bench.few_shot, f.fewshot_per_subset)
                splits.append((f.fewshot_split, [dict(r.raw) for r in shots]))
                fewshot_rows[subset] = len(shots)
            files.update(_write(out_dir, subset, splits, f))
        if f.regrouped:
            # The adapter loads the one ``default`` config and regroups its rows by subset in file order:
            # the rows of each subset are contiguous and in manifest order, so index i stays the i-th entry.
            files.update(_write(out_dir, REGROUPED_CONFIG, [(f.eval_split, regrouped_rows)], f))
            configs = [
                (REGROUPED_CONFIG, [(f.eval_split, f"{REGROUPED_CONFIG}/{f.eval_split}.{f.file_format}")])
            ]
        else:
            configs = [
                (
                    subset,
                    [
                        (split, f"{subset}/{split}.{f.file_format}")
                        for split in _split_names(f, subset, fewshot_rows)
                    ],
                )
                for subset in subsets
            ]
        if f.layout == "configs":
            readme = _readme(configs)
            atomic_write_text(out_dir / "README.md", readme)
            files["README.md"] = sha256_hex(readme)
        materialized.append(
            MaterializedDataset(
                benchmark=name,
                path=str(out_dir.relative_to(rundir.root)),
                eval_split=f.eval_split,
                fewshot_split=f.fewshot_split if bench.few_shot > 0 else None,
                subsets=subsets,
                files=files,
                fewshot_rows=fewshot_rows,
            )
        )
    index_map = IndexMap(datasets=materialized, entries=index_entries)
    write_model(rundir.index_map, index_map)
    return index_map
