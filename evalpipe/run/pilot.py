"""The internal pilot's decision (``generation.sequential.pilot``): after every arm sent its pilot units, the
pooled discordance of the judged pair fixes the attempts of every remaining unit — once, before any of them is
sent (``evalpipe.stats.pilot``: why that keeps α, and the path ``evalpipe plan`` simulates).

The counts are the in-run rule's own (``SequentialStopper.pilot_counts``: the units complete in the test and the
control arm, less those dropped in both, before a crossing inside the pilot), read from the arms' exchange files.
``pilot.json`` is written at the paired run's root and copied into every variant's directory, where the EvalScope
stage (which attempts to send) and the outcomes (which attempts a unit has) read it.

A decision read back is checked before it is trusted (``checked_decision``, ``arm_decision``): against the config
(arms, rule, blocks, design accuracies), the manifest (every pilot entry a sampled unit of its block), its own
counts (the attempts the rule gives them) and, at the root, its copies in the arms; a disagreement, or arms that
hold a decision the root has lost, is refused in one line naming the file and the field, with nothing rewritten.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from evalpipe.artifacts import RunDir, read_model, write_model
from evalpipe.artifacts.schema.evalscope import IndexMap
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.pilot import PilotBlock, PilotDecision
from evalpipe.clock import utc_now
from evalpipe.config.models import RunConfig
from evalpipe.errors import ArtifactError
from evalpipe.run.sequential_stop import SequentialStopper, arm_for, dropped_entries
from evalpipe.stats.pilot_rule import PilotCounts, PilotRule, chance_discordance
from evalpipe.stats.pilot_rule import decide as pooled_choice


def read_decision(rundir: RunDir) -> PilotDecision | None:
    """The decision of a run whose pilot is done (``pilot.json``), or None; unchecked (see ``arm_decision``)."""
    return read_model(rundir.pilot, PilotDecision) if rundir.pilot.is_file() else None


def arm_decision(cfg: RunConfig, rundir: RunDir, manifest: Manifest) -> PilotDecision | None:
    """A variant's copy of the decision, checked against the config and the manifest (``ArtifactError``
    naming the file and the field when it disagrees), or None before the decision."""
    decision = read_decision(rundir)
    if decision is not None:
        _check(cfg, manifest, decision, rundir.pilot)
    return decision


def checked_decision(
    cfg: RunConfig, root: RunDir, manifest: Manifest, variant_dirs: list[Path]
) -> PilotDecision | None:
    """The paired run's decision (``root/pilot.json``), checked against the config, the manifest and every
    variant's copy of it; None when no pilot was decided (neither the root nor any arm holds one)."""
    copies = [RunDir(d).pilot for d in variant_dirs if RunDir(d).pilot.is_file()]
    decision = read_decision(root)
    if decision is None:
        if copies:
            raise ArtifactError(
                f"{root.pilot}: missing, but {copies[0]} holds a decided pilot: the run's decision was removed; "
                "restore it (a pilot is decided once, on the pilot's answers only)"
            )
        return None
    _check(cfg, manifest, decision, root.pilot)
    for path in copies:
        copy = read_model(path, PilotDecision)
        differs = [
            name for name in PilotDecision.model_fields if getattr(copy, name) != getattr(decision, name)
        ]
        if differs:
            raise ArtifactError(
                f"{path}: field {differs[0]} differs from the run's decision {root.pilot}: one of them was "
                "edited; nothing was rewritten"
            )
    return decision


def _check(cfg: RunConfig, manifest: Manifest, decision: PilotDecision, path: Path) -> None:
    """``ArtifactError`` naming ``path`` and the first field of ``decision`` that the config, the manifest or
    the decision's own counts contradict."""
    problem = _disagreement(cfg, manifest, decision)
    if problem is not None:
        field, why = problem
        raise ArtifactError(f"{path}: field {field}: {why}; nothing was rewritten")


def _disagreement(cfg: RunConfig, manifest: Manifest, decision: PilotDecision) -> tuple[str, str] | None:
    seq = cfg.generation.sequential
    if seq is None or seq.pilot is None:
        return "attempts", "the config has no generation.sequential.pilot"
    pilot = seq.pilot
    rule = PilotRule(**pilot.model_dump())
    names = [v.name for v in cfg.variants]
    arm = arm_for(cfg, names[0] if names else None, Path("."), together=False)
    expected_arms = (arm.test, arm.control) if arm is not None else (None, None)
    for field, found, want in (
        ("test", decision.test, expected_arms[0]),
        ("control", decision.control, expected_arms[1]),
        ("share", decision.share, pilot.share),
        ("threshold", decision.threshold, pilot.threshold),
        ("attempts_if_above", decision.attempts_if_above, pilot.attempts),
        ("agreement", decision.agreement, pilot.agreement),
    ):
        if found != want:
            return field, f"{found!r} where the config says {want!r}"
    blocks = cfg.pilot_blocks()
    if [b.block for b in decision.blocks] != list(blocks):
        return "blocks", f"{[b.block for b in decision.blocks]} where the config gates {list(blocks)}"
    units = {(e.benchmark, e.source_id) for e in manifest.entries}
    for i, b in enumerate(decision.blocks):
        where = f"blocks[{i}]"
        if tuple(b.members) != blocks[b.block]:
            return f"{where}.members", f"{b.members} where the config's block has {list(blocks[b.block])}"
        if b.accuracy != cfg.design[b.block].accuracy:
            return f"{where}.accuracy", f"{b.accuracy} where design: says {cfg.design[b.block].accuracy}"
        in_block = sum(1 for e in manifest.entries if e.benchmark in b.members)
        if not 0 <= b.units <= in_block:
            return f"{where}.units", f"{b.units} where the manifest holds {in_block} units of the block"
        if b.units and b.pilot_units != rule.pilot_units(b.units):
            return (
                f"{where}.pilot_units",
                f"{b.pilot_units} is not the share {pilot.share} of {b.units} units",
            )
        if not 0 <= b.discordant <= b.judged <= b.pilot_units:
            return (
                f"{where}.judged",
                f"{b.discordant} discordant of {b.judged} judged, {b.pilot_units} in the pilot",
            )
        if len(b.entries) > in_block or len(set(b.entries)) != len(b.entries):
            return (
                f"{where}.entries",
                f"{len(b.entries)} entries, repeated or beyond the block's {in_block} units",
            )
        for entry in b.entries:
            bench, _, source_id = entry.partition("/")
            if bench not in b.members or (bench, source_id) not in units:
                return f"{where}.entries", f"{entry} is no sampled unit of the block (manifest)"
    if decision.discordant != sum(b.discordant for b in decision.blocks):
        return "discordant", f"{decision.discordant} is not the blocks' sum"
    expected = sum(b.judged * chance_discordance(b.accuracy) for b in decision.blocks)
    if not math.isclose(decision.expected, expected, rel_tol=1e-9, abs_tol=1e-12):
        return "expected", f"{decision.expected} is not the blocks' sum of judged x 2p(1-p) ({expected})"
    counts = [
        PilotCounts(b.judged, b.discordant, b.judged * chance_discordance(b.accuracy), b.paired, b.within,
                    b.within_squares)
        for b in decision.blocks
    ]  # fmt: skip
    _, attempts = pooled_choice(rule, counts)
    if decision.attempts != attempts:
        return "attempts", (
            f"{decision.attempts} where the rule gives {attempts} for {decision.discordant} discordant units "
            f"(the task holds at most {pilot.attempts} attempts)"
        )
    return None


def decide(cfg: RunConfig, root: RunDir, manifest: Manifest, index_map: IndexMap) -> PilotDecision:
    """Every gated block's pilot as the test and control arms answered it, pooled, and the attempts it gives
    the remaining units; written to ``root/pilot.json``."""
    seq = cfg.generation.sequential
    assert seq is not None and seq.pilot is not None
    names = [v.name for v in cfg.variants]
    arm = arm_for(cfg, names[0], root.root, together=False)
    assert arm is not None  # the config's pilot check: variants with a control
    # read every arm from its exchange file: the stopper's "own" arm is none of them (its records in memory)
    arm = replace(arm, variant="")
    stopper = SequentialStopper(
        arm, cfg, manifest.seed, index_map, dropped=dropped_entries(manifest, index_map)
    )
    rule = PilotRule(**seq.pilot.model_dump())
    blocks: list[PilotBlock] = []
    measured: list[PilotCounts] = []
    for name, block in stopper.blocks.items():
        accuracy = cfg.design[name].accuracy
        counts, crossed = stopper.pilot_counts(name, accuracy)
        measured.append(counts)
        blocks.append(
            PilotBlock(
                block=name,
                members=list(block.members),
                units=block.n - block.dropped,
                pilot_units=block.pilot_units,
                judged=counts.judged,
                discordant=counts.discordant,
                accuracy=accuracy,
                crossed=crossed,
                entries=stopper.pilot_entries(name),
                agreement_entries=stopper.agreement_entries(name),
                paired=counts.paired,
                within=counts.within,
                within_squares=counts.within_squares,
            )
        )
    pooled, attempts = pooled_choice(rule, measured)
    decision = PilotDecision(
        test=arm.test,
        control=arm.control,
        share=rule.share,
        threshold=rule.threshold,
        attempts_if_above=rule.attempts,
        agreement=rule.agreement,
        blocks=blocks,
        discordant=pooled.discordant,
        expected=pooled.expected,
        ratio=pooled.ratio,
        within_share=pooled.within_share(),
        effective_ratio=rule.effective_ratio(pooled, attempts),
        attempts=attempts,
        statement=statement(blocks, pooled, rule, attempts),
        decided_at=utc_now(),
    )
    write_model(root.pilot, decision)
    return decision


def statement(blocks: list[PilotBlock], counts: PilotCounts, rule: PilotRule, attempts: int) -> str:
    """What the pilot measured — the one-attempt discordance against the chance level and how much of it is
    within a unit — and what it chose, with why (``evalpipe.stats.pilot_rule``, "The rule")."""
    sizes = " + ".join(f"{b.judged} {b.block}" for b in blocks)
    ratio = counts.ratio
    if ratio is None:
        return f"internal pilot: no unit judged ({sizes}); 1 attempt per remaining unit"
    head = (
        f"internal pilot: {counts.discordant} of {counts.judged} judged units differ ({sizes}): {ratio:.2f} × the "
        f"chance level Σ 2p(1−p) = {counts.expected:.1f}"
    )
    w = counts.within_share()
    agreement = (
        f"; attempts of one unit, asked twice on {counts.paired}: no discordant unit to split"
        if w is None
        else f"; attempts of one unit, asked twice on {counts.paired}: {w:.0%} of the disagreement within a unit"
        f" (ρ = {1 - w:.2f})"
    )
    if ratio <= rule.threshold:
        return f"{head} ≤ threshold {rule.threshold:g}{agreement}: 1 attempt per remaining unit in every arm"
    if attempts > 1:
        effective = rule.effective_ratio(counts, attempts) or 0.0
        reach = f"{effective:.2f} × chance"
        if effective > rule.threshold:
            upper = rule.effective_ratio(counts, attempts, standard_errors=1.0) or 0.0
            reach += f" ({upper:.2f} one standard error of the within share up)"
        return (
            f"{head} > threshold {rule.threshold:g}{agreement}: {attempts} attempts per remaining unit in every arm "
            f"bring the block's noise to {reach}"
        )
    best = rule.effective_ratio(counts, rule.attempts)
    reach = f"{best:.2f}" if best is not None else "unmeasured"
    return (
        f"{head} > threshold {rule.threshold:g}{agreement}: 1 attempt per remaining unit in every arm — even "
        f"{rule.attempts} attempts leave the noise at {reach} × chance, above the threshold: the disagreement is "
        "between samples, which attempts do not average; more units, a wider margin or sampling at temperature "
        "> 0 would reach the target"
    )


def share_decision(root: RunDir, variant_dirs: list[Path]) -> None:
    """Copy ``pilot.json`` into every variant's directory that has none yet (its EvalScope stage and outcomes
    read it there); a copy already there was checked against the root's (``checked_decision``)."""
    for directory in variant_dirs:
        target = RunDir(directory).pilot
        if not target.is_file():
            shutil.copyfile(root.pilot, target)


def asked_attempts(cfg: RunConfig, rundir: RunDir, manifest: Manifest) -> Callable[[str, str], int] | None:
    """``(benchmark, source_id) → attempts asked`` for a run with an internal pilot (the outcomes hold those):
    before the decision the pilot's (one, two for its agreement entries: the stopper's own plan of the
    pilot), after it the decision's; None without a pilot (every attempt of a task's ``repeats`` is asked)."""
    seq = cfg.generation.sequential
    if seq is None or seq.pilot is None:
        return None
    decision = arm_decision(cfg, rundir, manifest)
    if decision is not None:
        return decision.attempts_for
    index_map = read_model(rundir.index_map, IndexMap)
    arm = arm_for(cfg, cfg.variants[0].name if cfg.variants else None, rundir.root, together=False)
    assert arm is not None  # the config's pilot check: variants with a control
    stopper = SequentialStopper(
        arm, cfg, manifest.seed, index_map, dropped=dropped_entries(manifest, index_map)
    )
    twice = {e for name in stopper.blocks for e in stopper.agreement_entries(name)}
    return lambda benchmark, source_id: 2 if f"{benchmark}/{source_id}" in twice else 1
