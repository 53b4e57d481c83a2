"""Build the manifest from loaded datasets, write it into a run directory, and re-derive it.

The selection is a pure function of (dataset content, plan, seed): see ``SELECTION_RULE``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import yaml

from evalpipe import __version__
from evalpipe.artifacts import RunDir, atomic_write_bytes, atomic_write_text, read_model, write_model
from evalpipe.artifacts.schema.manifest import (
    BenchmarkSampling,
    DatasetIdentity,
    Manifest,
    ManifestEntry,
    StratumAllocation,
)
from evalpipe.artifacts.schema.run import RunRecord
from evalpipe.artifacts.schema.sources import BenchmarkSources, EntryLocation, SourcesRecord
from evalpipe.benchmarks import benchmark
from evalpipe.benchmarks import benchmark as benchmark_spec
from evalpipe.config.loader import load_config, resolve_sampling_rule
from evalpipe.config.models import RunConfig, SamplingRule
from evalpipe.errors import ConfigError, FingerprintMismatch
from evalpipe.hashing import rank_key, sha256_hex, sha256_json
from evalpipe.samplers.allocate import largest_remainder, stratum_sort_key
from evalpipe.samplers.loading import load_benchmark, load_local
from evalpipe.samplers.regenerate import generated_differences
from evalpipe.samplers.strata import apply_filter, check_sampling_rule, stratum_of
from evalpipe.sources.base import BenchmarkData, SourceRecord


@dataclass
class SampleResult:
    rundir: RunDir
    manifest: Manifest
    datasets: dict[str, BenchmarkData]


def plan_sha256(plan: SamplingRule) -> str:
    return sha256_json(plan.model_dump(mode="json"))


def _allocate(plan: SamplingRule, populations: dict[str, int]) -> dict[str, int]:
    if plan.per_stratum is not None:
        return dict.fromkeys(populations, plan.per_stratum)
    assert plan.total is not None
    if plan.allocation == "uniform":
        return {name: plan.total for name in populations}  # a single stratum ('all')
    return largest_remainder(plan.total, populations)


def select_benchmark(
    data: BenchmarkData,
    plan: SamplingRule,
    seed: int,
    *,
    few_shot: int,
    pinned: str | None,
    allow_drift: bool,
    allocation: Mapping[str, int] | None = None,
) -> tuple[BenchmarkSampling, list[tuple[ManifestEntry, SourceRecord]]]:
    """Select one benchmark's entries per ``plan``; returns its manifest block and entries.

    ``allocation``: n_h per stratum instead of the plan's (``evalpipe run --extend``: the larger plan's
    allocation floored at the old run's n_h, ``evalpipe.samplers.extend.floored_allocation``)."""
    name = data.benchmark
    check_sampling_rule(plan, name)
    spec = benchmark_spec(name)
    fp = data.eval.fingerprint
    drift = False
    if pinned is not None and pinned != fp:
        if not allow_drift:
            raise FingerprintMismatch(
                f"{name}: dataset fingerprint does not match the pin in the config",
                details=[f"pinned: {pinned}", f"found:  {fp}", "use --allow-dataset-drift to run anyway"],
            )
        drift = True
    records = apply_filter(data.eval.records, plan.filter, name)
    strata: dict[str, list[SourceRecord]] = {}
    for rec in records:
        strata.setdefault(stratum_of(rec, plan.stratify_by), []).append(rec)
    if plan.strata is not None:
        unknown = [s for s in plan.strata if s not in strata]
        if unknown:
            raise ConfigError(
                f"sampling rule for {name}: strata not present in the data: {', '.join(unknown)}"
            )
        strata = {s: strata[s] for s in plan.strata}
    names = sorted(strata, key=stratum_sort_key)
    populations = {s: len(strata[s]) for s in names}
    alloc = _allocate(plan, populations) if allocation is None else {s: allocation.get(s, 0) for s in names}

    allocations: list[StratumAllocation] = []
    selected: list[tuple[ManifestEntry, SourceRecord]] = []
    short: list[str] = []
    for s in names:
        n_pop, n_alloc = populations[s], alloc[s]
        if n_alloc > n_pop and not plan.allow_short:
            short.append(f"{s}: asks {n_alloc} of {n_pop}")
            continue
        ranked = sorted(((rank_key(seed, name, r.source_id), r) for r in strata[s]), key=lambda t: t[0])
        take = ranked[: min(n_alloc, n_pop)]
        n_sel = len(take)
        allocations.append(
            StratumAllocation(
                stratum=s,
                population=n_pop,
                allocated=n_alloc,
                selected=n_sel,
                shortfall=max(0, n_alloc - n_pop),
            )
        )
        for key, rec in take:
            entry = ManifestEntry(
                benchmark=name,
                subset=rec.subset,
                stratum=s,
                source_id=rec.source_id,
                record_sha256=rec.record_sha256,
                rank_key=key,
                stratum_population=n_pop,
                stratum_selected=n_sel,
                weight=n_pop / n_sel,
                generated=spec.generated_item(rec),
            )
            selected.append((entry, rec))
    if short:
        raise ConfigError(
            f"sampling rule for {name}: stratum smaller than its allocation (set allow_short: true to take all)",
            details=short,
        )
    subsets: list[str] = []
    for entry, _ in selected:
        if entry.subset not in subsets:
            subsets.append(entry.subset)
    fs = data.fewshot
    block = BenchmarkSampling(
        benchmark=name,
        subsets=subsets,
        few_shot=few_shot,
        plan=plan,
        plan_sha256=plan_sha256(plan),
        dataset=DatasetIdentity(
            kind=data.kind,
            hub_id=data.hub_id,
            revision=data.revision,
            eval_split=data.eval.name,
            eval_records=len(data.eval.records),
            fingerprint=fp,
            fewshot_split=fs.name if fs else None,
            fewshot_records=len(fs.records) if fs else None,
            fewshot_fingerprint=fs.fingerprint if fs else None,
            pinned_fingerprint=pinned,
            drift_allowed=drift,
        ),
        filtered_population=len(records),
        strata=allocations,
        sample_size=len(selected),
    )
    return block, selected


def build_manifest(
    cfg: RunConfig,
    datasets: dict[str, BenchmarkData],
    *,
    allow_drift: bool = False,
    plans: dict[str, SamplingRule] | None = None,
    seed: int | None = None,
    allocations: Mapping[str, Mapping[str, int]] | None = None,
) -> tuple[Manifest, list[tuple[ManifestEntry, SourceRecord]]]:
    seed = cfg.sampling_seed if seed is None else seed
    blocks: list[BenchmarkSampling] = []
    pairs: list[tuple[ManifestEntry, SourceRecord]] = []
    for bench in cfg.benchmarks:
        plan = plans[bench.name] if plans is not None else resolve_sampling_rule(cfg, bench.name)
        block, selected = select_benchmark(
            datasets[bench.name],
            plan,
            seed,
            few_shot=bench.few_shot,
            pinned=bench.fingerprint,
            allow_drift=allow_drift,
            allocation=allocations.get(bench.name) if allocations is not None else None,
        )
        blocks.append(block)
        pairs.extend(selected)
    manifest = Manifest(seed=seed, benchmarks=blocks, entries=[e for e, _ in pairs])
    return manifest, pairs


def sampled_ids_csv(manifest: Manifest) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["benchmark", "stratum", "source_id", "record_sha256"])
    for e in manifest.entries:
        writer.writerow([e.benchmark, e.stratum, e.source_id, e.record_sha256])
    return buf.getvalue()


def default_run_dir(cfg: RunConfig) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return cfg.resolve_path(cfg.output_root) / f"{cfg.name}-{stamp}"


def without_missing_mirrors(cfg: RunConfig, dataset_root: Path) -> tuple[RunConfig, list[str]]:
    """``cfg`` restricted to the benchmarks present under ``dataset_root``, and one line per benchmark left
    out (it needs the hub).  The run directory's config.yaml then records exactly what was sampled."""

    kept, notes = [], []
    for bench in cfg.benchmarks:
        meta = benchmark(bench.name).meta
        folder = meta.mirror_dir
        if meta.user_files or (Path(dataset_root) / folder).is_dir():
            kept.append(bench)  # in the mirror, or your own files (never on the hub)
            continue
        if bench.source.local is not None:  # a local folder (a generator's spec), which --dataset-root replaces
            notes.append(
                f"{bench.name}: no {folder}/ under {dataset_root}, which --dataset-root reads in place of its "
                f"source.local folder {bench.source.local}; left out of this sample — sample without "
                "--dataset-root to include it"
            )
            continue
        hub = bench.source.hub or f"the dataset id EvalScope's {bench.name} adapter declares"
        notes.append(
            f"{bench.name}: no {folder}/ under {dataset_root}, so it needs the hub ({bench.source.hub_backend}: "
            f"{hub}); left out of this sample — sample without --dataset-root (network access) to include it"
        )
    if not kept or not notes:  # nothing there at all: the loader's own error names the missing directory
        return cfg, []
    out = cfg.model_copy(update={"benchmarks": kept})
    out._config_path = cfg.config_path
    return out, notes


def load_datasets(cfg: RunConfig, dataset_root: Path | None) -> dict[str, BenchmarkData]:
    return {b.name: load_benchmark(cfg, b.name, dataset_root) for b in cfg.benchmarks}


def effective_config_bytes(cfg: RunConfig) -> bytes:
    """The config as it runs: the file's bytes verbatim, unless the config was changed in memory after
    loading (self-test controls, replays), in which case the effective config is written as YAML."""


    if cfg.config_path is not None and cfg.config_path.is_file():
        data = cfg.config_path.read_bytes()
        on_disk = load_config(cfg.config_path, check_sampling=False)
        if on_disk.model_dump(mode="json") == cfg.model_dump(mode="json"):
            return data
    header = f"# effective config (changed in memory after loading {cfg.config_path or 'no file'})\n"
    text: str = yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False, allow_unicode=True)
    return (header + text).encode()


def sample_run(
    cfg: RunConfig,
    *,
    dataset_root: Path | None = None,
    out: Path | None = None,
    allow_drift: bool = False,
    allocations: Mapping[str, Mapping[str, int]] | None = None,
    datasets: dict[str, BenchmarkData] | None = None,
) -> SampleResult:
    """Load every benchmark, select, and write run.json, config.yaml, manifest, sampled_ids, sources."""
    datasets = load_datasets(cfg, dataset_root) if datasets is None else datasets
    manifest, pairs = build_manifest(cfg, datasets, allow_drift=allow_drift, allocations=allocations)
    rundir = RunDir(out if out is not None else default_run_dir(cfg))
    rundir.root.mkdir(parents=True, exist_ok=True)

    config_bytes = effective_config_bytes(cfg)
    atomic_write_bytes(rundir.config_copy, config_bytes)
    write_model(
        rundir.run_record,
        RunRecord(
            run_id=rundir.root.name,
            config_name=cfg.name,
            config_path=str(cfg.config_path or ""),
            config_sha256=sha256_hex(config_bytes),
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            evalpipe_version=__version__,
            dataset_locations={name: d.location for name, d in datasets.items()},
            benchmark_versions={name: benchmark_spec(name).meta.version for name in datasets},
            allow_dataset_drift=allow_drift,
            no_speed=cfg.no_speed,
            speed_gate_waived=cfg.speed_gate_waived,
        ),
    )
    write_model(rundir.manifest, manifest)
    atomic_write_text(rundir.sampled_ids, sampled_ids_csv(manifest))
    write_model(
        rundir.sources,
        SourcesRecord(
            benchmarks=[
                BenchmarkSources(
                    benchmark=name,
                    kind=d.kind,
                    location=d.location,
                    files=[*d.eval.files, *(d.fewshot.files if d.fewshot else [])],
                )
                for name, d in datasets.items()
            ],
            locations=[
                EntryLocation(benchmark=e.benchmark, source_id=e.source_id, file=r.file, row=r.row)
                for e, r in pairs
            ],
        ),
    )
    return SampleResult(rundir=rundir, manifest=manifest, datasets=datasets)


@dataclass
class VerifyResult:
    identical: bool
    differences: list[str]
    manifest: Manifest


def verify_sample(run_dir: Path, *, dataset_root: Path | None = None) -> VerifyResult:
    """Re-derive the selection from the datasets and the plans/seed recorded in the manifest; regenerate every
    generated entry from its recorded parameters (``evalpipe.samplers.regenerate``)."""

    rundir = RunDir(run_dir)
    recorded = read_model(rundir.manifest, Manifest)
    run = read_model(rundir.run_record, RunRecord)
    cfg = load_config(rundir.config_copy, check_sampling=False)
    cfg._config_path = Path(run.config_path) if run.config_path else rundir.config_copy.resolve()
    plans = {b.benchmark: b.plan for b in recorded.benchmarks}
    datasets: dict[str, BenchmarkData] = {}
    names = [b.benchmark for b in recorded.benchmarks]
    cfg = cfg.model_copy(update={"benchmarks": [cfg.benchmark(n) for n in names]})
    cfg._config_path = Path(run.config_path) if run.config_path else rundir.config_copy.resolve()
    for bench in cfg.benchmarks:
        recorded_local = next(b.dataset.is_local for b in recorded.benchmarks if b.benchmark == bench.name)
        if dataset_root is None and recorded_local and run.dataset_locations.get(bench.name):

            datasets[bench.name] = load_local(
                bench.name, Path(run.dataset_locations[bench.name]), subset=bench.subset, source=bench.source
            )
            datasets[bench.name].check_unique_ids()
        else:
            datasets[bench.name] = load_benchmark(cfg, bench.name, dataset_root)
    rederived, _ = build_manifest(
        cfg, datasets, allow_drift=run.allow_dataset_drift, plans=plans, seed=recorded.seed
    )
    diffs = diff_manifests(recorded, rederived)
    # generated items (kv_probe): each made again from its own recorded parameters, against the manifest's
    # hash and the run's materialised row
    diffs += generated_differences(rundir, recorded, datasets, cfg)
    return VerifyResult(identical=not diffs, differences=diffs, manifest=rederived)


def diff_manifests(recorded: Manifest, rederived: Manifest) -> list[str]:
    """Human-readable differences between two manifests (empty when identical)."""
    diffs: list[str] = []
    rb = {b.benchmark: b for b in recorded.benchmarks}
    db = {b.benchmark: b for b in rederived.benchmarks}
    for name in rb.keys() | db.keys():
        a, b = rb.get(name), db.get(name)
        if a is None or b is None:
            diffs.append(
                f"{name}: benchmark only in the {'recorded' if b is None else 're-derived'} manifest"
            )
            continue
        if a.dataset.fingerprint != b.dataset.fingerprint:
            diffs.append(
                f"{name}: dataset fingerprint {a.dataset.fingerprint} (recorded) != {b.dataset.fingerprint}"
            )
        if a.strata != b.strata:
            diffs.append(f"{name}: strata populations/allocations differ")
    ra = {(e.benchmark, e.source_id): e for e in recorded.entries}
    da = {(e.benchmark, e.source_id): e for e in rederived.entries}
    for key in sorted(ra.keys() - da.keys()):
        diffs.append(f"{key[0]} {key[1]}: selected in the recorded manifest, not when re-derived")
    for key in sorted(da.keys() - ra.keys()):
        diffs.append(f"{key[0]} {key[1]}: selected when re-derived, not in the recorded manifest")
    for key in sorted(ra.keys() & da.keys()):
        old, new = ra[key], da[key]
        if old.record_sha256 != new.record_sha256:
            diffs.append(
                f"{key[0]} {key[1]}: record_sha256 {old.record_sha256} (recorded) != {new.record_sha256}"
            )
        elif old != new:
            diffs.append(f"{key[0]} {key[1]}: entry fields differ")
    if not diffs and recorded.model_dump_json() != rederived.model_dump_json():
        diffs.append("manifest content differs (order or metadata)")
    return diffs


def sample_verdict(
    recorded: Manifest, rederived: Manifest, benchmark: str, source_id: str
) -> tuple[bool, str]:
    """One entry's re-derivation in a line (``verify-sample --sample``): still selected, in the same stratum,
    at the same rank, from a record with the same hash.  Its selection depends on its stratum's whole ranking,
    so the command's verdict stays the whole manifest's; this line says what became of the one entry."""
    old = next((e for e in recorded.entries if (e.benchmark, e.source_id) == (benchmark, source_id)), None)
    if old is None:
        raise ConfigError(f"--sample {benchmark}/{source_id}: not a sample of this run's manifest")
    new = next((e for e in rederived.entries if (e.benchmark, e.source_id) == (benchmark, source_id)), None)
    where = f"sample {benchmark}/{source_id}"
    if new is None:
        return False, f"{where}: not selected when re-derived"
    ranked = sorted(
        e.rank_key for e in rederived.entries if (e.benchmark, e.stratum) == (benchmark, new.stratum)
    )
    rank = ranked.index(new.rank_key) + 1
    if old.record_sha256 != new.record_sha256:
        return False, f"{where}: record_sha256 {old.record_sha256} (recorded) != {new.record_sha256}"
    if old != new:
        return (
            False,
            f"{where}: entry fields differ (stratum {old.stratum} → {new.stratum}, rank key, weight)",
        )
    return True, (
        f"{where}: re-derived identically (stratum {new.stratum}, rank {rank} of {new.stratum_selected} "
        f"selected from {new.stratum_population}, record sha256 {new.record_sha256})"
    )
