"""``evalpipe plan``'s lines for an internal pilot (``generation.sequential.pilot``): the run's exact path
simulated over every gated block at once (``evalpipe.stats.pilot.simulate_pilot`` — the pooled rule couples the
blocks, so the sign-off is the joint simulation's, not a product of the blocks').

Per discordance case (the same cases as the other designs: measured, argued, 2p(1 − p)): each block's P(pass)
with no regression, at −margin (that block at its margin, the others unchanged) and at its must-catch drop; the
sign-off's P(pass | no regression), its worst one-block-at-−margin and its single-block miss; how often the rule
chose more attempts; the expected output tokens in turn (the pilot, then the remainder at the chosen attempts:
the control whole unless the pilot crossed, the other arms to the stop).  The figures assume attempts of one
unit disagree independently (ρ = 0, ``assumption_lines``); beside them the same sign-off when they repeat
themselves (ρ = 1), where the run's measurement of ρ keeps one attempt.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from evalpipe.config.models import RunConfig
from evalpipe.stats.operating import GateDesign
from evalpipe.stats.pilot import AttemptModel, PilotBlockDesign, PilotOutcome, PilotRule, simulate_pilot

#: Paths per point (Monte-Carlo SE ≤ 0.011, ≤ 0.004 near 0.97); seeded as the plan's other simulations.
PILOT_PATHS = 2000
PILOT_SEED = 20261206


@lru_cache(maxsize=256)
def _simulated(
    designs: tuple[PilotBlockDesign, ...],
    rule: PilotRule,
    discordances: tuple[float, ...],
    drops: tuple[float, ...],
    seed: int,
    arms: int,
    correlation: float = 0.0,
) -> PilotOutcome:
    """``simulate_pilot`` remembered per process (a pure function of its arguments, seeded): the plan's lines
    and its callers ask for the same points again."""
    return simulate_pilot(
        designs,
        rule,
        discordances,
        drops,
        paths=PILOT_PATHS,
        seed=seed,
        arms=arms,
        model=AttemptModel(correlation),
    )


def assumption_lines() -> list[str]:
    """What the pilot's figures assume about attempts of one unit, and what the run measures instead."""
    return [
        "    assumed: attempts of one unit disagree independently (ρ = 0: the disagreement is within a unit, and "
        "attempts average it);",
        "    the run measures ρ on the pilot's units asked twice and buys attempts only where they reach the "
        "threshold (at ρ = 1 they average nothing)",
    ]


@dataclass(frozen=True)
class PilotCase:
    """One discordance case over every gated block: its label and each block's discordance."""

    label: str
    discordances: list[float]


@dataclass(frozen=True)
class PilotInput:
    """One gated block as the plan knows it: its units after foreseen drops, margin, must-catch drop, design
    accuracy and output tokens per attempt."""

    name: str
    n: int
    margin_pts: float
    drop_pts: float | None
    accuracy: float
    tokens_per_attempt: float


def pilot_lines(cfg: RunConfig, blocks: list[PilotInput], cases: list[PilotCase]) -> list[str]:
    """The pilot design's lines (module docstring); empty without ``generation.sequential.pilot``."""
    seq = cfg.generation.sequential
    if seq is None or seq.pilot is None or not blocks:
        return []
    rule = PilotRule(**seq.pilot.model_dump())
    arms = max(1, len(cfg.variants))
    designs = [
        PilotBlockDesign(
            b.name, GateDesign(b.n, b.margin_pts, seq.alpha, 1.0), b.accuracy, b.tokens_per_attempt
        )
        for b in blocks
    ]
    out = [
        f"  internal pilot: each gated block's first {rule.share:g} of units at 1 attempt ({rule.agreement:g} of them "
        f"at 2: how far attempts of one unit agree);",
        f"    the rest at the fewest attempts ≤ {rule.attempts} that bring the block's noise to {rule.threshold:g} × "
        f"Σ 2p(1−p), else 1 ({PILOT_PATHS} joint paths)",
        *assumption_lines(),
    ]
    for i, case in enumerate(cases):
        seed = PILOT_SEED + 1000 * i

        def at(
            drops: list[float], shift: int, case: PilotCase = case, seed: int = seed, correlation: float = 0.0
        ) -> PilotOutcome:
            psi = [
                min(d, 1.0 - max(b.margin_pts, b.drop_pts or 0.0) / 100.0)
                for d, b in zip(case.discordances, blocks, strict=True)
            ]
            return _simulated(tuple(designs), rule, tuple(psi), tuple(drops), seed + shift, arms, correlation)

        none = [0.0] * len(blocks)
        zero = at(none, 0)
        margins: list[PilotOutcome] = []
        misses: list[tuple[PilotOutcome | None, int]] = []
        for b, block in enumerate(blocks):
            drops = list(none)
            drops[b] = block.margin_pts / 100.0
            margins.append(at(drops, 1 + b))
            if block.drop_pts is not None:
                drops[b] = block.drop_pts / 100.0
                misses.append((at(drops, 101 + b), b))
            else:
                misses.append((None, b))
        for b, block in enumerate(blocks):
            miss = misses[b][0]
            drop = f"−{block.drop_pts:g}: {miss.p_pass(b):.3f}" if miss is not None else "no must-catch drop"
            out.append(
                f"    {block.name:<18} pilot, {case.label}: P(pass) {zero.p_pass(b):.3f} | "
                f"−{block.margin_pts:g}: {margins[b].p_pass(b):.4f} | {drop}"
            )
        worst_margin = max((m.p_pass(), blocks[b].name) for b, m in enumerate(margins))
        single = [(m.p_pass(), blocks[b].name, blocks[b].drop_pts) for m, b in misses if m is not None]
        miss_text = (
            "single-block miss {:.4f} ({} at −{:g} pts)".format(*max(single))
            if single
            else "single-block miss: no must-catch drop set"
        )
        out.append(
            f"    pilot, {case.label}: sign-off P(pass | no regression) {zero.p_pass():.3f} | a block at −margin "
            f"{worst_margin[0]:.4f} ({worst_margin[1]}) | {miss_text}"
        )
        repeats = at(none, 0, correlation=1.0)
        out.append(
            f"      tokens: out {zero.tokens(designs) / 1e6:.2f} M in turn (expected); more than 1 attempt chosen on "
            f"{zero.fired.mean():.0%} of runs"
        )
        out.append(
            f"      if attempts of one unit repeat themselves (ρ = 1): sign-off P(pass | no regression) "
            f"{repeats.p_pass():.3f}, {repeats.tokens(designs) / 1e6:.2f} M tokens, attempts bought on "
            f"{repeats.fired.mean():.0%} of runs"
        )
    return out
