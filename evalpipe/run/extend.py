"""``--extend RUN``: plan the larger selection that contains RUN's (its n_h as floors), and what it reuses.

The plan is written as ``extension.json`` once the old run's answers have seeded this run's cache
(``evalpipe.evalscope_bridge.extend``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.run import ExtensionRecord
from evalpipe.config.models import RunConfig
from evalpipe.errors import ConfigError
from evalpipe.run.sample import Spine
from evalpipe.samplers import sample_run
from evalpipe.samplers.extend import (
    check_contains,
    floored_allocation,
    plan_allocation,
    prior_generations,
    selected_allocation,
)
from evalpipe.samplers.run import build_manifest, load_datasets


def extend_stage(
    cfg: RunConfig, old_run: Path, *, dataset_root: Path | None, out: Path | None, allow_drift: bool
) -> tuple[Spine, ExtensionPlan]:
    """The larger selection for ``--extend RUN``: the config's plans with RUN's n_h as floors; refuses
    (exit 2, the problems as details) unless it contains every entry of RUN's manifest."""
    old_rd = RunDir(Path(old_run))
    if not old_rd.manifest.is_file():
        raise ConfigError(f"--extend {old_rd.root}: no manifest.json (not a run directory)")
    old = read_model(old_rd.manifest, Manifest)
    datasets = load_datasets(cfg, dataset_root)
    planned, _ = build_manifest(cfg, datasets, allow_drift=allow_drift)
    allocations: dict[str, dict[str, int]] = {}
    notes: list[str] = []
    for block in planned.benchmarks:
        try:
            old_block = old.sampling_for(block.benchmark)
        except KeyError:
            continue
        populations = {s.stratum: s.population for s in block.strata}
        floors = floored_allocation(selected_allocation(old_block), plan_allocation(block.plan, populations))
        allocations[block.benchmark] = floors.allocation
        notes += floors.notes(block.benchmark)
    new, _ = build_manifest(cfg, datasets, allow_drift=allow_drift, allocations=allocations)
    check = check_contains(old, new)
    if check.problems:
        raise ConfigError(
            f"--extend {old_rd.root}: the new selection does not contain the old one", details=check.problems
        )
    if out is not None and (RunDir(Path(out)).evalscope_dir.exists() or RunDir(Path(out)).outcomes.exists()):
        raise ConfigError(f"{out}: already holds a run's EvalScope outputs")
    result = sample_run(
        cfg,
        dataset_root=dataset_root,
        out=out,
        allow_drift=allow_drift,
        allocations=allocations,
        datasets=datasets,
    )
    plan = ExtensionPlan(
        old_rd,
        len(old.entries),
        len(result.manifest.entries),
        check.reused,
        len(check.added),
        notes,
        prior_generations(old_rd.root, old),
    )
    return Spine(result.rundir, result.manifest, result.datasets), plan


@dataclass(frozen=True)
class ExtensionPlan:
    """What ``--extend`` reuses and adds (written as extension.json once the caches are seeded)."""

    old: RunDir
    old_samples: int
    new_samples: int
    reused: int
    added: int
    floor_notes: list[str]
    generations: list[dict[str, list[str]]]

    def record(self) -> ExtensionRecord:
        statement = f"extended from {self.old_samples} to {self.new_samples} samples; {self.reused} reused"
        if self.floor_notes:
            statement += "; " + "; ".join(self.floor_notes)
        return ExtensionRecord(
            extended_from=str(self.old.root),
            old_samples=self.old_samples,
            new_samples=self.new_samples,
            reused=self.reused,
            added=self.added,
            floor_notes=self.floor_notes,
            statement=statement,
            prior_generations=self.generations,
        )
