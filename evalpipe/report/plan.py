"""What ``evalpipe plan`` prints for one benchmark: the plan's numbers (``evalpipe.plan.mde``) in words.

Text is made where it is shown: the planner returns a ``BenchmarkPlan`` and imports no sentence.
"""

from __future__ import annotations

import math

from evalpipe.plan.mde import BenchmarkPlan, Design
from evalpipe.words.sentences import margin_text, mde_sentence, sample_size_sentence, tokens_text


def prefill_lines(plan: BenchmarkPlan) -> list[str]:
    """The prefill's GPU time beside the decode's, for each design (``Design.prompt_tokens`` and
    ``gpu_hours_prefill``), where a speed stage gave a prefill rate and a run measured the prompts."""
    cost = plan.cost
    if cost is None or cost.prefill_basis is None:
        return []
    out = [f"  GPU time of the prefill: {cost.prefill_basis}"]
    for d in plan.designs:
        if d.prompt_tokens is None or d.gpu_hours_prefill is None:
            continue
        out.append(
            f"  {d.label}: {d.prompt_tokens / 1e6:.3g} M prompt (prefill) tokens, {d.gpu_hours_prefill:.3g} "
            "GPU-hours of prefill"
            + (f" beside {d.gpu_hours_expected:.3g} of decode" if d.gpu_hours_expected is not None else "")
        )
    return out


def plan_lines(plan: BenchmarkPlan) -> list[str]:
    """What ``evalpipe plan`` prints for this benchmark."""
    out = [
        f"{plan.benchmark}: n now {plan.n_now} of N = {plan.population} ({plan.population_basis}); "
        f"accuracy {plan.base_accuracy:.3f} ({plan.accuracy_source}); noise: {plan.noise.basis}",
        f"  now: {mde_sentence(plan.mde_now)}",
        f"  {sample_size_sentence(plan.needed)}",
    ]
    if not plan.needed.reachable and plan.mde_at_population is not None:
        out.append(f"  with all {plan.population}: {mde_sentence(plan.mde_at_population)}")
        for alt in plan.with_repeats:
            out.append(f"  with repeats: {sample_size_sentence(alt)}")
        if plan.noise.source != "aa":
            out.append(
                "  repeats are not credited: only an A/A noise (within-sample) shrinks with repeats; "
                "run an A/A control (a variant with repeat_of) to measure it"
            )
    if plan.cost is not None:
        prompt = plan.cost.input_per_sample
        prefill = (
            f"{prompt:.0f} prompt tokens per sample"
            if prompt is not None
            else "prompt tokens unknown before a run"
        )
        out.append(f"  cost: input (prefill) {prefill}; output (decode) {plan.cost.basis}")
        if plan.cost.rate_basis is not None:
            out.append(f"  GPU time: {plan.cost.rate_basis}")
        out += prefill_lines(plan)
        out += [f"  {design_cost_sentence(d)}" for d in plan.designs]
    if plan.cochran is not None and plan.noise.within == 0.0:
        out.append(
            "  Cochran's k* = sqrt((c0/c1)(τ²/ω²)) = 0: this noise has no within-sample part (τ² = 0), so "
            "repeats buy nothing and each attempt is better spent on a new sample while unused ones remain: "
            f"{plan.cochran.repeats} attempt per sample"
        )
    elif plan.cochran is not None:
        c = plan.cochran
        k_star = "∞" if math.isinf(c.k_star) else f"{c.k_star:.2f}"
        out.append(
            f"  Cochran's k* = sqrt((c0/c1)(τ²/ω²)) = {k_star} (c0 = {c.sample_cost:.0f} prompt tokens per sample, "
            f"c1 = {c.attempt_cost:.0f} output tokens per attempt): {c.repeats} attempt(s) per sample"
        )
    out += [f"  {note}" for note in plan.notes]
    return out


def design_cost_sentence(design: Design) -> str:
    """E.g. "current design (3 arms): 30 samples × 4 attempts, power 0.49 at a 15-pt drop; 2.1 M output
    tokens expected, 23.6 M at most" (expected: measured means; without a run only the budget's bound)."""
    head = (
        f"{design.label}: {design.n} samples × {design.repeats} attempt{'s' if design.repeats != 1 else ''}, "
        f"power {design.power:.2f} at a {margin_text(round(design.target * 100, 6))}-pt drop; "
    )
    if design.tokens_measured:
        out = f"{tokens_text(design.expected_tokens)} output tokens expected, {tokens_text(design.worst_tokens)} at most"
        if design.gpu_hours_expected is not None and design.gpu_hours_worst is not None:
            out += (
                f"; {design.gpu_hours_expected:.3g} GPU-hours expected, {design.gpu_hours_worst:.3g} at most"
            )
        return head + out
    return head + f"at most {tokens_text(design.worst_tokens)} output tokens (the budget; no run measured)"
