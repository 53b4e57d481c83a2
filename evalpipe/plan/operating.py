"""``evalpipe plan``'s operating characteristic: per gated block and for the whole sign-off, how often the gate
passes a release with no regression, one at the margin and one with the drop it must catch, with the tokens each
design spends.

The statistics are ``evalpipe.stats.operating`` (the gate's rule, exact for the fixed look, simulated for the
sequential design); this module decides their inputs:

* the blocks: every benchmark or pool with ``gates.non_inferiority_margin_pts`` (``overall`` is not planned);
* n: the block's plan (``PlanInput.n_now``) less the units it can foresee being dropped before generation, which
  leave the gate as they do in a run — with RUN the units its compare.json left out (the context its servers
  resolved), else a generator's spec's items whose prompt and reserve exceed the configured context
  (``model.context_length``); the margin, α and sequential share from the config (the fixed design is always
  shown beside the sequential one);
* the discordance: measured on RUN (``--from RUN``: its A/A pair, else its A/B pair, at the config's repeats),
  else the config's ``design:`` assumption for the block (with its argument), and always 2p(1 − p) at the assumed
  accuracy beside it — the discordance of two runs that agree no more than chance;
* tokens: output (decode) tokens per attempt measured on RUN, else the ``max_tokens`` budget (an upper bound);
  input (prefill) tokens per sample measured on RUN, else what the block's items are built to when a
  generator's spec says so before any run (kv_probe), else unknown (said so) — printed apart, once per sample. With
  variants run **in turn** the control runs first and whole (nothing to stop it against), the test arm and the A/A
  arm stop at the verdict: ``n + (arms − 1) E[units]``; run **together** (``parallel_variants`` or one endpoint per
  variant) every arm stops: ``arms · E[units]``; the fixed design ``arms · n``; the worst case every attempt at
  its budget over the whole plan.

The sign-off passes only when every gated block passes; blocks are independent samples, so the whole sign-off's
``P(pass)`` is a product of the blocks': at no regression every block's ``P(pass | 0)``; with one block at its
margin, the others unchanged, that block's ``P(pass | −margin)`` times the others' ``P(pass | 0)`` — the largest
over the blocks is stated (≤ α); with one block at its must-catch drop, the others unchanged (the single-block
miss: a regression confined to one block is the case a release engineer meets), the same with ``P(pass | −drop)``
— again the largest, naming its block.

**What a population can reach** (``reach_lines``): the sign-off's target is ``SIGNOFF_TARGET`` — a release with
no regression passes at least 0.95 of the time — at every discordance up to 2p(1 − p), the most two runs that
agree no better than chance disagree.  Its B independent blocks share it equally: each must pass at least
``0.95^(1/B)``.  For every case whose sign-off misses the target the plan names each block below its share,
what it reaches, and what would reach the share: the units the same design needs at that discordance
(``units_to_reach``: against the block's population), and the attempts per unit at the planned n
(``attempts_to_reach``: with k attempts per arm the discordance is ``ψ/k`` only when all of the disagreement is
within a unit — attempts of one unit disagree independently, ρ = 0 — ``evalpipe.stats.power``'s
``m0(k) = between + within/k``; a between-sample disagreement, which greedy decoding that repeats itself makes of
all of it (ρ = 1), is not reduced by attempts at all, only by units).  Both from the same ``pass_probability`` the rows
use — exact for the fixed look, the plan's seeded paths for the sequential design.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from evalpipe.config.models import RunConfig
from evalpipe.numerics.cost import cost_line
from evalpipe.plan.inputs import PlanInput, TokenCost, _comparison, token_cost
from evalpipe.plan.pilot import PilotCase, PilotInput, pilot_lines
from evalpipe.stats.operating import GateDesign, PassProbability, pass_probability

if TYPE_CHECKING:
    from evalpipe.artifacts.schema.manifest import Manifest

#: Simulated paths per point of a sequential design in ``evalpipe plan`` (Monte-Carlo SE ≤ 0.008).
PLAN_PATHS = 4000
PLAN_SEED = 20261205
#: The whole sign-off's P(pass | no regression) asked for at every discordance up to 2p(1 − p) (module docstring).
SIGNOFF_TARGET = 0.95
#: The largest growth ``units_to_reach`` searches (× the planned n) and the most attempts ``attempts_to_reach`` tries.
REACH_GROWTH = 4
REACH_ATTEMPTS = 8


@dataclass(frozen=True)
class DiscordanceCase:
    """One discordance the block is evaluated under, and where it comes from."""

    label: str
    discordance: float
    basis: str


@dataclass(frozen=True)
class DesignRow:
    """One design of one block under one discordance: P(pass) at 0, −margin, −drop and its tokens."""

    block: str
    design: str
    case: DiscordanceCase
    at_zero: PassProbability
    at_margin: PassProbability
    at_drop: PassProbability | None
    tokens_fixed: float
    tokens_in_turn: float
    tokens_together: float
    tokens_worst: float
    #: Prompt (prefill) tokens: the same units × arms, once per sample (the prefix cache serves its repeats);
    #: None where no run measured them and the block's items are not counted before a run.
    input_fixed: float | None = None
    input_in_turn: float | None = None
    input_together: float | None = None


def block_designs(cfg: RunConfig, block: str, n: int, repeats: int) -> list[tuple[str, GateDesign]]:
    """The fixed design and (when the config has one) the sequential design of a gated block."""
    margin = cfg.gates.points_for("non_inferiority_margin_pts", block)
    assert margin is not None
    seq = cfg.generation.sequential
    alpha = seq.alpha if seq is not None else 0.025
    out = [("fixed", GateDesign(n, margin, alpha, None, repeats))]
    if seq is not None:
        out.append(
            (
                f"sequential (share {seq.sequential_share:g})",
                GateDesign(n, margin, alpha, seq.sequential_share, repeats),
            )
        )
    return out


def design_rows(
    cfg: RunConfig,
    block: str,
    n: int,
    repeats: int,
    cases: list[DiscordanceCase],
    tokens_per_attempt: float,
    budget: int,
    input_per_sample: float | None = None,
) -> list[DesignRow]:
    """Every design of the block under every discordance case."""
    arms = max(1, len(cfg.variants))
    drop_pts = cfg.gates.must_catch_drop_pts.get(block)
    rows = []
    for label, design in block_designs(cfg, block, n, repeats):
        for case in cases:
            psi = min(case.discordance, 1.0 - max(design.margin_pts, drop_pts or 0.0) / 100.0)

            def at(drop: float, design: GateDesign = design, psi: float = psi) -> PassProbability:
                return pass_probability(design, psi, drop, paths=PLAN_PATHS, seed=PLAN_SEED)

            zero = at(0.0)
            per_unit = repeats * tokens_per_attempt
            units_in_turn = n + (arms - 1) * zero.mean_units
            prefill = input_per_sample
            rows.append(
                DesignRow(
                    block=block,
                    design=label,
                    case=case,
                    at_zero=zero,
                    at_margin=at(design.margin_pts / 100.0),
                    at_drop=at(drop_pts / 100.0) if drop_pts is not None else None,
                    tokens_fixed=arms * n * per_unit,
                    tokens_in_turn=units_in_turn * per_unit,
                    tokens_together=arms * zero.mean_units * per_unit,
                    tokens_worst=arms * n * repeats * budget,
                    input_fixed=arms * n * prefill if prefill is not None else None,
                    input_in_turn=units_in_turn * prefill if prefill is not None else None,
                    input_together=arms * zero.mean_units * prefill if prefill is not None else None,
                )
            )
    return rows


def _p(p: PassProbability | None) -> str:
    if p is None:
        return "—"
    return f"{p.p_pass:.3f}" + (f"±{p.standard_error:.3f}" if p.standard_error > 0 else "")


def _tokens(x: float) -> str:
    return f"{x / 1e6:.2f} M"


def _spend(seq: bool, fixed: float | None, in_turn: float | None, together: float | None) -> str | None:
    if fixed is None or in_turn is None or together is None:
        return None
    return f"{_tokens(in_turn)} in turn / {_tokens(together)} together" if seq else _tokens(fixed)


def design_label(design: str) -> str:
    """``fixed`` or ``sequential``: the design's kind, the name the sign-off lines use."""
    return design.split(" ")[0]


def row_line(row: DesignRow, drop_pts: float | None) -> str:
    """One row, one line: the design and discordance, P(pass) at no regression, −margin and −drop, then its output
    (decode) tokens — expected in turn / together for a sequential design, with its mean units — and its input
    (prefill) tokens where known before the run."""
    seq = design_label(row.design) == "sequential"
    drop = f"−{drop_pts:g}: {_p(row.at_drop)}" if drop_pts is not None else "no must-catch drop"
    case = f"ψ {row.case.discordance:.3f} {row.case.label}"
    spend = f"out {_spend(seq, row.tokens_fixed, row.tokens_in_turn, row.tokens_together)}"
    prefill = _spend(seq, row.input_fixed, row.input_in_turn, row.input_together)
    if prefill is not None:
        spend += f", in {prefill}"
    if seq:
        spend += f"; {row.at_zero.mean_units:.0f} units"
    return (
        f"    {design_label(row.design):<10} {case:<19} P(pass) {_p(row.at_zero)} | "
        f"−{-row.at_margin.delta_pts:g}: {_p(row.at_margin)} | {drop}   {spend}"
    )


@dataclass(frozen=True)
class SignOff:
    """The whole sign-off of one design kind under one discordance label (module docstring)."""

    kind: str
    label: str
    blocks: int
    at_zero: float
    worst_margin: tuple[float, str]
    single_miss: tuple[float, str, float] | None  # (P(pass), block, its drop in points)
    tokens: str
    prefill: str | None


def sign_off(rows: list[DesignRow], drops: dict[str, float | None]) -> list[SignOff]:
    """Per (design kind, discordance label): every block at no regression, the worst block at its margin, the
    worst single-block miss (one block at its must-catch drop, the others unchanged), and the tokens summed."""
    out = []
    for kind, label in sorted({(design_label(r.design), r.case.label) for r in rows}):
        chosen = [r for r in rows if design_label(r.design) == kind and r.case.label == label]
        zero = math.prod(r.at_zero.p_pass for r in chosen)

        def others(row: DesignRow, chosen: list[DesignRow] = chosen) -> float:
            return math.prod(r.at_zero.p_pass for r in chosen if r is not row)

        margin = max(((r.at_margin.p_pass * others(r), r.block) for r in chosen), default=(0.0, ""))
        missed = [
            (r.at_drop.p_pass * others(r), r.block, drops[r.block] or 0.0)
            for r in chosen
            if r.at_drop is not None
        ]
        seq = kind == "sequential"
        total = _spend(
            seq,
            sum(r.tokens_fixed for r in chosen),
            sum(r.tokens_in_turn for r in chosen),
            sum(r.tokens_together for r in chosen),
        )
        tokens = f"out {total}" + (f" (fixed {_tokens(sum(r.tokens_fixed for r in chosen))})" if seq else "")
        priced = [r for r in chosen if r.input_fixed is not None]
        prefill = None
        if priced:
            prefill = "in " + (
                _spend(
                    seq,
                    sum(r.input_fixed or 0.0 for r in priced),
                    sum(r.input_in_turn or 0.0 for r in priced),
                    sum(r.input_together or 0.0 for r in priced),
                )
                or ""
            )
            if len(priced) < len(chosen):
                prefill += f" over {len(priced)} of {len(chosen)} blocks (the others: unknown before a run)"
        out.append(
            SignOff(kind, label, len(chosen), zero, margin, max(missed) if missed else None, tokens, prefill)
        )
    return out


def signoff_lines(rows: list[DesignRow], drops: dict[str, float | None]) -> list[str]:
    """The whole sign-off, two short lines per (design kind, discordance label): its error rates, then its
    tokens (``sign_off``)."""
    items = sign_off(rows, drops)
    if not items:
        return []
    out = [
        f"  sign-off ({items[0].blocks} gated blocks; it passes only when every block passes): P(pass) with no "
        "regression | with one block at −margin (the worst) | the single-block miss: one block at its must-catch "
        "drop, the others unchanged (the worst)"
    ]
    for s in items:
        miss = (
            f"single-block miss {s.single_miss[0]:.4f} ({s.single_miss[1]} at −{s.single_miss[2]:g} pts)"
            if s.single_miss is not None
            else "single-block miss: no must-catch drop set"
        )
        out.append(
            f"    {s.kind}, {s.label}: P(pass | no regression) {s.at_zero:.3f} | one block at −margin "
            f"{s.worst_margin[0]:.4f} ({s.worst_margin[1]}) | {miss}"
        )
        out.append(f"      tokens: {s.tokens}" + (f"; {s.prefill}" if s.prefill else ""))
    return out


def discordance_cases(
    cfg: RunConfig,
    block: str,
    measured_noise: float | None,
    measured_source: str | None,
    accuracy: float | None,
) -> list[DiscordanceCase]:
    """The discordances a block is evaluated under (module docstring): measured on RUN, the config's argued
    assumption, and 2p(1 − p) — at the design's accuracy when the config argues one, else at the measured
    accuracy, never at a measured 0 or 1 (where it is 0: two runs that always agree), which takes 0.5."""
    out = []
    if measured_noise is not None:
        out.append(
            DiscordanceCase(
                f"measured {measured_source}", measured_noise, f"measured on RUN ({measured_source})"
            )
        )
    assumption = cfg.design.get(block)
    if assumption is not None:
        out.append(DiscordanceCase("argued", assumption.discordance, assumption.basis))
        p, where = assumption.accuracy, "the design's accuracy"
    elif accuracy is not None and 0.0 < accuracy < 1.0:
        p, where = accuracy, "RUN's control accuracy"
    else:
        p = 0.5
        where = (
            f"0.5, the most conservative (RUN's control accuracy {accuracy:.3f} would make it 0)"
            if accuracy is not None
            else "0.5, the most conservative (no accuracy known)"
        )
    out.append(
        DiscordanceCase(
            "2p(1-p)",
            2 * p * (1 - p),
            f"2p(1-p) at accuracy {p:.3f} ({where}): runs agreeing no more than chance",
        )
    )
    return out


def foreseen_drops(cfg: RunConfig, block: PlanInput, run: Path | None) -> tuple[int, str | None]:
    """Units of the block that will be dropped before generation, as a run drops them, and why (None: none
    foreseen): with RUN, the units its compare.json left out of the block; else the items of a generator's spec
    that need more context than the configured one (``model.context_length``)."""
    if run is not None:
        cmp = _comparison(run)
        found = (
            next((b for b in [*cmp.benchmarks, *cmp.pools] if b.benchmark == block.benchmark), None)
            if cmp
            else None
        )
        if found is not None and found.dropped:
            units = sum(d.units for d in found.dropped)
            return units, f"{units} dropped before generation in RUN (compare.json: left out)"
        return 0, None
    if not block.context_needs:
        return 0, None
    context = cfg.model.context_length
    if context is None:
        return 0, None
    beyond = [(need, count) for need, count in block.context_needs if need > context]
    units = round(sum(count for _, count in beyond))
    if not units:
        return 0, None
    return units, (
        f"{units} need more than the configured context of {context:,} tokens (model.context_length): dropped before "
        "generation, not judged"
    )


@dataclass(frozen=True)
class GatedBlock:
    """One gated block as the plan reads it before any simulation: its plan input, the units judged (less those
    foreseen dropped, and why), margin, must-catch drop, discordance cases, tokens and prompt tokens."""

    block: PlanInput
    n: int
    dropped_why: str | None
    margin_pts: float
    drop_pts: float | None
    cases: list[DiscordanceCase]
    cost: TokenCost
    prefill: float | None
    prefill_basis: str

    @property
    def name(self) -> str:
        return self.block.benchmark


def plan_numerics_lines(cfg: RunConfig) -> list[str]:
    """The numerics probe's cost (``numerics:``), one line; none without the probe."""
    return [cost_line(cfg.numerics, max(1, len(cfg.variants)))] if cfg.numerics is not None else []


def gated_names(cfg: RunConfig) -> set[str]:
    """The benchmarks the gated blocks are made of: each gated benchmark, and each member of a gated pool."""
    out = {
        b.name
        for b in cfg.benchmarks
        if cfg.gates.points_for("non_inferiority_margin_pts", b.name) is not None
    }
    for pool, members in cfg.pools.items():
        if cfg.gates.points_for("non_inferiority_margin_pts", pool) is not None:
            out.update(members)
    return out


def gated_blocks(
    cfg: RunConfig, inputs: Sequence[PlanInput | str], manifest: Manifest | None, run: Path | None
) -> list[GatedBlock]:
    """Every block with a margin (``inputs`` are ``plan_inputs``'; a ``str``, a benchmark that cannot be planned,
    is skipped), in input order, with what the module docstring says each design is evaluated on."""
    k = cfg.generation.repeats
    out = []
    for block in inputs:
        if isinstance(block, str):
            continue
        name = block.benchmark
        margin = cfg.gates.points_for("non_inferiority_margin_pts", name)
        if margin is None:
            continue
        noise_value: float | None = None
        source: str | None = None
        accuracy: float | None = None
        if run is not None and manifest is not None:
            # import cost: plan.mde (statsmodels, scipy.stats), only with --from RUN: the noise measured on it
            from evalpipe.plan.mde import measured

            noise, accuracy, _ = measured(run, manifest, name, block.members)
            if noise is not None:
                noise_value, source = (
                    noise.second_moment(k),
                    noise.source.upper().replace("AA", "A/A").replace("AB", "A/B"),
                )
        cost = token_cost(cfg, run, manifest, name, block.members)
        prefill, prefill_basis = _input_per_sample(cost.input_per_sample, cost.measured, block)
        dropped, why = foreseen_drops(cfg, block, run)
        out.append(
            GatedBlock(
                block=block,
                n=max(1, block.n_now - dropped),
                dropped_why=why,
                margin_pts=margin,
                drop_pts=cfg.gates.must_catch_drop_pts.get(name),
                cases=discordance_cases(cfg, name, noise_value, source, accuracy),
                cost=cost,
                prefill=prefill,
                prefill_basis=prefill_basis,
            )
        )
    return out


def gate_split(cfg: RunConfig) -> str:
    """How the gate spends α: the fixed look only, or the sequential share and what the rest does."""
    seq = cfg.generation.sequential
    alpha = seq.alpha if seq is not None else 0.025
    if seq is None:
        return "fixed look only"
    if seq.sequential_share >= 1.0:
        return "sequential design: all of α on the e-processes, no fixed look (no crossing: inconclusive)"
    return (
        f"sequential design: {seq.sequential_share:g} of α on the e-processes, the rest "
        f"({alpha * (1 - seq.sequential_share):g}) one fixed look when they do not cross"
    )


def plan_operating_lines(
    cfg: RunConfig, inputs: Sequence[PlanInput | str], manifest: Manifest | None, run: Path | None
) -> list[str]:
    """What ``evalpipe plan --detail`` prints for the gated blocks and the whole sign-off (module docstring);
    ``inputs`` are ``plan_inputs``' (a ``str``: a benchmark that cannot be planned, skipped here)."""
    return operating_lines(cfg, gated_blocks(cfg, inputs, manifest, run))


def operating_lines(cfg: RunConfig, gated: list[GatedBlock]) -> list[str]:
    """:func:`plan_operating_lines` of blocks already read: every design under every discordance case, the
    sign-off, what would reach the target and the pilot."""
    if not gated:
        return []
    seq = cfg.generation.sequential
    alpha = seq.alpha if seq is not None else 0.025
    lines = [
        f"operating characteristic of the gate: one-sided α {alpha:g} at each margin; {gate_split(cfg)}; the fixed "
        f"look exact, the sequential design {PLAN_PATHS} simulated paths; {max(1, len(cfg.variants))} arm(s)",
        "  per block and design: P(pass) with no regression | at −margin | at the must-catch drop; tokens",
    ]
    rows, plans = alternative_rows(cfg, gated)
    drops = {g.name: g.drop_pts for g in gated}
    k, piloted, pilot_cases = cfg.generation.repeats, list[PilotInput](), list[list[DiscordanceCase]]()
    for g in gated:
        name, block, n, drop, margin, cost = g.name, g.block, g.n, g.drop_pts, g.margin_pts, g.cost
        size = f"n {block.n_now} × {k}" + (f" ({n} judged: {g.dropped_why})" if g.dropped_why else "")
        lines.append(
            f"  {name}: {size}, margin {margin:g} pts, must-catch drop "
            f"{format(drop, 'g') + ' pts' if drop is not None else 'not set (gates.must_catch_drop_pts)'}"
        )
        worst = _tokens(max(1, len(cfg.variants)) * n * k * cost.budget)
        lines.append(f"    output: {cost.basis}; at most {worst}")
        lines.append(f"    input: {g.prefill_basis}")
        for case in g.cases:
            lines.append(f"    ψ {case.discordance:.3f} {case.label}: {case.basis}")
        lines += [row_line(r, drop) for r in rows if r.block == name]
        if name in cfg.design:
            piloted.append(
                PilotInput(name, n, margin, drop, cfg.design[name].accuracy, cost.output_per_attempt)
            )
            pilot_cases.append(g.cases)
    lines += signoff_lines(rows, drops)
    lines += reach_lines(rows, plans)
    if len(piloted) == len(gated):  # every gated block argued (the config's pilot check)
        lines += _pilot(cfg, piloted, pilot_cases)
    return lines


def alternative_rows(cfg: RunConfig, gated: list[GatedBlock]) -> tuple[list[DesignRow], dict[str, BlockPlan]]:
    """Every design (fixed, and sequential when configured) of every gated block under every discordance case,
    and what the reach search needs of each block."""
    k = cfg.generation.repeats
    rows: list[DesignRow] = []
    plans: dict[str, BlockPlan] = {}
    for g in gated:
        rows += design_rows(
            cfg, g.name, g.n, k, g.cases, g.cost.output_per_attempt, g.cost.budget, input_per_sample=g.prefill
        )
        plans[g.name] = BlockPlan(g.name, block_designs(cfg, g.name, g.n, k), g.block.population)
    return rows, plans


def _pilot(cfg: RunConfig, piloted: list[PilotInput], cases: list[list[DiscordanceCase]]) -> list[str]:
    """The internal pilot's lines when every block was judged under the same discordance cases."""
    labels = [c.label for c in cases[0]] if cases else []
    if not all([c.label for c in x] == labels for x in cases):
        return []
    return pilot_lines(
        cfg, piloted, [PilotCase(label, [c[i].discordance for c in cases]) for i, label in enumerate(labels)]
    )


def _input_per_sample(measured: float | None, is_measured: bool, block: object) -> tuple[float | None, str]:
    """Prompt tokens per sample and where they come from: measured on RUN, else what the block's plan input
    knows before a run (a generator's spec), else unknown (said so)."""
    if is_measured and measured is not None:
        return measured, f"mean {measured:.0f} prompt tokens per sample measured on RUN"
    known = getattr(block, "input_per_sample", None)
    if isinstance(known, float | int):
        return float(known), f"{known:.0f} prompt tokens per sample ({getattr(block, 'input_basis', '')})"
    return None, "prompt tokens not known before a run (--from RUN measures them)"


@lru_cache(maxsize=512)
def _p_zero(design: GateDesign, discordance: float) -> float:
    """``P(pass | no regression)`` as the rows compute it (the searches ask the same points again)."""
    return pass_probability(design, discordance, 0.0, paths=PLAN_PATHS, seed=PLAN_SEED).p_pass


def _resized(design: GateDesign, n: int) -> GateDesign:
    return GateDesign(n, design.margin_pts, design.alpha, design.sequential_share, design.repeats)


def units_to_reach(design: GateDesign, discordance: float, target: float) -> int | None:
    """The fewest units with which ``design`` passes a release with no regression at least ``target`` of the
    time at ``discordance`` (the same rule, bets tuned to the new n), found by doubling then bisection so that
    n − 1 misses it; the design's own n when it already reaches it; None beyond ``REACH_GROWTH`` × n."""
    if _p_zero(design, discordance) >= target:
        return design.n
    low, high = design.n, design.n
    while True:
        if high >= REACH_GROWTH * design.n:
            return None
        low, high = high, min(2 * high, REACH_GROWTH * design.n)
        if _p_zero(_resized(design, high), discordance) >= target:
            break
    while high - low > 1:
        middle = (low + high) // 2
        if _p_zero(_resized(design, middle), discordance) >= target:
            high = middle
        else:
            low = middle
    return high


def attempts_to_reach(design: GateDesign, discordance: float, target: float) -> tuple[int, float] | None:
    """The fewest attempts per arm k at the design's n with which it reaches ``target`` at no regression, and
    what it reaches there, when all of the discordance is within a unit (``ψ/k``, ρ = 0, module docstring); None beyond
    ``REACH_ATTEMPTS``."""
    for k in range(design.repeats, REACH_ATTEMPTS + 1):
        again = GateDesign(design.n, design.margin_pts, design.alpha, design.sequential_share, k)
        p = _p_zero(again, discordance * design.repeats / k)
        if p >= target:
            return k, p
    return None


@dataclass(frozen=True)
class BlockPlan:
    """What ``reach_lines`` needs of a gated block: its designs at its planned n and its population."""

    block: str
    designs: list[tuple[str, GateDesign]]
    population: int


@dataclass(frozen=True)
class ReachItem:
    """One block below its share of the target under one design kind and case: what it reaches, and the units
    (None: more than ``REACH_GROWTH`` × n) or attempts per unit with what they reach (None: more than
    ``REACH_ATTEMPTS``) that would reach the share."""

    kind: str
    case: str
    sign_off_reaches: float
    block: str
    reaches: float
    share: float
    n: int
    population: int
    units: int | None
    attempts: tuple[int, float] | None


def reach_items(rows: list[DesignRow], plans: dict[str, BlockPlan]) -> list[ReachItem]:
    """Per design kind and discordance case whose sign-off misses ``SIGNOFF_TARGET`` (module docstring): each
    block below its share, what it reaches, and the units or attempts that would reach the share."""
    items = sign_off(rows, dict.fromkeys(plans))
    if not items:
        return []
    share = SIGNOFF_TARGET ** (1.0 / max(1, items[0].blocks))
    out = []
    for s in (s for s in items if s.at_zero < SIGNOFF_TARGET):
        for row in rows:
            if design_label(row.design) != s.kind or row.case.label != s.label or row.at_zero.p_pass >= share:
                continue
            plan = plans[row.block]
            design = next(d for label, d in plan.designs if label == row.design)
            psi = row.case.discordance
            out.append(
                ReachItem(
                    s.kind,
                    s.label,
                    s.at_zero,
                    row.block,
                    row.at_zero.p_pass,
                    share,
                    design.n,
                    plan.population,
                    units_to_reach(design, psi, share),
                    attempts_to_reach(design, psi, share),
                )
            )
    return out


def reach_lines(rows: list[DesignRow], plans: dict[str, BlockPlan]) -> list[str]:
    """:func:`reach_items` in words: the target, then per short design kind and case each block's need."""
    items = sign_off(rows, dict.fromkeys(plans))
    reach = reach_items(rows, plans)
    if not reach:
        return []
    share, blocks = reach[0].share, items[0].blocks
    out = [
        f"  the target: the sign-off's P(pass | no regression) ≥ {SIGNOFF_TARGET:g} at every discordance up to 2p(1-p), "
        f"≥ {share:.3f} per block ({blocks})",
        "  where it falls short, what would reach it (k attempts: only if a unit's attempts disagree "
        "independently, ρ = 0; at ρ = 1 only units)",
    ]
    seen: set[tuple[str, str]] = set()
    for item in reach:
        if (item.kind, item.case) not in seen:
            seen.add((item.kind, item.case))
            out.append(f"    {item.kind}, {item.case}: the sign-off reaches {item.sign_off_reaches:.3f}")
        need = (
            f"n {item.units} units (population {item.population})"
            if item.units is not None
            else f"more than {REACH_GROWTH * item.n} units (population {item.population})"
        )
        tries = (
            f"{item.attempts[0]} attempts per unit at n {item.n} ({item.attempts[1]:.3f})"
            if item.attempts is not None
            else f"more than {REACH_ATTEMPTS} attempts per unit"
        )
        out.append(f"      {item.block} reaches {item.reaches:.3f}; {share:.3f} needs {need} or {tries}")
    return out
