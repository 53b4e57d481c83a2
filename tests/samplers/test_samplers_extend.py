"""evalpipe.samplers.extend: a larger plan keeps the old allocation as floors and contains the old selection."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.config.loader import load_config, load_sampling_rule, resolve_sampling_rule
from evalpipe.config.models import SamplingRule
from evalpipe.errors import ConfigError
from evalpipe.hashing import rank_key
from evalpipe.samplers.allocate import largest_remainder
from evalpipe.samplers.extend import (
    check_contains,
    floored_allocation,
    rule_allocation,
    selected_allocation,
)
from evalpipe.samplers.run import _allocate, build_manifest, load_datasets

IFEVAL_STRATA = {"1": 305, "2": 179, "3": 57}


def test_plan_allocation_is_the_samplers_rule(repo_root: Path) -> None:
    """One rule: ``rule_allocation`` and the sampler's own allocation agree on every shipped plan."""
    populations = {"a": 17, "b": 230, "c": 3, "d": 88}
    plans = [load_sampling_rule(p) for p in sorted((repo_root / "samplers").glob("*.yaml"))]
    plans.append(SamplingRule(stratify_by="none", total=7, allocation="uniform"))
    for plan in plans:
        pops = {"all": 400} if plan.allocation == "uniform" else populations
        assert rule_allocation(plan, pops) == _allocate(plan, pops), plan


def test_largest_remainder_is_not_monotone_on_ifeval_and_floors_fix_it() -> None:
    old, planned = largest_remainder(119, IFEVAL_STRATA), largest_remainder(120, IFEVAL_STRATA)
    assert (old, planned) == ({"1": 67, "2": 39, "3": 13}, {"1": 68, "2": 40, "3": 12})  # the paradox
    extended = floored_allocation(old, planned)
    assert extended.allocation == {"1": 68, "2": 40, "3": 13}
    assert extended.raised == {"3": 13}
    assert extended.excess == 1
    assert extended.notes("ifeval") == [
        "ifeval stratum 3: the plan allocates 12, kept at the old run's 13 "
        "(largest-remainder allocation is not monotone in the total)"
    ]


def test_floors_never_lower_any_stratum_over_every_total() -> None:
    for total in range(1, 300):
        old = largest_remainder(total, IFEVAL_STRATA)
        for grown in (total + 1, 2 * total):
            extended = floored_allocation(old, largest_remainder(grown, IFEVAL_STRATA))
            assert all(extended.allocation[s] >= old[s] for s in old)
            assert extended.excess <= len(IFEVAL_STRATA)


def test_a_plan_that_drops_an_old_stratum_is_refused() -> None:
    with pytest.raises(ConfigError, match="drops strata"):
        floored_allocation({"easy": 6, "hard": 6}, {"easy": 12})


def _doubled(plan: SamplingRule) -> SamplingRule:
    if plan.per_stratum is not None:
        return plan.model_copy(update={"per_stratum": 2 * plan.per_stratum})
    assert plan.total is not None
    return plan.model_copy(update={"total": 2 * plan.total})


@pytest.fixture(scope="module")
def glm_manifests(repo_root: Path, shared_datasets: Path) -> tuple[Manifest, Manifest]:
    """The seed's 160-sample glm-fp8 manifest and the one with twice the samples per stratum."""
    cfg = load_config(repo_root / "configs" / "glm-fp8.yaml")
    datasets = load_datasets(cfg, shared_datasets)
    plans = {b.name: resolve_sampling_rule(cfg, b.name) for b in cfg.benchmarks}
    old, _ = build_manifest(cfg, datasets, plans=plans)
    new, _ = build_manifest(cfg, datasets, plans={name: _doubled(p) for name, p in plans.items()})
    return old, new


def test_doubling_the_glm_plan_contains_the_seed_selection(glm_manifests: tuple[Manifest, Manifest]) -> None:
    old, new = glm_manifests
    assert len(old.entries) == 160 and len(new.entries) == 320
    for block in old.benchmarks:
        grown = new.sampling_for(block.benchmark)
        planned = {s.stratum: s.allocated for s in grown.strata}
        assert floored_allocation(selected_allocation(block), planned).raised == {}
    check = check_contains(old, new)
    assert check.ok, check.problems
    assert check.reused == 160
    assert len(check.added) == 160
    assert set(check.added).isdisjoint((e.benchmark, e.source_id) for e in old.entries)


def test_containment_problems_are_named(glm_manifests: tuple[Manifest, Manifest]) -> None:
    old, new = glm_manifests
    reseeded = old.model_copy(update={"seed": old.seed + 1})
    assert any("seeds differ" in p for p in check_contains(reseeded, new).problems)

    victim = old.entries[0]
    without = new.model_copy(update={"entries": [e for e in new.entries if e.source_id != victim.source_id]})
    problems = check_contains(old, without).problems
    assert any(f"{victim.source_id}: in the old selection, not in the new one" in p for p in problems)

    forged_entry = victim.model_copy(update={"rank_key": rank_key(7, victim.benchmark, victim.source_id)})
    forged_old = old.model_copy(update={"entries": [forged_entry, *old.entries[1:]]})
    forged_new = new.model_copy(
        update={"entries": [forged_entry if e.source_id == victim.source_id else e for e in new.entries]}
    )
    assert any("does not match seed" in p for p in check_contains(forged_old, forged_new).problems)


def test_an_old_selection_that_is_not_the_rank_prefix_is_named(
    glm_manifests: tuple[Manifest, Manifest],
) -> None:
    """Swap an old GSM8K entry for the new plan's last-ranked one: still contained, no longer the prefix."""
    old, new = glm_manifests
    gsm_new = sorted(new.entries_for("gsm8k"), key=lambda e: e.rank_key)
    gsm_old = old.entries_for("gsm8k")
    swapped = [gsm_new[-1] if e.source_id == gsm_old[0].source_id else e for e in old.entries]
    check = check_contains(old.model_copy(update={"entries": swapped}), new)
    assert any("gsm8k stratum all: the old 50 entries are not the first 50" in p for p in check.problems)
