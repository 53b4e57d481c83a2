"""The design a config runs, as ``evalpipe plan`` shows it first: per gated block and for the whole sign-off,
P(pass | no regression), P(pass | the must-catch drop), the expected output tokens and — with ``--from RUN``,
whose speed stage measured a decode rate — the GPU-hours, under every discordance case the plan evaluates.

The design is the one the run will use: the internal pilot when ``generation.sequential.pilot`` is set (the joint
simulation of ``evalpipe.plan.pilot``, same paths and seeds, so its numbers are the ``--detail`` lines'), else the
sequential design when ``generation.sequential`` is set, else the fixed look (``evalpipe.plan.operating``'s rows,
the same ``pass_probability`` calls).  The alternatives and the search for what would reach the target are
``--detail`` (``evalpipe.plan.operating``); only the points shown here are computed for the default view.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evalpipe.config.models import RunConfig
from evalpipe.plan.operating import (
    PLAN_PATHS,
    PLAN_SEED,
    GatedBlock,
    alternative_rows,
    block_designs,
    gate_split,
    reach_items,
    sign_off,
)
from evalpipe.plan.pilot import PILOT_SEED, _simulated
from evalpipe.stats.design import gpu_hours
from evalpipe.stats.operating import GateDesign, pass_probability
from evalpipe.stats.pilot import PilotBlockDesign, PilotOutcome, PilotRule

DesignKind = Literal["internal pilot", "sequential", "fixed"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BlockCase(_Model):
    """One gated block under one discordance case."""

    case: str = Field(description="The discordance case: measured on RUN, argued (config design:), 2p(1-p).")
    discordance: float
    p_pass_no_regression: float
    p_pass_must_catch: float | None = Field(description="At the block's must-catch drop; None: none set.")
    output_tokens: float = Field(description="Expected output tokens of the block over every arm, in turn.")
    gpu_hours: float | None = Field(description="Of decode at RUN's measured rate; None without --from RUN.")


class DesignBlock(_Model):
    block: str
    units: int = Field(
        description="Units judged (the plan's n less those foreseen dropped before generation)."
    )
    margin_pts: float
    must_catch_pts: float | None
    cases: list[BlockCase]


class SignOffCase(_Model):
    """The whole sign-off (it passes only when every gated block passes) under one discordance case."""

    case: str
    p_pass_no_regression: float
    p_pass_single_miss: float | None = Field(
        description="The worst single-block miss: one block at its must-catch drop, the others unchanged."
    )
    miss_block: str | None
    output_tokens: float
    gpu_hours: float | None
    more_attempts_share: float | None = Field(
        description="Internal pilot: the share of runs on which the rule chose more attempts; None otherwise."
    )


class PlanDesign(_Model):
    """The design the config runs (module docstring)."""

    config: str
    design: DesignKind
    rule: str = Field(description="The design's rule in one line.")
    alpha: float
    arms: int
    assumes: str
    blocks: list[DesignBlock]
    sign_off: list[SignOffCase]
    gpu_hours_basis: str | None = Field(
        description="Where the decode rate comes from; None without --from RUN."
    )


def assumption(cfg: RunConfig) -> str:
    """What the design's probabilities assume, in one line."""
    seq = cfg.generation.sequential
    if seq is not None and seq.pilot is not None:
        return (
            "ρ = 0: attempts of one unit disagree independently; the run measures ρ on the units asked twice and "
            "buys no attempts where they average nothing (ρ = 1: --detail)"
        )
    return "units independent; each unit's pair of answers disagrees at the case's discordance ψ"


def _kind(cfg: RunConfig, gated: list[GatedBlock]) -> DesignKind:
    seq = cfg.generation.sequential
    if seq is None:
        return "fixed"
    if seq.pilot is not None and gated and all(g.name in cfg.design for g in gated):
        return "internal pilot"
    return "sequential"


def _rate(gated: list[GatedBlock]) -> tuple[float | None, str | None]:
    rated = [g.cost for g in gated if g.cost.tokens_per_gpu_s is not None]
    return (rated[0].tokens_per_gpu_s, rated[0].rate_basis) if rated else (None, None)


def _hours(tokens: float, rate: float | None) -> float | None:
    return gpu_hours(tokens, rate) if rate is not None else None


def plan_design(cfg: RunConfig, gated: list[GatedBlock]) -> PlanDesign:
    """The design the config runs over ``gated`` (``evalpipe.plan.operating.gated_blocks``)."""
    kind = _kind(cfg, gated)
    seq = cfg.generation.sequential
    alpha = seq.alpha if seq is not None else 0.025
    arms = max(1, len(cfg.variants))
    if kind == "internal pilot":
        assert seq is not None and seq.pilot is not None
        rule = PilotRule(**seq.pilot.model_dump())
        text = (
            f"each gated block's first {rule.share:.0%} of units at 1 attempt ({rule.agreement:.0%} of them at 2), "
            f"the rest at the fewest attempts ≤ {rule.attempts} bringing the pooled noise to {rule.threshold:g} × "
            "Σ 2p(1−p), else 1; every unit judged by the e-processes"
        )
        blocks, signed = _pilot(cfg, gated, rule, arms)
    else:
        text = gate_split(cfg)
        blocks, signed = _gate(cfg, gated, arms)
    rate, basis = _rate(gated)
    return PlanDesign(
        config=cfg.name,
        design=kind,
        rule=text,
        alpha=alpha,
        arms=arms,
        assumes=assumption(cfg),
        blocks=blocks,
        sign_off=signed,
        gpu_hours_basis=basis if rate is not None else None,
    )


def _pilot(
    cfg: RunConfig, gated: list[GatedBlock], rule: PilotRule, arms: int
) -> tuple[list[DesignBlock], list[SignOffCase]]:
    """Every gated block at once, per case, as ``evalpipe.plan.pilot.pilot_lines`` simulates it (its seeds):
    no regression, and each block alone at its must-catch drop."""
    seq = cfg.generation.sequential
    assert seq is not None
    designs = tuple(
        PilotBlockDesign(
            g.name,
            GateDesign(g.n, g.margin_pts, seq.alpha, 1.0),
            cfg.design[g.name].accuracy,
            g.cost.output_per_attempt,
        )
        for g in gated
    )
    rate, _ = _rate(gated)
    per_block: list[list[BlockCase]] = [[] for _ in gated]
    signed: list[SignOffCase] = []
    for i, label in enumerate(_common_labels(gated)):
        seed = PILOT_SEED + 1000 * i
        discordances = [next(c.discordance for c in g.cases if c.label == label) for g in gated]
        psi = tuple(
            min(d, 1.0 - max(g.margin_pts, g.drop_pts or 0.0) / 100.0)
            for d, g in zip(discordances, gated, strict=True)
        )

        def at(
            drops: list[float], shift: int, psi: tuple[float, ...] = psi, seed: int = seed
        ) -> PilotOutcome:
            return _simulated(designs, rule, psi, tuple(drops), seed + shift, arms)

        zero = at([0.0] * len(gated), 0)
        misses: list[tuple[float, str]] = []
        for b, g in enumerate(gated):
            miss = None
            if g.drop_pts is not None:
                drops = [0.0] * len(gated)
                drops[b] = g.drop_pts / 100.0
                miss = at(drops, 101 + b)
                misses.append((miss.p_pass(), g.name))
            out = float(zero.attempts[b].mean()) * g.cost.output_per_attempt
            per_block[b].append(
                BlockCase(
                    case=label,
                    discordance=discordances[b],
                    p_pass_no_regression=zero.p_pass(b),
                    p_pass_must_catch=miss.p_pass(b) if miss is not None else None,
                    output_tokens=out,
                    gpu_hours=_hours(out, rate),
                )
            )
        worst = max(misses) if misses else None
        tokens = zero.tokens(designs)
        signed.append(
            SignOffCase(
                case=label,
                p_pass_no_regression=zero.p_pass(),
                p_pass_single_miss=worst[0] if worst else None,
                miss_block=worst[1] if worst else None,
                output_tokens=tokens,
                gpu_hours=_hours(tokens, rate),
                more_attempts_share=float(zero.fired.mean()),
            )
        )
    return _blocks(gated, per_block), signed


def _common_labels(gated: list[GatedBlock]) -> list[str]:
    """The discordance cases every block is evaluated under, in the first block's order (the sign-off's)."""
    labels = [c.label for c in gated[0].cases] if gated else []
    return [x for x in labels if all(any(c.label == x for c in g.cases) for g in gated)]


def _blocks(gated: list[GatedBlock], per_block: list[list[BlockCase]]) -> list[DesignBlock]:
    return [
        DesignBlock(block=g.name, units=g.n, margin_pts=g.margin_pts, must_catch_pts=g.drop_pts, cases=cases)
        for g, cases in zip(gated, per_block, strict=True)
    ]


def _gate(cfg: RunConfig, gated: list[GatedBlock], arms: int) -> tuple[list[DesignBlock], list[SignOffCase]]:
    """The config's fixed or sequential design per block, as ``evalpipe.plan.operating.design_rows`` computes
    it (the same calls), at no regression and at the must-catch drop; the sign-off their product."""
    k = cfg.generation.repeats
    rate, _ = _rate(gated)
    per_block: list[list[BlockCase]] = []
    for g in gated:
        _, design = block_designs(cfg, g.name, g.n, k)[-1]  # the sequential design when there is one
        cases = []
        for case in g.cases:
            psi = min(case.discordance, 1.0 - max(design.margin_pts, g.drop_pts or 0.0) / 100.0)
            zero = pass_probability(design, psi, 0.0, paths=PLAN_PATHS, seed=PLAN_SEED)
            drop = g.drop_pts
            miss = (
                pass_probability(design, psi, drop / 100.0, paths=PLAN_PATHS, seed=PLAN_SEED)
                if drop is not None
                else None
            )
            units = g.n + (arms - 1) * zero.mean_units if design.sequential_share is not None else arms * g.n
            out = units * k * g.cost.output_per_attempt
            cases.append(
                BlockCase(
                    case=case.label,
                    discordance=case.discordance,
                    p_pass_no_regression=zero.p_pass,
                    p_pass_must_catch=miss.p_pass if miss is not None else None,
                    output_tokens=out,
                    gpu_hours=_hours(out, rate),
                )
            )
        per_block.append(cases)
    blocks = _blocks(gated, per_block)
    signed: list[SignOffCase] = []
    for label in _common_labels(gated):
        at = [next(c for c in b.cases if c.case == label) for b in blocks]
        every = math.prod(c.p_pass_no_regression for c in at)
        misses = [
            (c.p_pass_must_catch * math.prod(o.p_pass_no_regression for o in at if o is not c), b.block)
            for b, c in zip(blocks, at, strict=True)
            if c.p_pass_must_catch is not None
        ]
        worst = max(misses) if misses else None
        tokens = sum(c.output_tokens for c in at)
        signed.append(
            SignOffCase(
                case=label,
                p_pass_no_regression=every,
                p_pass_single_miss=worst[0] if worst else None,
                miss_block=worst[1] if worst else None,
                output_tokens=tokens,
                gpu_hours=_hours(tokens, rate),
                more_attempts_share=None,
            )
        )
    return blocks, signed


class Alternative(_Model):
    """One design of one gated block under one discordance case (``--detail``'s rows)."""

    block: str
    design: str
    case: str
    discordance: float
    p_pass_no_regression: float
    p_pass_at_margin: float
    p_pass_must_catch: float | None
    standard_error: float = Field(
        description="Monte-Carlo standard error of the simulated points (0: exact)."
    )
    mean_units: float = Field(description="Expected units judged at no regression (n for the fixed look).")
    output_tokens_fixed: float
    output_tokens_in_turn: float
    output_tokens_together: float
    output_tokens_worst: float


class AlternativeSignOff(_Model):
    design: str
    case: str
    p_pass_no_regression: float
    p_pass_one_block_at_margin: float
    margin_block: str
    p_pass_single_miss: float | None
    miss_block: str | None


class Reach(_Model):
    """A block below its share of the target (``SIGNOFF_TARGET``) and what would reach the share."""

    design: str
    case: str
    sign_off_reaches: float
    block: str
    reaches: float
    share: float
    n: int
    population: int
    units_needed: int | None = Field(description="None: more than REACH_GROWTH × n.")
    attempts_needed: int | None = Field(description="Per unit at n; None: more than REACH_ATTEMPTS.")
    attempts_reach: float | None


class PlanReport(_Model):
    """``evalpipe plan --json``: the design the config runs first, then the alternatives, their sign-offs, the
    search for what would reach the target, and the benchmarks that could not be planned."""

    schema_version: int = 1
    design: PlanDesign
    alternatives: list[Alternative]
    sign_offs: list[AlternativeSignOff]
    reach: list[Reach]
    not_planned: list[str]


def plan_report(cfg: RunConfig, gated: list[GatedBlock], not_planned: list[str]) -> PlanReport:
    """Everything ``evalpipe plan`` computes for the gated blocks, as data."""
    rows, plans = alternative_rows(cfg, gated)
    alternatives = [
        Alternative(
            block=r.block,
            design=r.design,
            case=r.case.label,
            discordance=r.case.discordance,
            p_pass_no_regression=r.at_zero.p_pass,
            p_pass_at_margin=r.at_margin.p_pass,
            p_pass_must_catch=r.at_drop.p_pass if r.at_drop is not None else None,
            standard_error=r.at_zero.standard_error,
            mean_units=r.at_zero.mean_units,
            output_tokens_fixed=r.tokens_fixed,
            output_tokens_in_turn=r.tokens_in_turn,
            output_tokens_together=r.tokens_together,
            output_tokens_worst=r.tokens_worst,
        )
        for r in rows
    ]
    sign_offs = [
        AlternativeSignOff(
            design=s.kind,
            case=s.label,
            p_pass_no_regression=s.at_zero,
            p_pass_one_block_at_margin=s.worst_margin[0],
            margin_block=s.worst_margin[1],
            p_pass_single_miss=s.single_miss[0] if s.single_miss else None,
            miss_block=s.single_miss[1] if s.single_miss else None,
        )
        for s in sign_off(rows, {g.name: g.drop_pts for g in gated})
    ]
    reach = [
        Reach(
            design=r.kind,
            case=r.case,
            sign_off_reaches=r.sign_off_reaches,
            block=r.block,
            reaches=r.reaches,
            share=r.share,
            n=r.n,
            population=r.population,
            units_needed=r.units,
            attempts_needed=r.attempts[0] if r.attempts else None,
            attempts_reach=r.attempts[1] if r.attempts else None,
        )
        for r in reach_items(rows, plans)
    ]
    return PlanReport(
        design=plan_design(cfg, gated),
        alternatives=alternatives,
        sign_offs=sign_offs,
        reach=reach,
        not_planned=not_planned,
    )
