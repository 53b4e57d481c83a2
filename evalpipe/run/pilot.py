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
from evalpipe.stats.pilot_rule import PilotRule, chance_discordance


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
    stopper = SequentialStopper(arm, cfg, manifest.seed, index_map, dropped=dropped_entries(manifest, index_map))
    rule = PilotRule(seq.pilot.share, seq.pilot.threshold, seq.pilot.attempts)
    blocks: list[PilotBlock] = []
    for name, block in stopper.blocks.items():
        judged, discordant, crossed = stopper.pilot_counts(name)
        blocks.append(
            PilotBlock(
                block=name,
                members=list(block.members),
                units=block.n - block.dropped,
                pilot_units=block.pilot_units,
                judged=judged,
                discordant=discordant,
                accuracy=cfg.design[name].accuracy,
                crossed=crossed,
                entries=stopper.pilot_entries(name),
            )
        )
    discordant = sum(b.discordant for b in blocks)
    expected = sum(b.judged * chance_discordance(b.accuracy) for b in blocks)
    attempts = rule.attempts_after(discordant, expected)
    ratio = discordant / expected if expected > 0 else None
    decision = PilotDecision(
        test=arm.test,
        control=arm.control,
        share=rule.share,
        threshold=rule.threshold,
        attempts_if_above=rule.attempts,
        blocks=blocks,
        discordant=discordant,
        expected=expected,
        ratio=ratio,
        attempts=attempts,
        statement=statement(blocks, discordant, expected, rule, attempts),
        decided_at=utc_now(),
    )
    write_model(root.pilot, decision)
    return decision


def statement(blocks: list[PilotBlock], discordant: int, expected: float, rule: PilotRule, attempts: int) -> str:
    """One line: what the pilot measured against the rule's threshold and what it chose."""
    judged = sum(b.judged for b in blocks)
    sizes = " + ".join(f"{b.judged} {b.block}" for b in blocks)
    if expected <= 0:
        return f"internal pilot: no unit judged ({sizes}); 1 attempt per remaining unit"
    ratio = discordant / expected
    side = ">" if ratio > rule.threshold else "≤"
    return (
        f"internal pilot: {discordant} of {judged} judged units differ ({sizes}); {ratio:.2f} × the chance "
        f"level Σ 2p(1−p) = {expected:.1f} {side} threshold {rule.threshold:g}: {attempts} attempt"
        f"{'s' if attempts != 1 else ''} per remaining unit in every arm"
    )


def share_decision(root: RunDir, variant_dirs: list[Path]) -> None:
    """Copy ``pilot.json`` into every variant's directory (its EvalScope stage and outcomes read it there)."""
    for directory in variant_dirs:
        shutil.copyfile(root.pilot, RunDir(directory).pilot)


def asked_attempts(cfg: RunConfig, rundir: RunDir) -> Callable[[str, str], int] | None:
    """``(benchmark, source_id) → attempts asked`` for a run with an internal pilot (the outcomes hold those):
    before the decision one for every entry (only the pilot was sent), after it the decision's; None without a
    pilot (every attempt of a task's ``repeats`` is asked)."""
    seq = cfg.generation.sequential
    if seq is None or seq.pilot is None:
        return None
    decision = read_decision(rundir)
    if decision is None:
        return lambda benchmark, source_id: 1
    return decision.attempts_for
