"""Shared helpers for the EvalScope bridge tests: configs, hand-picked manifests, scripted answers."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from helpers.config import config_data, entry

from evalpipe.artifacts import RunDir, write_model
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.config.models import RunConfig
from evalpipe.samplers import build_manifest
from evalpipe.samplers.loading import load_benchmark
from evalpipe.sources.base import BenchmarkData

SUBSETS = {"gsm8k": "main", "ifeval": "default", "live_code_bench": "release_v6"}
FEW_SHOT = {"gsm8k": 4, "ceval": 5, "ifeval": 0, "live_code_bench": 0}


def run_config(benchmarks: dict[str, int], **overrides: Any) -> RunConfig:
    """A config (``helpers.config``, validated in memory) sampling ``n`` records uniformly from each
    benchmark (n per name); ``overrides`` replace top-level sections."""
    entries = [
        entry(
            name, total=n, **({"subset": SUBSETS[name]} if name in SUBSETS else {}), few_shot=FEW_SHOT[name]
        )
        for name, n in benchmarks.items()
    ]
    generation = {"concurrency": 2, "max_tokens": {"gsm8k": 256}, "request_timeout_s": 60}
    data = config_data(benchmarks=entries, **{"name": "bridge-test", "generation": generation, **overrides})
    return RunConfig.model_validate(data)


def pick(data: BenchmarkData, source_ids: list[str]) -> BenchmarkData:
    """The benchmark with its evaluation split cut down to ``source_ids`` (few-shot split untouched)."""
    by_id = {r.source_id: r for r in data.eval.records}
    missing = [s for s in source_ids if s not in by_id]
    assert not missing, f"not in {data.benchmark}: {missing}"
    return replace(data, eval=replace(data.eval, records=[by_id[s] for s in source_ids]))


def picked_run(
    root: Path, cfg: RunConfig, picks: dict[str, list[str]], *, datasets_root: Path
) -> tuple[RunDir, Manifest, dict]:
    """A run directory whose manifest selects exactly ``picks`` (a uniform plan over the cut split) of the
    real files in ``datasets_root`` (the ``shared_datasets`` fixture)."""
    datasets = {name: pick(load_benchmark(cfg, name, datasets_root), ids) for name, ids in picks.items()}
    manifest, _ = build_manifest(cfg, datasets)
    rundir = RunDir(root)
    rundir.root.mkdir(parents=True, exist_ok=True)
    write_model(rundir.manifest, manifest)
    return rundir, manifest, datasets


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def gsm8k_answer(record_raw: dict[str, Any]) -> str:
    return record_raw["answer"].split("####")[-1].strip()
