"""Growing a sample without re-asking: the larger plan's allocation and the containment check.

The selection rule (``evalpipe.artifacts.schema.manifest.SELECTION_RULE``) sorts each stratum by
``sha256(f"{seed}:{benchmark}:{source_id}")`` and takes the first ``n_h``; with the same seed, data and
filter, a larger ``n_h`` therefore contains the smaller one as a prefix of the same order.  The
allocation is where containment can fail: proportional allocation by largest remainder (Hamilton's
method, ``evalpipe.samplers.allocate``) is not monotone in the total — the "Alabama paradox" (Balinski
& Young, *Fair Representation*, 1982, ch. 5).  On IFEval's strata (305/179/57 prompts with 1/2/3
instructions) 119 samples allocate 67/39/13 and 120 allocate 68/40/12: the larger plan would drop one
3-instruction prompt of the smaller.

So an extended plan keeps every old ``n_h`` as a floor: ``n_h' = max(planned_h, old_h)``.  The raised
strata are named, and the total can exceed the plan's by the units raised (one per paradox stratum —
at most the number of strata).  A total-preserving rule would have to take those units from another
stratum and move it off its plan instead; keeping every other stratum exactly at its plan is the
smaller departure, and the estimators weight by the actual ``N_h/n_h`` either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.manifest import BenchmarkSampling, Manifest, ManifestEntry
from evalpipe.artifacts.schema.run import ExtensionRecord
from evalpipe.config.models import SamplingRule
from evalpipe.errors import ConfigError
from evalpipe.hashing import rank_key
from evalpipe.samplers.allocate import largest_remainder, stratum_sort_key


def rule_allocation(plan: SamplingRule, populations: Mapping[str, int]) -> dict[str, int]:
    """n_h the plan alone asks for (the rule ``evalpipe.samplers.run`` applies; a test keeps them equal)."""
    if plan.per_stratum is not None:
        return dict.fromkeys(populations, plan.per_stratum)
    if plan.total is None:
        raise ConfigError("sampling rule has neither per_stratum nor total")
    if plan.allocation == "uniform":
        return dict.fromkeys(populations, plan.total)
    return largest_remainder(plan.total, populations)


def selected_allocation(block: BenchmarkSampling) -> dict[str, int]:
    """The old run's n_h per stratum, as its manifest recorded them (records actually taken)."""
    return {s.stratum: s.selected for s in block.strata}


@dataclass(frozen=True)
class FlooredAllocation:
    """The extended allocation: the plan's n_h, raised to the old n_h where the plan gives fewer."""

    allocation: dict[str, int]
    planned: dict[str, int]
    raised: dict[str, int] = field(default_factory=dict)

    @property
    def excess(self) -> int:
        """Units above the plan's total (the sum of the raises)."""
        return sum(self.allocation.values()) - sum(self.planned.values())

    def notes(self, benchmark: str) -> list[str]:
        """One line per raised stratum, for the audit and ``evalpipe plan``."""
        return [
            f"{benchmark} stratum {name}: the plan allocates {self.planned[name]}, kept at the old run's "
            f"{floor} (largest-remainder allocation is not monotone in the total)"
            for name, floor in self.raised.items()
        ]


def floored_allocation(old: Mapping[str, int], planned: Mapping[str, int]) -> FlooredAllocation:
    """``max(planned_h, old_h)`` per stratum; refuses when an old stratum is absent from the new plan."""
    gone = sorted(set(old) - set(planned), key=stratum_sort_key)
    if gone:
        raise ConfigError(
            "the larger plan drops strata the old run sampled, so it cannot contain the old selection",
            details=[f"stratum {name}: {old[name]} sampled before, absent now" for name in gone],
        )
    allocation = {name: max(n_h, old.get(name, 0)) for name, n_h in planned.items()}
    raised = {name: old[name] for name in planned if old.get(name, 0) > planned[name]}
    return FlooredAllocation(allocation=allocation, planned=dict(planned), raised=raised)


@dataclass(frozen=True)
class ContainmentCheck:
    """Is every old entry in the new selection, as the prefix of its stratum's rank order?"""

    reused: int
    added: list[tuple[str, str]]
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def _key(entry: ManifestEntry) -> tuple[str, str]:
    return entry.benchmark, entry.source_id


def check_contains(old: Manifest, new: Manifest) -> ContainmentCheck:
    """Check that ``new`` extends ``old``: same seed and data, every old entry kept, old = rank prefix.

    Containment is what lets the old answers be reused; the prefix property (per stratum, the old
    entries are exactly the first ``n_h`` of the new stratum sorted by rank key) is what the selection
    rule promises and fails only if the stratum's population changed.  Every rank key is recomputed
    from the seed, so a manifest edited by hand or sampled with another seed is caught.
    """
    problems: list[str] = []
    if old.seed != new.seed:
        problems.append(f"sampling seeds differ: {old.seed} (old) vs {new.seed} (new)")
    new_blocks = {b.benchmark: b for b in new.benchmarks}
    for block in old.benchmarks:
        grown = new_blocks.get(block.benchmark)
        if grown is None:
            problems.append(f"{block.benchmark}: sampled in the old run, absent from the new plan")
        elif grown.dataset.fingerprint != block.dataset.fingerprint:
            problems.append(
                f"{block.benchmark}: dataset fingerprint {block.dataset.fingerprint[:16]} (old) "
                f"!= {grown.dataset.fingerprint[:16]} (new)"
            )
    new_entries = {_key(e): e for e in new.entries}
    reused = 0
    for entry in old.entries:
        match = new_entries.get(_key(entry))
        if match is None:
            problems.append(f"{entry.benchmark} {entry.source_id}: in the old selection, not in the new one")
            continue
        if (match.stratum, match.record_sha256, match.rank_key) != (
            entry.stratum,
            entry.record_sha256,
            entry.rank_key,
        ):
            problems.append(f"{entry.benchmark} {entry.source_id}: stratum, record hash or rank key changed")
            continue
        if entry.rank_key != rank_key(old.seed, entry.benchmark, entry.source_id):
            problems.append(f"{entry.benchmark} {entry.source_id}: rank key does not match seed {old.seed}")
            continue
        reused += 1
    problems.extend(_prefix_problems(old, new))
    old_keys = {_key(e) for e in old.entries}
    added = [_key(e) for e in new.entries if _key(e) not in old_keys]
    return ContainmentCheck(reused=reused, added=added, problems=problems)


def _prefix_problems(old: Manifest, new: Manifest) -> list[str]:
    """Per (benchmark, stratum): the old entries must be the first n_h of the new rank order."""
    strata: dict[tuple[str, str], list[ManifestEntry]] = {}
    for entry in new.entries:
        strata.setdefault((entry.benchmark, entry.stratum), []).append(entry)
    old_strata: dict[tuple[str, str], set[str]] = {}
    for entry in old.entries:
        old_strata.setdefault((entry.benchmark, entry.stratum), set()).add(entry.source_id)
    problems = []
    for (benchmark, stratum), ids in old_strata.items():
        ranked = sorted(strata.get((benchmark, stratum), []), key=lambda e: e.rank_key)
        prefix = {e.source_id for e in ranked[: len(ids)]}
        if prefix != ids:
            problems.append(
                f"{benchmark} stratum {stratum}: the old {len(ids)} entries are not the first {len(ids)} of "
                f"the new rank order ({len(prefix - ids)} new entries rank before old ones)"
            )
    return problems


def entry_generations(root: Path) -> dict[tuple[str, str], int]:
    """The run's entries of earlier generations (``ExtensionRecord.generation_of``); empty for a run that was
    not extended, or whose extension.json predates the generations (one generation)."""
    rd = RunDir(Path(root))
    if not rd.extension.is_file():
        return {}
    return read_model(rd.extension, ExtensionRecord).generation_of()


def prior_generations(old_root: Path, old: Manifest) -> list[dict[str, list[str]]]:
    """The generations an extension of the run at ``old_root`` (manifest ``old``) records: the old run's own
    earlier generations (its extension.json), then the old run's new entries as one more generation — so the
    order of a chain of extensions is kept recursively (``evalpipe.hashing.block_order``)."""
    rd = RunDir(Path(old_root))
    earlier = read_model(rd.extension, ExtensionRecord).prior_generations if rd.extension.is_file() else []
    seen = {(b, sid) for generation in earlier for b, sids in generation.items() for sid in sids}
    own: dict[str, list[str]] = {}
    for e in old.entries:
        if (e.benchmark, e.source_id) not in seen:
            own.setdefault(e.benchmark, []).append(e.source_id)
    return [*earlier, {b: sorted(sids) for b, sids in own.items()}]
