"""The internal pilot: the first units of every gated block decide how many attempts the rest get.

**Why.**  A gated block's ``P(pass | no regression)`` falls as the discordance ψ of the two arms grows; a design
sized for the discordance two runs of one model are argued to have (a ratio of ``2p(1 − p)``) misses its target
when they agree no better than chance.  Sizing every unit for the worst case doubles the tokens a release pays
when the argument holds.  The pilot measures instead: the first ``share`` of each gated block's units (in the
block's seeded order, one attempt per arm) give the pooled discordance of the judged pair, and **before any
further unit is sent** the rule fixes the attempts per remaining unit — ``attempts`` when the pilot's discordance
exceeds ``threshold × Σ K_b 2p_b(1 − p_b)`` (the chance level at each block's design accuracy), else one.

**Why α is kept** (Waudby-Smith & Ramdas 2024, "Estimating means of bounded random variables by betting",
JRSS B, arXiv 2010.09686, §4–5).  A unit's value is the mean of its attempts' paired differences,
``d ∈ [−1, 1]`` with mean Δ whatever the number of attempts; the attempts of unit ``t`` are fixed by answers to
*other* units (the pilot's), before unit ``t``'s own exist — a predictable choice, as the bet is.  Under
``Δ ≤ −M`` each factor ``1 + λ_t(X_t − m)`` then has conditional mean ≤ 1 whatever the attempts, so ``K⁺`` stays
a nonnegative supermartingale and Ville's inequality bounds ``P(∃t: K⁺_t ≥ 1/α_s) ≤ α_s`` over the whole block;
the final fixed look (``sequential_share < 1``) is not used with a pilot (its calibrated ``z*`` assumes one law
per unit).  The bets stay tuned to the block's planned n from the first unit (the plan is fixed before the run).
A rule that re-asks a unit *because of its own answer* is not predictable and breaks the bound
(``perf/bench_pilot_attempts.py --type-one``: P(pass | −margin) 0.41–0.85 at α 0.025).

**The exact path** (``simulate_pilot``): what a run does, in order — every arm sends the pilot units; a crossing
inside the pilot is the block's verdict and nothing more of that block is sent; the judged pilot units (those
before a crossing, less the units dropped before generation) give the pooled ratio; the remaining units go at the
chosen attempts; the e-processes continue over every unit to their crossing.  The run's own code
(``evalpipe.run.pilot``) calls ``attempts_after`` (``evalpipe.stats.pilot_rule``: plain Python, so a run's
import stays without numpy) on the counts it observed, and compare judges the block with
``evalpipe.stats.operating.gate_codes`` — the function simulated here.

**The model** of one attempt is ``evalpipe.stats.operating``'s three-point law (test-only right ``ψ/2``,
control-only right ``ψ/2 + δ``), independent across attempts of one unit: exact when the disagreement is
within-sample (two runs of one model on one prompt — what 2p(1 − p) describes); a between-sample disagreement
would not shrink with attempts, and the plan says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evalpipe.stats.operating import CHUNK_PATHS, GateDesign, gate_codes, unit_probabilities
from evalpipe.stats.pilot_rule import PilotRule, chance_discordance

__all__ = ["PilotBlockDesign", "PilotOutcome", "PilotRule", "chance_discordance", "simulate_pilot"]


@dataclass(frozen=True)
class PilotBlockDesign:
    """One gated block as the pilot sees it: its design (n = the units that remain, bets tuned to it), the
    design accuracy its chance level is read at, and the output tokens of one attempt (for the spend)."""

    name: str
    design: GateDesign
    accuracy: float
    tokens_per_attempt: float = 0.0


@dataclass(frozen=True)
class PilotOutcome:
    """Per block, per path: passed, the output attempts spent over the arms in turn, and whether the rule chose
    more than one attempt; ``joint``: every block passed on the path (the sign-off)."""

    passed: list[NDArray[np.bool_]]
    attempts: list[NDArray[np.float64]]
    fired: NDArray[np.bool_]

    @property
    def joint(self) -> NDArray[np.bool_]:
        out: NDArray[np.bool_] = np.logical_and.reduce(self.passed)
        return out

    def p_pass(self, block: int | None = None) -> float:
        return float((self.joint if block is None else self.passed[block]).mean())

    def standard_error(self, block: int | None = None) -> float:
        p, paths = self.p_pass(block), self.fired.size
        return math.sqrt(max(p * (1.0 - p), 1.0 / paths) / paths)

    def tokens(self, blocks: Sequence[PilotBlockDesign]) -> float:
        """Expected output tokens over the arms in turn."""
        return sum(float(a.mean()) * b.tokens_per_attempt for a, b in zip(self.attempts, blocks, strict=True))


def simulate_pilot(
    blocks: Sequence[PilotBlockDesign],
    rule: PilotRule,
    discordances: Sequence[float],
    drops: Sequence[float],
    *,
    paths: int,
    seed: int,
    arms: int = 3,
) -> PilotOutcome:
    """The run's path (module docstring) on ``paths`` seeded sequences, every block at once (the pooled rule
    couples them): block b at discordance ``discordances[b]`` and drop ``drops[b]``.  Spend in turn: the control
    sends the pilot and, without a crossing in it, the remainder at the chosen attempts; the other ``arms − 1``
    arms send up to the stop."""
    if paths < 1:
        raise ValueError("paths must be >= 1")
    if any(b.design.sequential_share != 1.0 for b in blocks):
        raise ValueError("a pilot judges by the e-processes alone (sequential_share 1): no fixed look")
    rng = [np.random.default_rng([seed, b]) for b in range(len(blocks))]
    passed: list[list[NDArray[np.bool_]]] = [[] for _ in blocks]
    spent: list[list[NDArray[np.float64]]] = [[] for _ in blocks]
    fired_all: list[NDArray[np.bool_]] = []
    done = 0
    while done < paths:
        size = min(CHUNK_PATHS, paths - done)
        attempts = []
        for b, block in enumerate(blocks):
            gain, loss = unit_probabilities(discordances[b], drops[b])
            draw = rng[b].random((size, block.design.n, rule.attempts))
            attempts.append(np.where(draw < gain, 1.0, np.where(draw < gain + loss, -1.0, 0.0)))
        discordant = np.zeros(size)
        expected = np.zeros(size)
        in_pilot = []
        for block, a in zip(blocks, attempts, strict=True):
            k_pilot = rule.pilot_units(block.design.n)
            first = a[:, :k_pilot, 0]
            codes, units, crossed = gate_codes(first, block.design)
            early = crossed & (units <= k_pilot)
            judged = np.where(early, units, k_pilot)
            seen = np.arange(k_pilot)[None, :] < judged[:, None]
            discordant += np.sum((first != 0.0) & seen, axis=1)
            expected += judged * chance_discordance(block.accuracy)
            in_pilot.append(early)
        ratio = np.divide(discordant, expected, out=np.zeros(size), where=expected > 0.0)
        fired = (expected > 0.0) & (ratio > rule.threshold)
        fired_all.append(fired)
        for b, (block, a) in enumerate(zip(blocks, attempts, strict=True)):
            n, k_pilot = block.design.n, rule.pilot_units(block.design.n)
            k = np.ones((size, n))
            k[:, k_pilot:] = np.where(fired[:, None], float(rule.attempts), 1.0)
            d = np.where(k > 1.0, a.mean(axis=2), a[:, :, 0])
            codes, units, _ = gate_codes(d, block.design)
            cumulative = np.cumsum(k, axis=1)
            to_stop = cumulative[np.arange(size), units - 1]
            control = np.where(in_pilot[b], float(k_pilot), cumulative[:, -1])
            passed[b].append(codes == 1)
            spent[b].append(control + (arms - 1) * to_stop)
        done += size
    return PilotOutcome(
        [np.concatenate(p) for p in passed], [np.concatenate(s) for s in spent], np.concatenate(fired_all)
    )
