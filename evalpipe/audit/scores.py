"""Per-benchmark results: score and Wilson interval, strata and the population-weighted estimate,
context-length buckets, failure counts, reasoning length and code-execution summary.

Denominators are manifest entries: a sample that was never scored (API error, scoring crash, missing
row) counts as incorrect and is counted in ``without_score``, so a broken run cannot look better.
"""

from __future__ import annotations

from collections import Counter

from evalpipe.artifacts.schema.manifest import BenchmarkSampling, ManifestEntry
from evalpipe.artifacts.schema.metrics import Interval, wilson_ci
from evalpipe.artifacts.schema.outcomes import BUDGET_CLASSES, OutcomeRow, attempt_scores, is_correct
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.artifacts.schema.summary import (
    BenchmarkResult,
    CodeExecutionSummary,
    FailureCount,
    LengthStats,
    LengthStratumResult,
    PlacementResult,
    ReasoningLength,
    RepeatsResult,
    StratifiedEstimate,
    StratumResult,
)
from evalpipe.audit.inputs import RunInputs
from evalpipe.audit.linkage import Linkage
from evalpipe.audit.request_metrics import request_audit, throughput
from evalpipe.benchmarks import display_name, find, length_buckets, primary_metric
from evalpipe.benchmarks.live_code_bench import policy_text
from evalpipe.benchmarks.parts import ScoringPart
from evalpipe.stats.descriptive import length_summary
from evalpipe.stats.intervals import STRATIFIED_METHOD, StratumData, clustered_mean, stratified_proportion

SampleKey = tuple[str, str]


def _is_proportional(sampling: BenchmarkSampling | None, entries: list[ManifestEntry]) -> bool:
    """Proportional by design (plan), a single stratum, or equal design weights."""
    strata = {e.stratum for e in entries}
    if len(strata) <= 1:
        return True
    if sampling is not None and sampling.plan.allocation in ("proportional", "uniform"):
        return True
    weights = [e.weight for e in entries]
    return max(weights) - min(weights) <= 1e-9 * max(weights)


def length_results(
    name: str,
    sampling: BenchmarkSampling | None,
    entries: list[ManifestEntry],
    rows: dict[SampleKey, OutcomeRow],
) -> list[LengthStratumResult]:
    """KV-cache view: n, score and Wilson interval per context-length bucket (same denominator rule)."""
    if sampling is None:
        return []
    out = []
    for length, bucket_of in length_buckets(name, sampling.plan.stratify_by, [e.stratum for e in entries]):
        es = [e for e in entries if bucket_of[e.stratum] == length]
        k = sum(1 for e in es if is_correct(rows.get((e.benchmark, e.source_id))))
        out.append(
            LengthStratumResult(
                length=length, n=len(es), correct=k, score=k / len(es), interval=wilson_ci(k, len(es))
            )
        )
    return out


def placement_results(
    entries: list[ManifestEntry], rows: dict[SampleKey, OutcomeRow]
) -> list[PlacementResult]:
    """A generated benchmark's correct / n per (length, placement) cell; [] unless every entry was generated."""
    if not entries or any(e.generated is None for e in entries):
        return []
    cells: dict[tuple[int, str], list[ManifestEntry]] = {}
    for e in entries:
        assert e.generated is not None
        cells.setdefault((e.generated.length, e.generated.placement), []).append(e)
    return [
        PlacementResult(
            length=length,
            placement=placement,
            n=len(es),
            correct=sum(1 for e in es if is_correct(rows.get((e.benchmark, e.source_id)))),
        )
        for (length, placement), es in sorted(cells.items(), key=lambda kv: kv[0][0])
    ]


def strata_results(
    entries: list[ManifestEntry], rows: dict[SampleKey, OutcomeRow]
) -> tuple[list[StratumResult], StratifiedEstimate | None]:
    """Score per stratum, and the population-weighted estimate when the design weights differ."""
    by: dict[str, list[ManifestEntry]] = {}
    for e in entries:
        by.setdefault(e.stratum, []).append(e)
    results: list[StratumResult] = []
    data: list[StratumData] = []
    for name in sorted(by):
        es = by[name]
        ys = [1.0 if is_correct(rows.get((e.benchmark, e.source_id))) else 0.0 for e in es]
        k = int(sum(ys))
        results.append(
            StratumResult(
                stratum=name,
                population=es[0].stratum_population,
                selected=len(es),
                weight=es[0].stratum_population / len(es),
                correct=k,
                score=k / len(es),
            )
        )
        data.append(StratumData(name=name, population=es[0].stratum_population, outcomes=ys))
    weights = {r.weight for r in results}
    if len(results) <= 1 or max(weights) - min(weights) <= 1e-9 * max(weights):
        return results, None
    st = stratified_proportion(data)
    if st is None:
        return results, None
    est = StratifiedEstimate(
        estimate=st.estimate,
        standard_error=st.standard_error,
        effective_sample_size=st.effective_sample_size,
        interval=Interval(lower=st.interval[0], upper=st.interval[1], method="wilson_effective_n"),
        method=STRATIFIED_METHOD,
    )
    return results, est


def failure_counts(entries: list[ManifestEntry], rows: dict[SampleKey, OutcomeRow]) -> list[FailureCount]:
    """Samples per failure label, most frequent first (a missing row is ``missing_outcome``)."""
    buckets: dict[str, tuple[str, str | None, list[str]]] = {}
    for e in entries:
        row = rows.get((e.benchmark, e.source_id))
        if row is None:
            label, cls, detail = "missing_outcome", "missing_outcome", None
        else:
            label, cls = row.failure_label, row.failure_class
            detail = row.failure_detail if cls == "code_runtime_error" else None
        buckets.setdefault(label, (cls, detail, []))[2].append(e.source_id)
    return sorted(
        (
            FailureCount(
                label=label, failure_class=cls, detail=detail, count=len(ids), sample_ids=sorted(ids)
            )
            for label, (cls, detail, ids) in buckets.items()
        ),
        key=lambda f: (-f.count, f.label),
    )


def _max_tokens(inputs: RunInputs, benchmark: str, attempts: list[RequestAttempt]) -> int | None:
    cfg = inputs.config
    if cfg is not None and any(b.name == benchmark for b in cfg.benchmarks):
        return cfg.max_tokens_for(benchmark)
    seen = Counter(a.max_tokens for a in attempts if a.max_tokens is not None)
    return seen.most_common(1)[0][0] if seen else None


def _length_stats(values: list[float]) -> LengthStats | None:
    summary = length_summary(values)
    if summary is None:
        return None
    return LengthStats(n=summary.n, median=summary.median, p95=summary.p95, max=summary.max)


def reasoning_length(found: list[OutcomeRow | None], budget: int | None) -> ReasoningLength | None:
    """Reasoning length per benchmark as a share of its budget (tokens only where the server reported them)."""
    responses = [r for r in found if r is not None and r.prediction_present]
    reasoned = [r for r in responses if (r.reasoning_chars or 0) > 0]
    if not reasoned:
        return None
    tokens = [float(r.reasoning_tokens) for r in reasoned if r.reasoning_tokens is not None]
    return ReasoningLength(
        budget=budget,
        responses=len(responses),
        with_reasoning=len(reasoned),
        tokens_reported=len(tokens),
        tokens=_length_stats(tokens),
        share_of_budget=_length_stats([t / budget for t in tokens]) if budget else None,
        chars=_length_stats([float(r.reasoning_chars or 0) for r in reasoned]),
    )


def code_execution_summary(found: list[OutcomeRow | None]) -> CodeExecutionSummary | None:
    """How a code benchmark's programs ran, and what the isolated re-checks changed."""

    rows = [r for r in found if r is not None and r.code_execution is not None]
    runs = [r.code_execution for r in rows if r.code_execution is not None]
    if not runs:
        return None
    rechecked = [
        r for r in rows if r.code_execution is not None and r.code_execution.mode == "isolated_recheck"
    ]
    limit = max(e.per_test_limit_s for e in runs)
    sandboxes = Counter(e.sandbox or "unrecorded" for e in runs)
    # one kind in the whole run (the preflight resolves it once); a mixture is stated as it is
    sandbox = next(iter(sandboxes)) if len(sandboxes) == 1 else ", ".join(sorted(sandboxes))
    return CodeExecutionSummary(
        policy=policy_text(limit, None if sandbox == "unrecorded" else sandbox),
        per_test_limit_s=limit,
        executed=len(runs),
        rechecked=len(rechecked),
        changed_class=sum(
            1
            for r in rechecked
            if r.code_execution is not None and r.code_execution.review_class != r.failure_class
        ),
        passed_on_recheck=sum(1 for r in rechecked if r.failure_class == "ok"),
        sandboxes=dict(sorted(sandboxes.items())),
        denied=dict(sorted(Counter(k for e in runs for k in {d.kind for d in e.denied}).items())),
    )


def repeats_result(found: list[OutcomeRow | None]) -> tuple[RepeatsResult, Interval] | None:
    """The clustered score and the measured nondeterminism of a run with ``generation.repeats > 1``."""
    # import cost: numpy (~93 modules), only on this path
    from evalpipe.stats.repeats import Attempt, nondeterminism

    planned = max((len(r.attempts) for r in found if r is not None), default=0)
    if planned < 2:
        return None
    samples = [attempt_scores(r) for r in found]
    mean = clustered_mean(samples)
    answered = [
        [Attempt(1.0 if a.correct else 0.0, a.response_sha256) for a in r.attempts if a.response_sha256]
        if r is not None
        else []
        for r in found
    ]
    noise = nondeterminism(answered)
    statement = (
        f"{planned} attempts per sample: score is the mean of per-sample means, interval with the sample as "
        f"the cluster (effective n {mean.effective_sample_size:.1f} of {mean.n_attempts} attempts); "
        f"answers differed within {noise.responses_differed} of {noise.responses_compared} sample(s), "
        f"scores within {noise.scores_differed} of {noise.samples_with_repeats}."
    )
    return RepeatsResult(
        repeats=planned,
        attempts=mean.n_attempts,
        correct_attempts=round(sum(sum(x) for x in samples)),
        estimate=mean.estimate,
        standard_error=mean.standard_error,
        effective_sample_size=mean.effective_sample_size,
        samples_with_repeats=noise.samples_with_repeats,
        responses_compared=noise.responses_compared,
        responses_differed=noise.responses_differed,
        scores_differed=noise.scores_differed,
        statement=statement,
    ), Interval(lower=mean.interval[0], upper=mean.interval[1], method="wilson_clustered")


def benchmark_results(
    inputs: RunInputs, rows: dict[SampleKey, OutcomeRow], linkage: Linkage | None
) -> list[BenchmarkResult]:
    """One result per benchmark, in manifest order."""
    out: list[BenchmarkResult] = []
    tp_size = inputs.verification.tp_size if inputs.verification else None
    order = [b.benchmark for b in inputs.manifest.benchmarks]
    order += [e.benchmark for e in inputs.manifest.entries if e.benchmark not in order]
    for name in dict.fromkeys(order):
        entries = inputs.manifest.entries_for(name)
        try:
            sampling: BenchmarkSampling | None = inputs.manifest.sampling_for(name)
        except KeyError:
            sampling = None
        found = [rows.get((e.benchmark, e.source_id)) for e in entries]
        correct = sum(1 for r in found if is_correct(r))
        without = sum(1 for r in found if r is None or r.score is None)
        truncated_scored = sum(
            1 for r in found if r is not None and r.failure_class in BUDGET_CLASSES and (r.score or 0) > 0
        )
        n = len(entries)
        spec: ScoringPart | None = find(name)
        strata, stratified = strata_results(entries, rows)
        attempts = linkage.attempts_for_benchmark(name) if linkage else []
        budget = _max_tokens(inputs, name, attempts)
        subsets = list(sampling.subsets) if sampling else sorted({e.subset for e in entries})
        repeated = repeats_result(found)
        score = correct / n if n else None
        interval = wilson_ci(correct, n)
        if repeated is not None:
            score, interval = repeated[0].estimate, repeated[1]
        out.append(
            BenchmarkResult(
                benchmark=name,
                display_name=display_name(name),
                subsets=subsets,
                metric=primary_metric(name),
                correct=correct,
                scored=n,
                without_score=without,
                budget_exhausted_scored_correct=truncated_scored,
                score=score,
                interval=interval,
                allocation_proportional=_is_proportional(sampling, entries),
                stratified=stratified,
                strata=strata,
                secondary=spec.secondary_metrics(found) if spec else [],
                by_length=length_results(name, sampling, entries, rows),
                by_placement=placement_results(entries, rows),
                failures=failure_counts(entries, rows),
                max_tokens=budget,
                requests=request_audit(entries, linkage, name, inputs.attempts_torn),
                throughput=throughput(attempts, tp_size) if linkage else None,
                reasoning=reasoning_length(found, budget),
                code_execution=code_execution_summary(found),
                repeats=repeated[0] if repeated is not None else None,
            )
        )
    return out
