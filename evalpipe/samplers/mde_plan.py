"""``evalpipe plan``: per benchmark, what the current plan can see and what a target MDE asks for.

The statistics are ``evalpipe.stats.power`` (each formula cited there); this module only decides which inputs
they get:

* ``n now`` and the population N: the config's plan selected on its data (``build_manifest``, the same
  selection ``evalpipe sample`` makes; N is the filtered population);
* the noise model: from a finished paired run (``--from RUN``): its A/A pair (control and repeat) when it
  ran one, else its A/B pair, measured on their outcomes with every attempt; otherwise the conservative
  default 2p(1 − p) — printed as assumed;
* the base accuracy p: RUN's control score (or its single-run score), else 0.5 (the maximum of 2p(1 − p)).

Only within-sample noise shrinks with repeats, so the repeats that would reach an out-of-reach target
are tried only under an A/A noise model; an A/B stand-in or the assumed default is not credited.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from evalpipe.artifacts import RunDir, read_jsonl, read_model
from evalpipe.artifacts.schema.compare import CompareResult
from evalpipe.artifacts.schema.manifest import BenchmarkSampling, Manifest
from evalpipe.artifacts.schema.outcomes import OutcomeRow, attempt_scores
from evalpipe.artifacts.schema.summary import Summary
from evalpipe.config.models import RunConfig, SamplingPlan
from evalpipe.errors import ConfigError
from evalpipe.report.sentences import mde_sentence, sample_size_sentence
from evalpipe.samplers.extend import floored_allocation, plan_allocation, selected_allocation
from evalpipe.stats.power import (
    MinimumDetectableEffect,
    NoiseModel,
    SampleSizeNeeded,
    assumed_noise,
    minimum_detectable_effect,
    noise_from_runs,
    sample_size_for_mde,
)

#: Repeats tried when the target is out of reach at one attempt (A/A noise model only).
REPEATS_TRIED = (2, 4, 8)


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
    new_plan: SamplingPlan | None = None
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """What ``evalpipe plan`` prints for this benchmark."""
        out = [
            f"{self.benchmark}: n now {self.n_now} of N = {self.population}; accuracy {self.base_accuracy:.3f} "
            f"({self.accuracy_source}); noise: {self.noise.basis}",
            f"  now: {mde_sentence(self.mde_now)}",
            f"  {sample_size_sentence(self.needed)}",
        ]
        if not self.needed.reachable and self.mde_at_population is not None:
            out.append(f"  with all {self.population}: {mde_sentence(self.mde_at_population)}")
            for alt in self.with_repeats:
                out.append(f"  with repeats: {sample_size_sentence(alt)}")
            if self.noise.source != "aa":
                out.append(
                    "  repeats are not credited: only an A/A noise (within-sample) shrinks with repeats; "
                    "run an A/A control (a variant with repeat_of) to measure it"
                )
        out += [f"  {note}" for note in self.notes]
        return out


def _rows(run: Path) -> dict[tuple[str, str], OutcomeRow]:
    return {(r.benchmark, r.source_id): r for r in read_jsonl(RunDir(run).outcomes, OutcomeRow)}


def _comparison(run: Path) -> CompareResult | None:
    path = run / "compare.json"
    return read_model(path, CompareResult) if path.is_file() else None


def _summary_score(run: Path, benchmark: str) -> float | None:
    path = RunDir(run).summary
    if not path.is_file():
        return None
    for b in read_model(path, Summary).benchmarks:
        if b.benchmark == benchmark:
            return b.score
    return None


def measured(
    run: Path | None, manifest: Manifest, benchmark: str
) -> tuple[NoiseModel | None, float | None, str]:
    """(noise, base accuracy, where the accuracy comes from) from a finished run, or (None, None, …)."""
    if run is None:
        return None, None, "not measured: 0.5, the most conservative"
    keys = [(e.benchmark, e.source_id) for e in manifest.entries if e.benchmark == benchmark]
    cmp = _comparison(run)
    if cmp is not None:
        block = next((b for b in cmp.benchmarks if b.benchmark == benchmark), None)
        if block is None:
            return None, None, f"{benchmark} is not in {run / 'compare.json'}"
        control = _rows(Path(cmp.run_b))
        b_scores = [attempt_scores(control.get(k)) for k in keys]
        p = block.b.score if block.b.score is not None else 0.5
        if cmp.aa_only:  # A is the control's first run, B its repeat: the pair is the noise
            first = _rows(Path(cmp.run_a))
            noise = noise_from_runs([attempt_scores(first.get(k)) for k in keys], b_scores, "aa")
        elif cmp.run_aa is not None:
            again = _rows(Path(cmp.run_aa))
            noise = noise_from_runs(b_scores, [attempt_scores(again.get(k)) for k in keys], "aa")
        else:
            test = _rows(Path(cmp.run_a))
            noise = noise_from_runs([attempt_scores(test.get(k)) for k in keys], b_scores, "ab")
        return noise, p, f"control score in {run}"
    score = _summary_score(run, benchmark)
    if score is None:
        return None, None, f"no score for {benchmark} in {run}: 0.5, the most conservative"
    return None, score, f"score in {run}"


def larger_plan(old: SamplingPlan, n: int, strata: int) -> SamplingPlan:
    """The same plan shape asking for ``n`` samples (per stratum: ceil(n / strata), short strata taken whole)."""
    if old.per_stratum is not None:
        return old.model_copy(update={"per_stratum": math.ceil(n / max(1, strata)), "allow_short": True})
    return old.model_copy(update={"total": n})


def plan_benchmark(
    cfg: RunConfig,
    block: BenchmarkSampling,
    manifest: Manifest,
    target_pts: float,
    run: Path | None,
    write: bool,
) -> BenchmarkPlan:
    name = block.benchmark
    noise, p, source = measured(run, manifest, name)
    if p is None:
        p = 0.5
    if noise is None:
        noise = assumed_noise(p)
    k = cfg.generation.repeats
    n_now, population = block.sample_size, block.filtered_population
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
    new_plan: SamplingPlan | None = None
    notes: list[str] = []
    if write and needed.n_needed is not None:
        n = min(needed.n_needed, population)
        new_plan = larger_plan(block.plan, n, len(block.strata))
        populations = {s.stratum: s.population for s in block.strata}
        floors = floored_allocation(selected_allocation(block), plan_allocation(new_plan, populations))
        notes = floors.notes(name)
        if n < needed.n_needed:
            notes.append(
                f"{name}: the plan takes the whole population ({population}); the target is not reached"
            )
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
    )


def write_plan(plan: SamplingPlan, path: Path) -> None:
    import yaml

    from evalpipe.artifacts import atomic_write_text

    data = plan.model_dump(mode="json", exclude_none=True, exclude_defaults=False)
    atomic_write_text(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def manifest_for(cfg: RunConfig, dataset_root: Path | None, run: Path | None) -> Manifest:
    """The selection the config makes now (its data, its plans)."""
    from evalpipe.samplers.run import build_manifest, load_datasets

    manifest, _ = build_manifest(cfg, load_datasets(cfg, dataset_root))
    if run is not None:
        old = read_model(RunDir(run).manifest, Manifest)
        if old.seed != manifest.seed:
            raise ConfigError(
                f"--from {run}: sampling seed {old.seed} differs from the config's {manifest.seed}"
            )
    return manifest
