"""``evalpipe plan``: per benchmark, what the current plan can see and what a target MDE asks for.

The statistics are ``evalpipe.stats.power`` (each formula cited there); this module only decides which inputs
they get:

* ``n now`` and the population N: from the benchmark module's ``population`` (``BenchmarkMeta``) when the
  data would come from the hub and the plan takes a ``total`` with no filter, no strata restriction and the
  default subset — then the data would not change the answer (n = min(total, N)) and is not loaded, which is
  said; otherwise the config's plan
  selected on its data (``build_manifest``, the same selection ``evalpipe sample`` makes; N is the filtered
  population).  A benchmark whose data cannot be loaded is reported as such and the others are planned;
* the noise model: from a finished paired run (``--from RUN``): its A/A pair (control and repeat) when it
  ran one, else its A/B pair, measured on their outcomes with every attempt; otherwise the conservative
  default 2p(1 − p) — printed as assumed;
* the base accuracy p: RUN's control score (or its single-run score), else 0.5 (the maximum of 2p(1 − p)).

Only within-sample noise shrinks with repeats, so the repeats that would reach an out-of-reach target
are tried only under an A/A noise model; an A/B stand-in or the assumed default is not credited.

**Pools** (config ``pools:``) are planned as one comparison after the benchmarks: n now and N are the
members' sums, the noise and accuracy are measured on the members' samples together (RUN's pool block when it
judged the pool); ``--write`` writes members' plans only.

**Cost.**  Output tokens per attempt: the mean of RUN's recorded ``output_tokens`` (and reasoning tokens)
over the control's samples, else the benchmark's ``max_tokens`` budget as an upper bound (said so).  For the
current design (n now, k) and the proposed one (the n the target needs at k, or — A/A noise only — the whole
population with the repeats that reach it) ``plan`` prints n, k, the power at the target drop, the expected
output tokens (samples × attempts × arms × mean tokens) and the worst case (× the budget), over every arm
(``variants``, else one).  When the control holds a serving benchmark (``speed.json``) and its GPUs
(``provenance.json``), both are also GPU-hours: tokens ÷ the mean measured output rate per GPU (``decode_rate``;
an estimate: the benchmark's lengths and batch are not the evaluation's).  Cochran's k* (``evalpipe.stats.design``) is printed with the costs measured on
RUN: ``c0`` = mean input tokens (the prompt, prefilled once per sample when the server caches the prefix),
``c1`` = mean output tokens per attempt.  Under a noise with no within-sample part (the assumed default, an
A/B stand-in) ``τ² = 0`` gives ``k* = 0`` whatever the costs: one attempt per sample, printed without a run,
and when the config asks for more the design at that k (the n the target needs, at most the population) is
proposed too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from evalpipe.artifacts import RunDir, atomic_write_text
from evalpipe.artifacts.schema.manifest import BenchmarkSampling, Manifest
from evalpipe.artifacts.schema.outcomes import attempt_scores
from evalpipe.config.models import RunConfig, SamplingRule
from evalpipe.plan.inputs import PlanInput as PlanInput
from evalpipe.plan.inputs import TokenCost as TokenCost
from evalpipe.plan.inputs import (
    _arm_rows,
    _comparison,
    _summary_score,
    input_from_block,
    token_cost,
)
from evalpipe.plan.inputs import manifest_for as manifest_for
from evalpipe.plan.inputs import plan_inputs as plan_inputs
from evalpipe.plan.inputs import pool_input as pool_input
from evalpipe.plan.inputs import population_only as population_only
from evalpipe.plan.inputs import prefill_rate as prefill_rate
from evalpipe.samplers.extend import floored_allocation, rule_allocation, selected_allocation
from evalpipe.stats.design import RepeatsChoice, expected_tokens, gpu_hours, optimal_repeats
from evalpipe.stats.power import (
    MinimumDetectableEffect,
    NoiseModel,
    SampleSizeNeeded,
    assumed_noise,
    drop_power,
    minimum_detectable_effect,
    noise_from_runs,
    sample_size_for_mde,
)

if TYPE_CHECKING:
    pass

#: Repeats tried when the target is out of reach at one attempt (A/A noise model only).
REPEATS_TRIED = (2, 4, 8)


@dataclass(frozen=True)
class Design:
    """One design's n, k, power at the target drop and output tokens over every arm."""

    label: str
    n: int
    repeats: int
    target: float
    power: float
    expected_tokens: float
    worst_tokens: float
    tokens_measured: bool
    gpu_hours_expected: float | None = None
    gpu_hours_worst: float | None = None
    #: Prompt tokens the design prefills (one prompt per attempt, every arm) where a run measured the prompts,
    #: and their GPU-hours at the speed stage's prefill rate; None where either is not known.
    prompt_tokens: float | None = None
    gpu_hours_prefill: float | None = None


@dataclass(frozen=True)
class BenchmarkPlan:
    benchmark: str
    n_now: int
    population: int
    base_accuracy: float
    accuracy_source: str
    noise: NoiseModel
    repeats: int
    mde_now: MinimumDetectableEffect
    needed: SampleSizeNeeded
    mde_at_population: MinimumDetectableEffect | None
    with_repeats: list[SampleSizeNeeded] = field(default_factory=list)
    new_plan: SamplingRule | None = None
    notes: list[str] = field(default_factory=list)
    population_basis: str = "N from the data"
    cost: TokenCost | None = None
    designs: list[Design] = field(default_factory=list)
    cochran: RepeatsChoice | None = None
    arms: int = 1  # the config's variants: every arm sends every prompt


_NOT_MEASURED = "not measured: 0.5, the most conservative"


def measured(
    run: Path | None, manifest: Manifest, benchmark: str, members: tuple[str, ...] = ()
) -> tuple[NoiseModel | None, float | None, str]:
    """(noise, base accuracy, where the accuracy comes from) from a finished run, or (None, None, …);
    ``members``: a pool's benchmarks, measured on their samples together."""
    if run is None:
        return None, None, _NOT_MEASURED
    names = members or (benchmark,)
    keys = [(e.benchmark, e.source_id) for e in manifest.entries if e.benchmark in names]
    cmp = _comparison(run)
    if cmp is not None:
        block = next((b for b in [*cmp.benchmarks, *cmp.pools] if b.benchmark == benchmark), None)
        if block is None and not members:
            return None, None, f"{benchmark} is not in {RunDir(run).compare_json}"
        control = _arm_rows(run, cmp, cmp.run_b)
        b_scores = [attempt_scores(control.get(k)) for k in keys]
        if block is not None and block.b.score is not None:
            p = block.b.score
        elif b_scores:  # a pool the run did not judge: its members' samples together (first attempts)
            p = sum(x[0] for x in b_scores) / len(b_scores)
        else:
            p = 0.5
        if cmp.aa_only:  # A is the control's first run, B its repeat: the pair is the noise
            first = _arm_rows(run, cmp, cmp.run_a)
            noise = noise_from_runs([attempt_scores(first.get(k)) for k in keys], b_scores, "aa")
        elif cmp.run_aa is not None:
            again = _arm_rows(run, cmp, cmp.run_aa)
            noise = noise_from_runs(b_scores, [attempt_scores(again.get(k)) for k in keys], "aa")
        else:
            test = _arm_rows(run, cmp, cmp.run_a)
            noise = noise_from_runs([attempt_scores(test.get(k)) for k in keys], b_scores, "ab")
        return noise, p, f"control score in {run}"
    score = None if members else _summary_score(run, benchmark)
    if score is None:
        return None, None, f"no score for {benchmark} in {run}: 0.5, the most conservative"
    return None, score, f"score in {run}"


def larger_plan(old: SamplingRule, n: int, strata: int) -> SamplingRule:
    """The same plan shape asking for ``n`` samples (per stratum: ceil(n / strata), short strata taken whole)."""
    if old.per_stratum is not None:
        return old.model_copy(update={"per_stratum": math.ceil(n / max(1, strata)), "allow_short": True})
    return old.model_copy(update={"total": n})


def _design(
    label: str, n: int, k: int, target: float, noise: NoiseModel, arms: int, cost: TokenCost
) -> Design:
    prompt = expected_tokens(n, k, arms, cost.input_per_sample) if cost.input_per_sample is not None else None
    return Design(
        label=label,
        n=n,
        repeats=k,
        target=target,
        power=drop_power(n, target, noise, k),
        expected_tokens=expected_tokens(n, k, arms, cost.output_per_attempt),
        worst_tokens=expected_tokens(n, k, arms, float(cost.budget)),
        tokens_measured=cost.measured,
        gpu_hours_expected=gpu_hours(
            expected_tokens(n, k, arms, cost.output_per_attempt), cost.tokens_per_gpu_s
        )
        if cost.tokens_per_gpu_s
        else None,
        gpu_hours_worst=gpu_hours(expected_tokens(n, k, arms, float(cost.budget)), cost.tokens_per_gpu_s)
        if cost.tokens_per_gpu_s
        else None,
        prompt_tokens=prompt,
        gpu_hours_prefill=gpu_hours(prompt, cost.prefill_per_gpu_s)
        if prompt is not None and cost.prefill_per_gpu_s
        else None,
    )


def plan_benchmark(
    cfg: RunConfig,
    block: BenchmarkSampling | PlanInput,
    manifest: Manifest | None,
    target_pts: float,
    run: Path | None,
    write: bool,
) -> BenchmarkPlan:
    if isinstance(block, BenchmarkSampling):
        block = input_from_block(block)
    name = block.benchmark
    noise, p, source = (
        measured(run, manifest, name, block.members) if manifest is not None else (None, None, _NOT_MEASURED)
    )
    if p is None:
        p = 0.5
    if noise is None:
        noise = assumed_noise(p)
    k = cfg.generation.repeats
    n_now, population = block.n_now, block.population
    target = target_pts / 100.0
    now = minimum_detectable_effect(n_now, noise, k, base_accuracy=p)
    needed = sample_size_for_mde(target, noise, k, base_accuracy=p, population=population)
    at_population = None
    alternatives: list[SampleSizeNeeded] = []
    if not needed.reachable:
        at_population = minimum_detectable_effect(population, noise, k, base_accuracy=p)
        if noise.source == "aa":
            alternatives = [
                sample_size_for_mde(target, noise, r, base_accuracy=p, population=population)
                for r in REPEATS_TRIED
                if r > k
            ]
    new_plan: SamplingRule | None = None
    notes: list[str] = []
    if write and needed.n_needed is not None and not block.members:
        new_plan, notes = _larger(block, needed.n_needed)
    arms = max(1, len(cfg.variants))
    cost = token_cost(cfg, run, manifest, name, block.members)
    # prompt tokens a generator's spec knows before any run (kv_probe): priced apart from the output
    if cost.input_per_sample is None and block.input_per_sample is not None:
        cost = replace(cost, input_per_sample=block.input_per_sample)
    designs = [
        _design(f"current design ({arms} arm{'s' if arms != 1 else ''})", n_now, k, target, noise, arms, cost)
    ]
    proposal = _proposal(needed, alternatives, n_now, population, k)
    if proposal is not None:
        designs.append(_design(proposal[0], proposal[1], proposal[2], target, noise, arms, cost))
    cochran = _cochran(noise, cost)
    if cochran is not None and cochran.repeats != k:
        by_rule = sample_size_for_mde(target, noise, cochran.repeats, base_accuracy=p, population=population)
        n_rule = population if by_rule.n_needed is None else min(by_rule.n_needed, population)
        label = f"proposed at Cochran's k = {cochran.repeats}"
        designs.append(_design(label, n_rule, cochran.repeats, target, noise, arms, cost))
    return BenchmarkPlan(
        benchmark=name,
        n_now=n_now,
        population=population,
        base_accuracy=p,
        accuracy_source=source,
        noise=noise,
        repeats=k,
        mde_now=now,
        needed=needed,
        mde_at_population=at_population,
        with_repeats=alternatives,
        new_plan=new_plan,
        notes=notes,
        population_basis=block.basis,
        cost=cost,
        designs=designs,
        arms=arms,
        cochran=cochran,
    )


def _proposal(
    needed: SampleSizeNeeded, alternatives: list[SampleSizeNeeded], n_now: int, population: int, k: int
) -> tuple[str, int, int] | None:
    """The proposed design as (label, units, repeats): the units the target needs at ``k`` repeats, else the
    first number of repeats that reaches it, else the whole population when it is larger than now."""
    if needed.n_needed is not None and needed.reachable is not False:
        return "proposed", needed.n_needed, k
    reach = next((alt for alt in alternatives if alt.reachable), None)
    if reach is not None and reach.n_needed is not None:
        return "proposed", reach.n_needed, reach.repeats
    if population > n_now:
        return "proposed: the whole population", population, k
    return None


def _larger(block: PlanInput, n_needed: int) -> tuple[SamplingRule, list[str]]:
    """The larger sampling rule for ``n_needed`` units (at most the population) and its notes: the strata's
    allocation floored at the run's own, and a target the whole population does not reach."""
    name, population = block.benchmark, block.population
    n = min(n_needed, population)
    strata = block.block.strata if block.block is not None else []
    new_plan = larger_plan(block.plan, n, max(1, len(strata)))
    notes: list[str] = []
    if block.block is not None:
        populations = {s.stratum: s.population for s in strata}
        floors = floored_allocation(selected_allocation(block.block), rule_allocation(new_plan, populations))
        notes = floors.notes(name)
    if n < n_needed:
        notes.append(f"{name}: the plan takes the whole population ({population}); the target is not reached")
    return new_plan, notes


def _cochran(noise: NoiseModel, cost: TokenCost) -> RepeatsChoice | None:
    """Cochran's optimal repeats: always when the noise has no within-sample part (τ² = 0: k* = 0 whatever the
    costs, module docstring), else only from measured costs and an A/A noise model."""
    if noise.within == 0.0:
        return optimal_repeats(noise.between, 0.0, cost.input_per_sample or 0.0, cost.output_per_attempt)
    if (
        cost.measured
        and cost.input_per_sample is not None
        and cost.output_per_attempt > 0
        and noise.source == "aa"
    ):
        return optimal_repeats(noise.between, noise.within, cost.input_per_sample, cost.output_per_attempt)
    return None


def write_plan(plan: SamplingRule, path: Path) -> None:

    data = plan.model_dump(mode="json", exclude_none=True, exclude_defaults=False)
    atomic_write_text(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
