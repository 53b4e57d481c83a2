"""Run directories for the paired statistics built from files alone: a one-stratum manifest per benchmark
and one scored outcome row per entry — no server, no EvalScope (compare, pools, the sequential verdict and
the plan's cost read nothing else)."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from evalpipe.artifacts import RunDir, write_jsonl_atomic, write_model
from evalpipe.artifacts.schema.manifest import (
    BenchmarkSampling,
    DatasetIdentity,
    Manifest,
    ManifestEntry,
    StratumAllocation,
)
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.config.models import SamplingRule
from evalpipe.hashing import rank_key, sha256_hex


def one_stratum_manifest(
    seed: int, ids: Mapping[str, Sequence[str]], *, kind: Literal["local", "hub"] = "local"
) -> Manifest:
    """Every benchmark's ``ids`` as one stratum, selected whole (uniform plan of their count), entries in
    hash-rank order as the sampler writes them."""
    entries: list[ManifestEntry] = []
    blocks: list[BenchmarkSampling] = []
    for bench, bench_ids in ids.items():
        n = len(bench_ids)
        entries += [
            ManifestEntry(
                benchmark=bench,
                subset="default",
                stratum="all",
                source_id=sid,
                record_sha256=sha256_hex(sid),
                rank_key=rank_key(seed, bench, sid),
                stratum_population=n,
                stratum_selected=n,
                weight=1.0,
            )
            for sid in sorted(bench_ids, key=lambda s, b=bench: rank_key(seed, b, s))
        ]
        blocks.append(
            BenchmarkSampling(
                benchmark=bench,
                subsets=["default"],
                few_shot=0,
                plan=SamplingRule(total=n, allocation="uniform"),
                plan_sha256="0" * 64,
                dataset=DatasetIdentity(
                    kind=kind, eval_split="test", eval_records=n, fingerprint=sha256_hex(bench)
                ),
                filtered_population=n,
                strata=[StratumAllocation(stratum="all", population=n, allocated=n, selected=n)],
                sample_size=n,
            )
        )
    return Manifest(seed=seed, benchmarks=blocks, entries=entries)


def write_scored_run(
    root: Path,
    manifest: Manifest,
    correct: Callable[[ManifestEntry], bool],
    *,
    output_tokens: Callable[[ManifestEntry, bool], int],
    shuffle: int | None = None,
    **row_fields: Any,
) -> Path:
    """``root`` as a run directory: the manifest and one outcome row per entry, right or wrong by
    ``correct``, with ``output_tokens`` and any other ``row_fields``; rows shuffled with ``shuffle`` as the
    seed (completion order is not manifest order)."""
    rundir = RunDir(root)
    root.mkdir(parents=True)
    write_model(rundir.manifest, manifest)
    rows = []
    for i, e in enumerate(manifest.entries):
        ok = correct(e)
        rows.append(
            OutcomeRow(
                benchmark=e.benchmark,
                subset=e.subset,
                index=i,
                source_id=e.source_id,
                stratum=e.stratum,
                prediction_present=True,
                review_present=True,
                n_predictions=1,
                n_reviews=1,
                prompt_sha256=sha256_hex(e.source_id),
                output_tokens=output_tokens(e, ok),
                score=1.0 if ok else 0.0,
                failure_class="ok" if ok else "wrong",
                **row_fields,
            )
        )
    if shuffle is not None:
        random.Random(shuffle).shuffle(rows)
    write_jsonl_atomic(rundir.outcomes, rows)
    return root
