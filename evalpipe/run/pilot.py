"""The internal pilot's decision (``generation.sequential.pilot``): after every arm sent its pilot units, the
pooled discordance of the judged pair fixes the attempts of every remaining unit — once, before any of them is
sent (``evalpipe.stats.pilot``: why that keeps α, and the path ``evalpipe plan`` simulates).

The counts are the in-run rule's own (``SequentialStopper.pilot_counts``: the units complete in the test and the
control arm, less those dropped in both, before a crossing inside the pilot), read from the arms' exchange files.
``pilot.json`` is written at the paired run's root and copied into every variant's directory, where the EvalScope
stage (which attempts to send) and the outcomes (which attempts a unit has) read it.
"""

from __future__ import annotations

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
from evalpipe.run.sequential_stop import SequentialStopper, arm_for, dropped_entries
from evalpipe.stats.pilot_rule import PilotCounts, PilotRule
from evalpipe.stats.pilot_rule import decide as pooled_choice


def read_decision(rundir: RunDir) -> PilotDecision | None:
    """The decision of a run whose pilot is done (``pilot.json``), or None."""
    return read_model(rundir.pilot, PilotDecision) if rundir.pilot.is_file() else None


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
    """Copy ``pilot.json`` into every variant's directory (its EvalScope stage and outcomes read it there)."""
    for directory in variant_dirs:
        shutil.copyfile(root.pilot, RunDir(directory).pilot)


def asked_attempts(cfg: RunConfig, rundir: RunDir) -> Callable[[str, str], int] | None:
    """``(benchmark, source_id) → attempts asked`` for a run with an internal pilot (the outcomes hold those):
    before the decision the pilot's (one, two for its agreement entries: the stopper's own plan of the
    pilot), after it the decision's; None without a pilot (every attempt of a task's ``repeats`` is asked)."""
    seq = cfg.generation.sequential
    if seq is None or seq.pilot is None:
        return None
    decision = read_decision(rundir)
    if decision is not None:
        return decision.attempts_for
    manifest = read_model(rundir.manifest, Manifest)
    index_map = read_model(rundir.index_map, IndexMap)
    arm = arm_for(cfg, cfg.variants[0].name if cfg.variants else None, rundir.root, together=False)
    assert arm is not None  # the config's pilot check: variants with a control
    stopper = SequentialStopper(
        arm, cfg, manifest.seed, index_map, dropped=dropped_entries(manifest, index_map)
    )
    twice = {e for name in stopper.blocks for e in stopper.agreement_entries(name)}
    return lambda benchmark, source_id: 2 if f"{benchmark}/{source_id}" in twice else 1
