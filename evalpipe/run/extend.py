"""``--extend RUN``: the larger selection that contains RUN's (its n_h as floors), and what it reuses.

The extension is written as ``extension.json`` once the old run's answers have seeded this run's cache
(``evalpipe.evalscope_bridge.extend``).

A run gated by a non-inferiority margin grows only under the sequential rule it was judged by
(``check_alpha_kept``): the e-processes continue over the new units and no look is taken twice
(``evalpipe.stats.operating``).  A fixed design spent all of its α at its one look; a second look at the
larger n would spend it again (type I 0.041–0.050 at α 0.025 for 100 → 300 → 1000, ψ 0.1–0.02), so it is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.run import ExtensionRecord
from evalpipe.compare.versions import recorded_versions
from evalpipe.config.loader import load_config
from evalpipe.config.models import RunConfig
from evalpipe.errors import ConfigError
from evalpipe.resolve import ResolvedRun
from evalpipe.run.sample import Spine
from evalpipe.samplers import sample_run
from evalpipe.samplers.extend import (
    check_contains,
    floored_allocation,
    prior_generations,
    rule_allocation,
    selected_allocation,
)
from evalpipe.samplers.run import build_manifest, load_datasets


def extend_stage(
    run: ResolvedRun, old_run: Path, *, dataset_root: Path | None, out: Path | None, allow_drift: bool
) -> tuple[Spine, Extension]:
    """The larger selection for ``--extend RUN``: the config's sampling rules with RUN's n_h as floors; refuses
    (exit 2, the problems as details) unless it contains every entry of RUN's manifest."""
    cfg = run.config
    old_rd = RunDir(Path(old_run))
    if not old_rd.manifest.is_file():
        raise ConfigError(f"--extend {old_rd.root}: no manifest.json (not a run directory)")
    check_alpha_kept(cfg, old_rd)
    check_versions_kept(run, old_rd)
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
        floors = floored_allocation(selected_allocation(old_block), rule_allocation(block.plan, populations))
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
    extension = Extension(
        old_rd,
        len(old.entries),
        len(result.manifest.entries),
        check.reused,
        len(check.added),
        notes,
        prior_generations(old_rd.root, old),
    )
    return Spine(result.rundir, result.manifest, result.datasets), extension


def check_versions_kept(run: ResolvedRun, old_rd: RunDir) -> None:
    """Refuse (exit 2) an extension of a benchmark whose version changed since the old run (its prompt, scoring
    or selection did): the old answers it reuses were made and scored by the old version, the new ones would be
    by the new, and one block would hold both.  An old run that recorded no versions is not checked (unknown).
    The versions now are those of the run's resolved plugins."""
    old = recorded_versions(old_rd)
    now = {name: spec.meta.version for name, spec in run.benchmarks.items()}
    changed = [
        f"{b.name}: version {old[b.name]} in the old run, {now[b.name]} now"
        for b in run.config.benchmarks
        if b.name in old and old[b.name] != now[b.name]
    ]
    if changed:
        raise ConfigError(
            f"--extend {old_rd.root}: a benchmark changed version since the old run; start a new run",
            details=changed,
        )


def check_alpha_kept(cfg: RunConfig, old_rd: RunDir) -> None:
    """Refuse (exit 2, one line) an extension that would spend a gate's α again: a non-inferiority margin
    without ``generation.sequential`` (in this config or the old run's), or a sequential rule or margin other
    than the old run's (the first run's α split and margin are the design declared before the first look)."""

    seq = cfg.generation.sequential
    margins = cfg.gates.non_inferiority_margin_pts
    old_cfg = load_config(old_rd.config_copy, check_sampling=False) if old_rd.config_copy.is_file() else None
    old_margins = old_cfg.gates.non_inferiority_margin_pts if old_cfg is not None else None
    if margins is None and old_margins is None:
        return  # no gate at a margin: nothing spends α
    head = f"--extend {old_rd.root}"
    if (seq is not None and seq.pilot is not None) or (
        old_cfg is not None and old_cfg.generation.sequential is not None and old_cfg.generation.sequential.pilot
    ):
        raise ConfigError(
            f"{head}: a run sized by generation.sequential.pilot cannot be extended: its pilot chose the attempts "
            "for the planned units only; plan the larger selection in a new run"
        )
    if seq is None or (old_cfg is not None and old_cfg.generation.sequential is None):
        which = "this config" if seq is None else "the old run"
        raise ConfigError(
            f"{head}: {which} gates a non-inferiority margin with a fixed design, whose one look spent α at the "
            "first run's n; only a run judged by generation.sequential (set before its first run) can be extended"
        )
    if old_cfg is not None:
        old_seq = old_cfg.generation.sequential
        assert old_seq is not None
        if (old_seq.alpha, old_seq.sequential_share) != (
            seq.alpha,
            seq.sequential_share,
        ) or old_margins != margins:
            raise ConfigError(
                f"{head}: generation.sequential's alpha and sequential_share and gates.non_inferiority_margin_pts "
                f"must be the old run's (alpha {old_seq.alpha:g}, share {old_seq.sequential_share:g}, margin "
                f"{old_margins}): an extension continues the e-processes it started"
            )


@dataclass(frozen=True)
class Extension:
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
