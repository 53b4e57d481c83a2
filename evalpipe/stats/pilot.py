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
from evalpipe.stats.pilot_rule import PilotCounts, PilotRule, chance_discordance, decide

__all__ = [
    "PilotBlockDesign",
    "PilotCounts",
    "PilotOutcome",
    "PilotRule",
    "chance_discordance",
    "simulate_pilot",
]


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
    more than one attempt (``chosen``: the attempts per remaining unit it chose); ``joint``: every block passed on the path (the sign-off)."""

    passed: list[NDArray[np.bool_]]
    attempts: list[NDArray[np.float64]]
    chosen: NDArray[np.int64]

    @property
    def fired(self) -> NDArray[np.bool_]:
        """Per path: the rule bought more than one attempt per remaining unit."""
        out: NDArray[np.bool_] = self.chosen > 1
        return out

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


@dataclass(frozen=True)
class AttemptModel:
    """How the attempts of one unit relate (``simulate_pilot``).  ``correlation`` ρ: each unit, with probability
    ρ, answers every attempt as its first (a server that repeats itself: greedy decoding on a warm cache), else
    draws them independently — the correlation of two attempts' differences is ρ and each attempt keeps the
    three-point law.  ``drift``: the pilot units are easier than the rest — their discordance is
    ``(1 − drift) ψ``, the rest's ψ."""

    correlation: float = 0.0
    drift: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.correlation <= 1.0 or not 0.0 <= self.drift < 1.0:
            raise ValueError(
                f"correlation must lie in [0, 1] and drift in [0, 1), got {self.correlation}, {self.drift}"
            )


def simulate_pilot(
    blocks: Sequence[PilotBlockDesign],
    rule: PilotRule,
    discordances: Sequence[float],
    drops: Sequence[float],
    *,
    paths: int,
    seed: int,
    arms: int = 3,
    model: AttemptModel = AttemptModel(),
) -> PilotOutcome:
    """The run's path (module docstring) on ``paths`` seeded sequences, every block at once (the pooled rule
    couples them): block b at discordance ``discordances[b]`` and drop ``drops[b]``, its attempts as ``model``
    says.  Spend in turn: the control sends the pilot and, without a crossing in it, the remainder at the
    chosen attempts; the other ``arms − 1`` arms send up to the stop."""
    if paths < 1:
        raise ValueError("paths must be >= 1")
    if any(b.design.sequential_share != 1.0 for b in blocks):
        raise ValueError("a pilot judges by the e-processes alone (sequential_share 1): no fixed look")
    rng = [np.random.default_rng([seed, b]) for b in range(len(blocks))]
    passed: list[list[NDArray[np.bool_]]] = [[] for _ in blocks]
    spent: list[list[NDArray[np.float64]]] = [[] for _ in blocks]
    fired_all: list[NDArray[np.int64]] = []
    done = 0
    while done < paths:
        size = min(CHUNK_PATHS, paths - done)
        attempts = [
            _draw(rng[b], size, block, rule, discordances[b], drops[b], model)
            for b, block in enumerate(blocks)
        ]
        counts: list[list[PilotCounts]] = [[] for _ in range(size)]
        in_pilot = []
        for block, a in zip(blocks, attempts, strict=True):
            measured, early = _pilot_counts(block, a, rule)
            for path, c in enumerate(measured):
                counts[path].append(c)
            in_pilot.append(early)
        # the run's own decision (``evalpipe.run.pilot.decide``): the blocks' counts pooled, then the rule
        chosen = np.array([decide(rule, c)[1] for c in counts], dtype=np.int64)
        fired_all.append(chosen)
        for b, (block, a) in enumerate(zip(blocks, attempts, strict=True)):
            n, k_pilot = block.design.n, rule.pilot_units(block.design.n)
            k = np.ones((size, n))
            k[:, : rule.agreement_units(k_pilot)] = 2.0
            k[:, k_pilot:] = chosen[:, None].astype(np.float64)
            codes, units, _ = gate_codes(_unit_values(a, k), block.design)
            cumulative = np.cumsum(k, axis=1)
            to_stop = cumulative[np.arange(size), units - 1]
            control = np.where(in_pilot[b], cumulative[:, k_pilot - 1], cumulative[:, -1])
            passed[b].append(codes == 1)
            spent[b].append(control + (arms - 1) * to_stop)
        done += size
    return PilotOutcome(
        [np.concatenate(p) for p in passed], [np.concatenate(s) for s in spent], np.concatenate(fired_all)
    )


def _pilot_counts(
    block: PilotBlockDesign, a: NDArray[np.float64], rule: PilotRule
) -> tuple[list[PilotCounts], NDArray[np.bool_]]:
    """Per path, what the block's pilot measured (``PilotCounts``: the run's ``pilot_counts``) and whether the
    e-processes crossed inside it — on the pilot's own unit values (one attempt, two for its first units)."""
    k_pilot = rule.pilot_units(block.design.n)
    m = rule.agreement_units(k_pilot)
    asked = np.ones(k_pilot)
    asked[:m] = 2.0
    _, units, crossed = gate_codes(_unit_values(a[:, :k_pilot], asked), block.design)
    early = crossed & (units <= k_pilot)
    judged = np.where(early, units, k_pilot)
    seen = np.arange(k_pilot)[None, :] < judged[:, None]
    discordant = np.sum((a[:, :k_pilot, 0] != 0.0) & seen, axis=1)
    x = np.where(seen[:, :m], (a[:, :m, 0] - a[:, :m, 1]) ** 2 / 2.0, 0.0)
    within, squares, paired = x.sum(axis=1), (x * x).sum(axis=1), seen[:, :m].sum(axis=1)
    chance = chance_discordance(block.accuracy)
    out = [
        PilotCounts(int(j), int(d), float(j) * chance, int(p), float(w), float(q))
        for j, d, p, w, q in zip(judged, discordant, paired, within, squares, strict=True)
    ]
    return out, early


def _unit_values(a: NDArray[np.float64], asked: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each unit's value: the mean of its first ``asked`` attempts (``asked``: per unit, or per path and unit)."""
    k = np.broadcast_to(asked, a.shape[:2]).astype(np.int64)
    sums = np.take_along_axis(np.cumsum(a, axis=2), (k - 1)[:, :, None], axis=2)[:, :, 0]
    out: NDArray[np.float64] = sums / k
    return out


def _draw(
    rng: np.random.Generator,
    size: int,
    block: PilotBlockDesign,
    rule: PilotRule,
    discordance: float,
    drop: float,
    model: AttemptModel,
) -> NDArray[np.float64]:
    """Paths × units × attempts paired differences of one block (``simulate_pilot``'s model): the pilot units at
    ``(1 − drift) ψ``, the rest at ψ, each unit's attempts copies of its first with probability ``correlation``."""
    n, k_pilot = block.design.n, rule.pilot_units(block.design.n)
    gain, loss = (np.empty(n), np.empty(n))
    gain[:k_pilot], loss[:k_pilot] = unit_probabilities((1.0 - model.drift) * discordance, drop)
    gain[k_pilot:], loss[k_pilot:] = unit_probabilities(discordance, drop)
    draw = rng.random((size, n, rule.attempts))
    a = np.where(draw < gain[:, None], 1.0, np.where(draw < (gain + loss)[:, None], -1.0, 0.0))
    if model.correlation > 0.0:
        same = rng.random((size, n)) < model.correlation
        a[:, :, 1:] = np.where(same[:, :, None], a[:, :, :1], a[:, :, 1:])
    return a
