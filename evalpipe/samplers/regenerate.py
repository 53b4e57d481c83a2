"""Generated items made again from their manifest entries (``verify-sample``).

Every entry of a generated benchmark (kv_probe) records the parameters it was made from (``generated``:
seed, task, length, placement, depth, index, offsets).  Each is regenerated from those parameters and the
generator's spec — not from the re-derived selection — and must give

* the manifest's ``record_sha256`` (sha256 of the record's canonical JSON),
* the parameters recorded (the measured offsets included), and
* byte for byte the row the run materialised for EvalScope (``datasets/``, located through
  ``index_map.json``), when the run got that far.

A difference is one line naming the item, so a tampered dataset row or manifest hash points at itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.evalscope import IndexMap, MaterializedDataset
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.sources import GeneratedItem
from evalpipe.benchmarks import benchmark
from evalpipe.config.models import RunConfig
from evalpipe.errors import EvalpipeError
from evalpipe.sources.base import BenchmarkData, SourceRecord


def _materialised_rows(rundir: RunDir, name: str) -> dict[str, tuple[str, bytes]]:
    """``source_id → (where, the row's line bytes)`` of the run's materialised JSONL rows of ``name``."""
    if not rundir.index_map.is_file():
        return {}
    index_map = read_model(rundir.index_map, IndexMap)
    dataset = next((d for d in index_map.datasets if d.benchmark == name), None)
    if dataset is None:
        return {}
    out: dict[str, tuple[str, bytes]] = {}
    lines: dict[str, list[bytes]] = {}
    for e in index_map.for_benchmark(name):
        path = _split_file(rundir, dataset, e.subset)
        if path is None:
            continue  # not a JSONL layout: compared through the manifest hash only
        if str(path) not in lines:
            lines[str(path)] = path.read_bytes().split(b"\n") if path.is_file() else []
        rows = lines[str(path)]
        where = f"{path.relative_to(rundir.root)}:{e.index + 1}"
        out[e.source_id] = (where, rows[e.index] if e.index < len(rows) else b"")
    return out


def _split_file(rundir: RunDir, dataset: MaterializedDataset, subset: str) -> Path | None:
    for rel in (f"{subset}/{dataset.eval_split}.jsonl", f"{subset}_{dataset.eval_split}.jsonl"):
        if rel in dataset.files:
            return rundir.root / dataset.path / rel
    return None


def generated_differences(
    rundir: RunDir, recorded: Manifest, datasets: Mapping[str, BenchmarkData], cfg: RunConfig
) -> list[str]:
    """One line per generated entry that does not regenerate to what the manifest and the run recorded."""
    diffs: list[str] = []
    for block in recorded.benchmarks:
        name = block.benchmark
        entries = [e for e in recorded.entries_for(name) if e.generated is not None]
        data = datasets.get(name)
        if not entries or data is None or not data.eval.records:
            continue
        spec = benchmark(name)
        spec_file = Path(data.eval.records[0].file)
        pinned = cfg.benchmark(name).fingerprint is not None
        rows = _materialised_rows(rundir, name)
        for e in entries:
            assert e.generated is not None
            label = f"{name} {e.source_id}"
            try:
                record: SourceRecord = spec.regenerate(e.generated, e.source_id, spec_file)
            except EvalpipeError as exc:
                diffs.append(f"{label}: cannot be regenerated from its recorded parameters ({exc.message})")
                continue
            if record.record_sha256 != e.record_sha256:
                diffs.append(
                    f"{label}: regenerated from its recorded parameters, sha256 {record.record_sha256} != the "
                    f"manifest's {e.record_sha256}"
                )
            again = spec.generated_item(record)
            if again != e.generated:
                diffs.append(
                    f"{label}: regenerated parameters differ from the manifest's ({_changed(e.generated, again)})"
                )
            if e.source_id in rows:
                where, line = rows[e.source_id]
                want = json.dumps(spec.materialize_row(record, pinned, where), ensure_ascii=False).encode(
                    "utf-8"
                )
                if line != want:
                    diffs.append(f"{label}: materialised row {where} differs from the regenerated item")
    return diffs


def _changed(old: GeneratedItem, new: GeneratedItem | None) -> str:
    if new is None:
        return "none regenerated"
    a, b = old.model_dump(), new.model_dump()
    return ", ".join(k for k in a if a[k] != b.get(k))
