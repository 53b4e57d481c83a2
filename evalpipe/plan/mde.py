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
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from evalpipe.artifacts import RunDir, atomic_write_text, read_jsonl, read_model, recorded_run
from evalpipe.artifacts.schema.compare import CompareResult
from evalpipe.artifacts.schema.manifest import BenchmarkSampling, Manifest
from evalpipe.artifacts.schema.outcomes import OutcomeRow, attempt_scores
from evalpipe.artifacts.schema.provenance import Provenance
from evalpipe.artifacts.schema.summary import Summary
from evalpipe.config.loader import resolve_sampling_rule
from evalpipe.config.models import RunConfig, SamplingRule
from evalpipe.errors import ArtifactError, ConfigError
from evalpipe.samplers.extend import floored_allocation, rule_allocation, selected_allocation
from evalpipe.samplers.run import build_manifest, load_datasets
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
    from evalpipe.benchmarks.base import PlannedItem
    from evalpipe.benchmarks.parts import DataPart
    from evalpipe.resolve import ResolvedRun

#: Repeats tried when the target is out of reach at one attempt (A/A noise model only).
REPEATS_TRIED = (2, 4, 8)


@dataclass(frozen=True)
class PlanInput:
    """What a benchmark's plan selects: n now of N, and where N comes from."""

    benchmark: str
    n_now: int
    population: int
    plan: SamplingRule
    block: BenchmarkSampling | None = None  # None: planned from the module's population, data not loaded
    basis: str = "N from the data"
    members: tuple[str, ...] = ()  # a pool (config pools:): its benchmarks; empty for one benchmark
    #: Prompt (prefill) tokens per sample known before any run (a generator's spec: the lengths its items are
    #: built to), with where the number comes from; None: only a run measures them.
    input_per_sample: float | None = None
    input_basis: str | None = None
    #: The context each selected item needs (prompt + reserve) with the expected number selected at it, known
    #: before a run for a generator's spec: ``evalpipe plan`` drops those a shorter context cannot hold.
    context_needs: tuple[tuple[int, float], ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return self.members or (self.benchmark,)


@dataclass(frozen=True)
class TokenCost:
    """Tokens per attempt: measured on a run (means) or the budget as an upper bound."""

    output_per_attempt: float
    reasoning_per_attempt: float | None
    input_per_sample: float | None
    budget: int
    measured: bool
    basis: str
    #: Output tokens per second per GPU measured by RUN's serving benchmark (``speed.json`` over the GPUs in
    #: ``provenance.json``): the designs' GPU-hours; None without one.
    tokens_per_gpu_s: float | None = None
    rate_basis: str | None = None
    #: Prompt tokens per second per GPU the serving benchmark's time to first token implies (prefill); None
    #: without one.
    prefill_per_gpu_s: float | None = None
    prefill_basis: str | None = None


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


def _rows(run: Path) -> dict[tuple[str, str], OutcomeRow]:
    return {(r.benchmark, r.source_id): r for r in read_jsonl(RunDir(run).outcomes, OutcomeRow)}


def _comparison(run: Path) -> CompareResult | None:
    path = RunDir(run).compare_json
    return read_model(path, CompareResult) if path.is_file() else None


def _arm(run: Path, cmp: CompareResult, recorded: str) -> Path:
    """An arm of RUN's compare.json: beside it when it is there (a moved root), else where it was recorded."""
    return recorded_run(recorded, run, cmp.manifest_sha256)


def _arm_rows(run: Path, cmp: CompareResult, recorded: str) -> dict[tuple[str, str], OutcomeRow]:
    """The outcomes of an arm of RUN's compare.json; a missing arm is an error, not an empty arm (its noise
    would read as none)."""
    arm = _arm(run, cmp, recorded)
    if not RunDir(arm).outcomes.is_file():
        raise ArtifactError(
            f"{RunDir(run).compare_json}: arm {recorded} not found (no outcomes.jsonl beside it or at that path)"
        )
    return _rows(arm)


def _summary_score(run: Path, benchmark: str) -> float | None:
    path = RunDir(run).summary
    if not path.is_file():
        return None
    for b in read_model(path, Summary).benchmarks:
        if b.benchmark == benchmark:
            return b.score
    return None


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


def token_cost(
    cfg: RunConfig, run: Path | None, manifest: Manifest | None, benchmark: str, members: tuple[str, ...] = ()
) -> TokenCost:
    """Mean tokens per attempt on RUN's control (``run_b`` of its compare.json, else RUN itself), else the
    budget as an upper bound (a pool: the largest of its members' budgets)."""
    names = members or (benchmark,)
    budget = max(cfg.max_tokens_for(name) for name in names)
    bound = TokenCost(
        output_per_attempt=float(budget),
        reasoning_per_attempt=None,
        input_per_sample=None,
        budget=budget,
        measured=False,
        basis=f"no run measured: {budget} output tokens per attempt (the max_tokens budget, an upper bound)",
    )
    if run is None or manifest is None:
        return bound
    cmp = _comparison(run)
    source = _arm(run, cmp, cmp.run_b) if cmp is not None else run
    if not RunDir(source).outcomes.is_file():
        return bound
    rows = _rows(source)
    keys = [(e.benchmark, e.source_id) for e in manifest.entries if e.benchmark in names]
    found = [rows[k] for k in keys if k in rows and rows[k].output_tokens is not None]
    if not found:
        return bound
    out = sum(r.output_tokens or 0 for r in found) / len(found)
    reasoning = [r.reasoning_tokens for r in found if r.reasoning_tokens is not None]
    prompt = [r.input_tokens for r in found if r.input_tokens is not None]
    r_mean = sum(reasoning) / len(reasoning) if reasoning else None
    p_mean = sum(prompt) / len(prompt) if prompt else None
    basis = f"mean {out:.0f} output tokens per attempt"
    if r_mean is not None:
        basis += f" ({r_mean:.0f} of them reasoning)"
    basis += f" over {len(found)} samples of {source} (worst case: the {budget}-token budget)"
    rate, rate_basis = decode_rate(source)
    prefill, prefill_basis = prefill_rate(source)
    return TokenCost(
        output_per_attempt=out,
        reasoning_per_attempt=r_mean,
        input_per_sample=p_mean,
        budget=budget,
        measured=True,
        basis=basis,
        tokens_per_gpu_s=rate,
        rate_basis=rate_basis,
        prefill_per_gpu_s=prefill,
        prefill_basis=prefill_basis,
    )


def prefill_rate(run: Path) -> tuple[float | None, str | None]:
    """Prompt tokens per second per GPU that ``run``'s serving benchmark implies for the prefill: per completed
    round, the workload's concurrency × its mean prompt per request over the median time to first token (the
    requests in flight prefill together), averaged over rounds, over the GPUs ``provenance.json`` recorded.
    An estimate of the same kind as ``decode_rate``'s: a first token also waits for a slot and for the decode
    steps of the requests in flight, so the prefill rate it gives is a lower bound and the GPU time an upper
    one.  ``(None, why)`` when it cannot be derived, ``(None, None)`` without a speed benchmark."""
    # import cost: the speed reader's HTTP client (~24 modules: ssl, email), only with a speed file
    from evalpipe.speed.run import read_speed

    path = RunDir(run).speed_json
    if not path.is_file():
        return None, None
    speed = read_speed(path)
    rates = [
        w.workload.concurrency * (r.input_tokens / r.completed) / (r.ttft_ms.median / 1000.0)
        for w in speed.workloads
        for r in w.rounds
        if not r.timed_out and r.completed and r.input_tokens and r.ttft_ms.median
    ]
    if not rates:
        return (
            None,
            f"{path} holds no completed round with prompt tokens and a time to first token: no prefill rate",
        )
    prov = RunDir(run).provenance
    gpus = len(read_model(prov, Provenance).gpus) if prov.is_file() else 0
    mean = sum(rates) / len(rates)
    if gpus == 0:
        return (
            None,
            f"{mean:.0f} prompt tokens/s of prefill implied by {path}, but no GPU recorded: no GPU-hours",
        )
    per_gpu = mean / gpus
    return per_gpu, (
        f"{per_gpu:.0f} prompt tokens/s per GPU of prefill ({mean:.0f} over {gpus} GPU(s): concurrency × prompt "
        f"tokens per request / median time to first token, the mean of {len(rates)} speed round(s) of {path}; a "
        "lower bound on the rate, the first token also waits for the decode of the requests in flight)"
    )


def decode_rate(run: Path) -> tuple[float | None, str | None]:
    """Output tokens per second per GPU from ``run``'s serving benchmark: the mean ``output_throughput`` of its
    completed rounds (``speed.json``, every workload) over the GPUs ``provenance.json`` recorded; ``(None,
    why)`` when the run holds no speed rounds or no GPU, ``(None, None)`` without a speed benchmark."""
    # import cost: the speed reader's HTTP client (~24 modules: ssl, email), only with a speed file
    from evalpipe.speed.run import read_speed

    path = RunDir(run).speed_json
    if not path.is_file():
        return None, None
    speed = read_speed(path)
    rates = [
        r.output_throughput
        for w in speed.workloads
        for r in w.rounds
        if r.output_throughput is not None and not r.timed_out
    ]
    if not rates:
        return None, f"{path} holds no completed speed round: no GPU-hours"
    prov = RunDir(run).provenance
    gpus = len(read_model(prov, Provenance).gpus) if prov.is_file() else 0
    mean = sum(rates) / len(rates)
    if gpus == 0:
        return (
            None,
            f"{mean:.0f} output tokens/s measured by {path}, but no GPU recorded (provenance.json): no GPU-hours",
        )
    per_gpu = mean / gpus
    return per_gpu, (
        f"{per_gpu:.0f} output tokens/s per GPU ({mean:.0f} over {gpus} GPU(s), the mean of {len(rates)} speed "
        f"round(s) of {path}); the evaluation's own lengths and batch differ, so the GPU-hours are estimates"
    )


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
    if cost.measured and cost.input_per_sample is not None and cost.output_per_attempt > 0 and noise.source == "aa":
        return optimal_repeats(noise.between, noise.within, cost.input_per_sample, cost.output_per_attempt)
    return None


def write_plan(plan: SamplingRule, path: Path) -> None:


    data = plan.model_dump(mode="json", exclude_none=True, exclude_defaults=False)
    atomic_write_text(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def manifest_for(cfg: RunConfig, dataset_root: Path | None, run: Path | None) -> Manifest:
    """The selection the config makes now (its data, its plans)."""

    manifest, _ = build_manifest(cfg, load_datasets(cfg, dataset_root))
    if run is not None:
        old = read_model(RunDir(run).manifest, Manifest)
        if old.seed != manifest.seed:
            raise ConfigError(
                f"--from {run}: sampling seed {old.seed} differs from the config's {manifest.seed}"
            )
    return manifest


def input_from_block(block: BenchmarkSampling) -> PlanInput:
    return PlanInput(
        benchmark=block.benchmark,
        n_now=block.sample_size,
        population=block.filtered_population,
        plan=block.plan,
        block=block,
        basis="N from the data",
    )


def population_only(cfg: RunConfig, spec: DataPart, dataset_root: Path | None) -> PlanInput | None:
    """The plan's n and N from the module's ``population`` when the data would come from the hub and would
    not change them: a ``total`` plan, no filter, no strata restriction, the default subset (module
    docstring); else None.  A local copy (``--dataset-root``, ``dataset_root``, ``source.local``) is read
    instead: it may be a subset of the published split, and reading it needs no network.  ``spec``: the
    benchmark's plugin, as the run resolved it."""

    meta = spec.meta
    name = meta.name
    plan = resolve_sampling_rule(cfg, name)
    bench = cfg.benchmark(name)
    if dataset_root is None and not cfg.dataset_root and bench.source.local and plan.filter is None:
        items = spec.planned_items(cfg.resolve_path(bench.source.local))
        if items is not None:
            return _planned(name, plan, items)
    if dataset_root is not None or cfg.dataset_root or bench.source.local:
        return None
    subset = bench.subset
    if meta.population is None or plan.total is None or plan.filter is not None or plan.strata is not None:
        return None
    if subset is not None and subset != meta.default_subset:
        return None
    return PlanInput(
        benchmark=name,
        n_now=min(plan.total, meta.population),
        population=meta.population,
        plan=plan,
        basis="N from the benchmark module; data not loaded, it would not change n or N",
    )


def _planned(name: str, plan: SamplingRule, items: list[PlannedItem]) -> PlanInput:
    """n and N of ``plan`` over the items a generator's spec would make (``Benchmark.planned_items``), and
    their mean prompt tokens: what the hash-ranked selection takes, counted per stratum."""
    field = plan.stratify_by
    chosen = [i for i in items if plan.strata is None or i.strata.get(field) in plan.strata]
    sizes = Counter(i.strata.get(field, "") if field != "none" else "" for i in chosen)
    if plan.per_stratum is not None:
        n = sum(min(plan.per_stratum, size) for size in sizes.values())
        taken = {s: min(plan.per_stratum, size) / size for s, size in sizes.items()}
    else:
        n = min(plan.total or 0, len(chosen))
        taken = dict.fromkeys(sizes, n / len(chosen) if chosen else 0.0)
    share: dict[int, float] = {}
    for i in chosen:  # each item selected with its stratum's share (hash-ranked within the stratum)
        need = i.input_tokens + i.reserve_tokens
        share[need] = share.get(need, 0.0) + taken[i.strata.get(field, "") if field != "none" else ""]
    mean_input = sum(i.input_tokens for i in chosen) / len(chosen) if chosen else None
    return PlanInput(
        benchmark=name,
        n_now=n,
        population=len(chosen),
        plan=plan,
        basis="N from the generator's spec: items counted, not generated",
        input_per_sample=mean_input,
        input_basis="the mean context length of the spec's items; template and question come on top",
        context_needs=tuple(sorted(share.items())),
    )


def plan_inputs(
    resolved: ResolvedRun, dataset_root: Path | None, run: Path | None
) -> tuple[list[PlanInput | str], Manifest | None]:
    """Per benchmark of ``resolved`` in config order: its plan input, or the line saying why it cannot be
    planned (its data could not be loaded and its plan needs it).  With RUN every benchmark's data is loaded
    (the noise is measured on the same entries) and the manifest is returned."""
    cfg = resolved.config
    if run is not None:
        manifest = manifest_for(cfg, dataset_root, run)
        return [input_from_block(b) for b in manifest.benchmarks], manifest
    out: list[PlanInput | str] = []
    for bench in cfg.benchmarks:
        known = population_only(cfg, resolved.benchmarks[bench.name], dataset_root)
        if known is not None:
            out.append(known)
            continue
        single = cfg.model_copy(update={"benchmarks": [bench]})
        single._config_path = cfg.config_path
        try:
            manifest = manifest_for(single, dataset_root, None)
        except Exception as exc:  # a hub or mirror failure of any library: say it, plan the others
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            out.append(
                f"{bench.name}: not planned — its plan needs the data, which could not be loaded ({first})"
            )
            continue
        out.append(input_from_block(manifest.benchmarks[0]))
    return out, None


def pool_input(name: str, members: list[str], inputs: list[PlanInput | str]) -> PlanInput | str:
    """A pool (config ``pools:``) planned as one comparison: n now and N are its members' sums."""
    found = {x.benchmark: x for x in inputs if isinstance(x, PlanInput)}
    missing = [m for m in members if m not in found]
    if missing:
        return f"{name} (pool): not planned — {', '.join(missing)} could not be planned"
    parts = [found[m] for m in members]
    bases = sorted({x.basis for x in parts})
    known = all(x.input_per_sample is not None for x in parts) and sum(x.n_now for x in parts) > 0
    return PlanInput(
        benchmark=name,
        n_now=sum(x.n_now for x in parts),
        population=sum(x.population for x in parts),
        plan=parts[0].plan,
        basis=f"pool of {', '.join(members)}; " + "; ".join(bases),
        members=tuple(members),
        input_per_sample=sum((x.input_per_sample or 0.0) * x.n_now for x in parts)
        / sum(x.n_now for x in parts)
        if known
        else None,
        input_basis="; ".join(sorted({x.input_basis for x in parts if x.input_basis})) if known else None,
        context_needs=tuple(sorted(need for x in parts for need in x.context_needs)),
    )
