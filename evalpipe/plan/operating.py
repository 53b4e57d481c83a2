"""``evalpipe plan``'s operating characteristic: per gated block and for the whole sign-off, how often the gate
passes a release with no regression, one at the margin and one with the drop it must catch, with the tokens each
design spends.

The statistics are ``evalpipe.stats.operating`` (the gate's rule, exact for the fixed look, simulated for the
sequential design); this module decides their inputs:

* the blocks: every benchmark or pool with ``gates.non_inferiority_margin_pts`` (``overall`` is not planned);
* n: the block's plan (``PlanInput.n_now``); the margin, α and sequential share from the config (the fixed design is
  always shown beside the sequential one);
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
``P(pass)`` is the product of the blocks' (at no regression; and at every block's must-catch drop at once).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalpipe.config.models import RunConfig
from evalpipe.stats.operating import GateDesign, PassProbability, pass_probability

if TYPE_CHECKING:
    from evalpipe.artifacts.schema.manifest import Manifest
    from evalpipe.plan.mde import PlanInput

#: Simulated paths per point of a sequential design in ``evalpipe plan`` (Monte-Carlo SE ≤ 0.008).
PLAN_PATHS = 4000
PLAN_SEED = 20261205


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


def _pct(p: PassProbability | None) -> str:
    if p is None:
        return "—"
    text = f"{p.p_pass:.3f}"
    return text + (f"±{p.standard_error:.3f}" if p.standard_error > 0 else "")


def _tokens(x: float) -> str:
    return f"{x / 1e6:.2f} M"


def _spend(seq: bool, fixed: float | None, in_turn: float | None, together: float | None) -> str:
    if fixed is None or in_turn is None or together is None:
        return "unknown before a run"
    if seq:
        return f"expected {_tokens(in_turn)} in turn / {_tokens(together)} together"
    return _tokens(fixed)


def row_line(row: DesignRow, drop_pts: float | None) -> str:
    """One row: design, discordance, P(pass) at 0 / −margin / −drop, then its input (prefill) and output
    (decode) tokens apart — expected in turn / together for a sequential design."""
    drop = f"−{drop_pts:g}" if drop_pts is not None else "drop"
    seq = not row.design.startswith("fixed")
    units = f" (mean {row.at_zero.mean_units:.0f} units at Δ = 0)" if seq else ""
    decode = _spend(seq, row.tokens_fixed, row.tokens_in_turn, row.tokens_together)
    prefill = _spend(seq, row.input_fixed, row.input_in_turn, row.input_together)
    return (
        f"    {row.design:<22} ψ {row.case.discordance:.3f} ({row.case.label}): P(pass | 0) {_pct(row.at_zero)}, "
        f"| −{row.at_margin.delta_pts * -1:g}) {_pct(row.at_margin)}, | {drop}) {_pct(row.at_drop)}; "
        f"input (prefill) tokens {prefill}; output (decode) tokens {decode}{units}; "
        f"worst output {_tokens(row.tokens_worst)}"
    )


def signoff_lines(rows: list[DesignRow]) -> list[str]:
    """The whole sign-off per (design kind, discordance label): products over the blocks and summed tokens."""
    out = []
    keys = sorted({(r.design.split(" ")[0], r.case.label) for r in rows})
    for kind, label in keys:
        chosen = [r for r in rows if r.design.split(" ")[0] == kind and r.case.label == label]
        zero = drop = 1.0
        has_drop = all(r.at_drop is not None for r in chosen)
        for r in chosen:
            zero *= r.at_zero.p_pass
            if r.at_drop is not None:
                drop *= r.at_drop.p_pass
        in_turn = sum(r.tokens_in_turn for r in chosen)
        together = sum(r.tokens_together for r in chosen)
        fixed = sum(r.tokens_fixed for r in chosen)
        tokens = (
            f"expected {_tokens(in_turn)} in turn / {_tokens(together)} together (fixed {_tokens(fixed)})"
            if kind == "sequential"
            else f"{_tokens(fixed)}"
        )
        priced = [r for r in chosen if r.input_fixed is not None]
        p_fixed = sum(r.input_fixed or 0.0 for r in priced)
        p_turn = sum(r.input_in_turn or 0.0 for r in priced)
        p_together = sum(r.input_together or 0.0 for r in priced)
        prefill = (
            f"expected {_tokens(p_turn)} in turn / {_tokens(p_together)} together (fixed {_tokens(p_fixed)})"
            if kind == "sequential"
            else _tokens(p_fixed)
        )
        if len(priced) < len(chosen):
            unknown = ", ".join(r.block for r in chosen if r.input_fixed is None)
            prefill += f" over {len(priced)} of {len(chosen)} blocks ({unknown}: unknown before a run)"
        catch = f", P(pass | every block's must-catch drop) {drop:.4f}" if has_drop else ""
        out.append(
            f"  sign-off, {kind} design, {label} discordance ({len(chosen)} gated blocks): "
            f"P(pass | no regression) {zero:.3f}{catch}; input (prefill) tokens {prefill}; "
            f"output (decode) tokens {tokens}"
        )
    return out


def discordance_cases(
    cfg: RunConfig,
    block: str,
    measured_noise: float | None,
    measured_source: str | None,
    accuracy: float | None,
) -> list[DiscordanceCase]:
    """The discordances a block is evaluated under (module docstring): measured on RUN, the config's argued
    assumption, and 2p(1 − p) at the assumed (or measured) accuracy."""
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
    p = accuracy if accuracy is not None else (assumption.accuracy if assumption is not None else 0.5)
    out.append(
        DiscordanceCase(
            "2p(1-p)", 2 * p * (1 - p), f"2p(1-p) at accuracy {p:.3f}: runs agreeing no more than chance"
        )
    )
    return out


def plan_operating_lines(
    cfg: RunConfig, inputs: Sequence[PlanInput | str], manifest: Manifest | None, run: Path | None
) -> list[str]:
    """What ``evalpipe plan`` prints for the gated blocks and the whole sign-off (module docstring);
    ``inputs`` are ``plan_inputs``' (a ``str``: a benchmark that cannot be planned, skipped here)."""
    from evalpipe.plan.mde import PlanInput, measured, token_cost

    gated = {
        x.benchmark: x
        for x in inputs
        if isinstance(x, PlanInput)
        and cfg.gates.points_for("non_inferiority_margin_pts", x.benchmark) is not None
    }
    if not gated:
        return []
    seq = cfg.generation.sequential
    alpha = seq.alpha if seq is not None else 0.025
    lines = [
        f"operating characteristic of the gate (one-sided α {alpha:g} at each margin; "
        f"{'sequential share ' + format(seq.sequential_share, 'g') + ' of α on the e-processes, the rest one fixed look' if seq else 'fixed look only'}; "
        f"exact for the fixed look, {PLAN_PATHS} simulated paths for the sequential design; {max(1, len(cfg.variants))} arm(s)):"
    ]
    rows: list[DesignRow] = []
    k = cfg.generation.repeats
    for name, block in gated.items():
        noise_value: float | None = None
        source: str | None = None
        accuracy: float | None = None
        if run is not None and manifest is not None:
            noise, accuracy, _ = measured(run, manifest, name, block.members)
            if noise is not None:
                noise_value, source = (
                    noise.second_moment(k),
                    noise.source.upper().replace("AA", "A/A").replace("AB", "A/B"),
                )
        cost = token_cost(cfg, run, manifest, name, block.members)
        cases = discordance_cases(cfg, name, noise_value, source, accuracy)
        drop = cfg.gates.must_catch_drop_pts.get(name)
        margin = cfg.gates.points_for("non_inferiority_margin_pts", name)
        prefill, prefill_basis = _input_per_sample(cost.input_per_sample, cost.measured, block)
        lines.append(
            f"  {name}: n {block.n_now} × {k}, margin {margin:g} pts, must-catch drop "
            f"{format(drop, 'g') + ' pts' if drop is not None else 'not set (gates.must_catch_drop_pts)'}; "
            f"input: {prefill_basis}; output: {cost.basis}"
        )
        for case in cases:
            lines.append(f"    ψ {case.discordance:.3f} ({case.label}): {case.basis}")
        block_rows = design_rows(
            cfg, name, block.n_now, k, cases, cost.output_per_attempt, cost.budget, input_per_sample=prefill
        )
        rows += block_rows
        lines += [row_line(r, drop) for r in block_rows]
    lines += signoff_lines(rows)
    return lines


def _input_per_sample(measured: float | None, is_measured: bool, block: object) -> tuple[float | None, str]:
    """Prompt tokens per sample and where they come from: measured on RUN, else what the block's plan input
    knows before a run (a generator's spec), else unknown (said so)."""
    if is_measured and measured is not None:
        return measured, f"mean {measured:.0f} prompt tokens per sample measured on RUN"
    known = getattr(block, "input_per_sample", None)
    if isinstance(known, float | int):
        return float(known), f"{known:.0f} prompt tokens per sample ({getattr(block, 'input_basis', '')})"
    return None, "prompt tokens not known before a run (--from RUN measures them)"
