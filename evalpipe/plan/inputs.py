"""What ``evalpipe plan`` plans: per benchmark (and per pool) the n the config selects now of the population N
(``plan_inputs``: from the benchmark module's population when the data would not change it, else the config's
selection on its data), and the tokens an attempt costs (``token_cost``: measured on RUN, else the budget) with
RUN's decode and prefill rates.  No statistic here: ``evalpipe.plan.mde`` (power) and
``evalpipe.plan.operating`` (the gate's operating characteristic) take these as their inputs, and the default
``evalpipe plan`` reads them without loading the power module.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalpipe.artifacts import RunDir, read_jsonl, read_model, recorded_run
from evalpipe.artifacts.schema.compare import CompareResult
from evalpipe.artifacts.schema.manifest import BenchmarkSampling, Manifest
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.provenance import Provenance
from evalpipe.artifacts.schema.summary import Summary
from evalpipe.config.loader import resolve_sampling_rule
from evalpipe.config.models import RunConfig, SamplingRule
from evalpipe.errors import ArtifactError, ConfigError
from evalpipe.samplers.run import build_manifest, load_datasets

if TYPE_CHECKING:
    from evalpipe.benchmarks.base import PlannedItem
    from evalpipe.benchmarks.parts import DataPart
    from evalpipe.resolve import ResolvedRun


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
    resolved: ResolvedRun, dataset_root: Path | None, run: Path | None, only: set[str] | None = None
) -> tuple[list[PlanInput | str], Manifest | None]:
    """Per benchmark of ``resolved`` in config order: its plan input, or the line saying why it cannot be
    planned (its data could not be loaded and its plan needs it).  With RUN every benchmark's data is loaded
    (the noise is measured on the same entries) and the manifest is returned.  Without RUN, ``only``: the
    benchmarks planned (the others' data is not loaded)."""
    cfg = resolved.config
    if run is not None:
        manifest = manifest_for(cfg, dataset_root, run)
        return [input_from_block(b) for b in manifest.benchmarks], manifest
    out: list[PlanInput | str] = []
    for bench in cfg.benchmarks if only is None else [b for b in cfg.benchmarks if b.name in only]:
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
