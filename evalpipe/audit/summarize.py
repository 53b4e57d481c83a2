"""Assemble the ``Summary`` from the loaded run directory, the linkage and the findings.

This is where every number of the sign-off is computed; the renderers only format the result.
Denominators are manifest entries: a sample that was never scored (API error, scoring crash, missing
row) counts as incorrect and is counted in ``without_score``, so a broken run cannot look better.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

from evalpipe.audit.inputs import RunInputs
from evalpipe.audit.linkage import SELECTION_RULE, Linkage, attempt_ok, parse_time
from evalpipe.audit.secrets import redact_text
from evalpipe.benchmarks import display_name, find, length_buckets, primary_metric
from evalpipe.schema.manifest import BenchmarkSampling, ManifestEntry
from evalpipe.schema.outcomes import BUDGET_CLASSES, OutcomeRow, is_correct
from evalpipe.schema.requests import RequestAttempt
from evalpipe.schema.summary import (
    BenchmarkResult,
    BenchmarkSamplingSummary,
    CodeExecutionSummary,
    FailureCount,
    GenerationSummary,
    Interval,
    LengthStats,
    LengthStratumResult,
    ModelSummary,
    ReasoningLength,
    RequestAudit,
    ResponseSelection,
    SamplingSummary,
    ServerSummary,
    StratifiedEstimate,
    StratumResult,
    Throughput,
    VerifiedCheck,
)
from evalpipe.stats import STRATIFIED_METHOD, StratumData, stratified_proportion, wilson_interval

SampleKey = tuple[str, str]


def _wilson(k: int, n: int) -> Interval | None:
    ci = wilson_interval(k, n)
    return Interval(lower=ci[0], upper=ci[1], method="wilson") if ci else None


def _allocation(sampling: BenchmarkSampling) -> str:
    plan = sampling.plan
    return "per_stratum" if plan.per_stratum is not None else (plan.allocation or "unknown")


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
                length=length, n=len(es), correct=k, score=k / len(es), interval=_wilson(k, len(es))
            )
        )
    return out


def strata_results(
    entries: list[ManifestEntry], rows: dict[SampleKey, OutcomeRow]
) -> tuple[list[StratumResult], StratifiedEstimate | None]:
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


def request_audit(
    entries: list[ManifestEntry], linkage: Linkage | None, benchmark: str | None, torn: bool
) -> RequestAudit:
    if linkage is None:
        return RequestAudit(samples=len(entries), samples_with_requests=None, actual_requests=None)
    groups = list(linkage.groups.values()) if benchmark is None else linkage.groups_for_benchmark(benchmark)
    keys = {(e.benchmark, e.source_id) for e in entries}
    attempts = [a for g in groups for a in g.attempts]
    with_req = sum(1 for g in groups if g.attempts for s in g.samples if (s.benchmark, s.source_id) in keys)
    failed = sum(1 for a in attempts if not attempt_ok(a))
    unlinked = len(linkage.unlinked) if benchmark is None else None
    other = len(linkage.other) if benchmark is None else None
    if benchmark is None:  # run-wide: failures of unlinked attempts are transport failures too
        failed += sum(1 for a in linkage.unlinked if not attempt_ok(a))
    return RequestAudit(
        samples=len(entries),
        samples_with_requests=with_req,
        actual_requests=len(attempts),
        successful=sum(1 for a in attempts if attempt_ok(a)),
        duplicates=sum(g.duplicates for g in groups),
        retries=sum(g.retries for g in groups),
        retry_causes=dict(sorted(Counter(c for g in groups for c in g.retry_causes).items())),
        transport_failures=failed,
        unlinked=unlinked,
        other_requests=other,
        log_torn_tail=torn,
    )


def throughput(attempts: list[RequestAttempt], tp_size: int | None) -> Throughput | None:
    """Token rates over first attempt start → last attempt end of the benchmark's linked traffic."""
    if not attempts:
        return None
    starts = [t for a in attempts if (t := parse_time(a.started_at)) is not None]
    ends = [t for a in attempts if (t := parse_time(a.ended_at)) is not None]
    wall = (max(ends) - min(starts)).total_seconds() if starts and ends else None
    with_usage = [a for a in attempts if a.usage is not None]
    inp = sum(a.usage.prompt_tokens or 0 for a in with_usage if a.usage)
    outp = sum(a.usage.completion_tokens or 0 for a in with_usage if a.usage)
    total = sum(
        (
            a.usage.total_tokens
            if a.usage.total_tokens is not None
            else (a.usage.prompt_tokens or 0) + (a.usage.completion_tokens or 0)
        )
        for a in with_usage
        if a.usage
    )

    def rate(tokens: int) -> float | None:
        return tokens / wall if wall and wall > 0 else None

    def per_gpu(value: float | None) -> float | None:
        return value / tp_size if value is not None and tp_size else None

    ir, orate, tr = rate(inp), rate(outp), rate(total)
    return Throughput(
        attempts=len(attempts),
        attempts_with_usage=len(with_usage),
        wall_time_s=wall,
        input_tokens=inp,
        output_tokens=outp,
        total_tokens=total,
        input_tps=ir,
        output_tps=orate,
        total_tps=tr,
        tp_size=tp_size,
        input_tps_per_gpu=per_gpu(ir),
        output_tps_per_gpu=per_gpu(orate),
        total_tps_per_gpu=per_gpu(tr),
    )


def _max_tokens(inputs: RunInputs, benchmark: str, attempts: list[RequestAttempt]) -> int | None:
    cfg = inputs.config
    if cfg is not None and any(b.name == benchmark for b in cfg.benchmarks):
        return cfg.max_tokens_for(benchmark)
    seen = Counter(a.max_tokens for a in attempts if a.max_tokens is not None)
    return seen.most_common(1)[0][0] if seen else None


def _length_stats(values: list[float]) -> LengthStats | None:
    if not values:
        return None
    v = sorted(values)
    n = len(v)
    median = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    p95 = v[max(0, math.ceil(0.95 * n) - 1)]
    return LengthStats(n=n, median=median, p95=p95, max=v[-1])


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


def benchmark_results(
    inputs: RunInputs, rows: dict[SampleKey, OutcomeRow], linkage: Linkage | None
) -> list[BenchmarkResult]:
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
        spec = find(name)
        strata, stratified = strata_results(entries, rows)
        attempts = linkage.attempts_for_benchmark(name) if linkage else []
        budget = _max_tokens(inputs, name, attempts)
        subsets = list(sampling.subsets) if sampling else sorted({e.subset for e in entries})
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
                score=correct / n if n else None,
                interval=_wilson(correct, n),
                allocation_proportional=_is_proportional(sampling, entries),
                stratified=stratified,
                strata=strata,
                secondary=spec.secondary_metrics(found) if spec else [],
                by_length=length_results(name, sampling, entries, rows),
                failures=failure_counts(entries, rows),
                max_tokens=budget,
                requests=request_audit(entries, linkage, name, inputs.attempts_torn),
                throughput=throughput(attempts, tp_size) if linkage else None,
                reasoning=reasoning_length(found, budget),
                code_execution=code_execution_summary(found),
            )
        )
    return out


def code_execution_summary(found: list[OutcomeRow | None]) -> CodeExecutionSummary | None:
    from evalpipe.benchmarks.live_code_bench.recheck import policy_text

    runs = [r.code_execution for r in found if r is not None and r.code_execution is not None]
    if not runs:
        return None
    rechecked = [e for e in runs if e.mode == "isolated_recheck"]
    rows = [r for r in found if r is not None and r.code_execution is not None]
    limit = max(e.per_test_limit_s for e in runs)
    return CodeExecutionSummary(
        policy=policy_text(limit),
        per_test_limit_s=limit,
        executed=len(runs),
        rechecked=len(rechecked),
        changed_class=sum(
            1
            for r in rows
            if r.code_execution.mode == "isolated_recheck"
            and r.code_execution.review_class != r.failure_class
        ),
        passed_on_recheck=sum(
            1 for r in rows if r.code_execution.mode == "isolated_recheck" and r.failure_class == "ok"
        ),
    )


def sampling_summary(inputs: RunInputs) -> SamplingSummary:
    m = inputs.manifest
    return SamplingSummary(
        seed=m.seed,
        selection_rule=m.selection_rule,
        benchmarks=[
            BenchmarkSamplingSummary(
                benchmark=b.benchmark,
                rule=b.plan.rule_text(),
                stratify_by=b.plan.stratify_by,
                allocation=_allocation(b),
                population=b.filtered_population,
                sample_size=b.sample_size,
                strata=b.strata,
                dataset_fingerprint=b.dataset.fingerprint,
                pinned_fingerprint=b.dataset.pinned_fingerprint,
                drift_allowed=b.dataset.drift_allowed,
            )
            for b in m.benchmarks
        ],
    )


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return redact_text(value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str))


def server_summary(inputs: RunInputs) -> ServerSummary:
    from evalpipe.server.kinds.registry import server_kind

    v = inputs.verification
    if v is None:
        return ServerSummary(
            verified=None,
            description="not verified (no server verification record)",
            kind=inputs.launch.kind if inputs.launch else None,
            variant=inputs.launch.variant if inputs.launch else None,
        )
    desc = v.description.strip() or "verified from server_info (no description recorded)"
    if not v.verified and (v.resolved_config_available or server_kind(v.kind).requires_server_info):
        desc = f"NOT verified — server resolved a different config: {desc}"
    return ServerSummary(
        verified=v.verified,
        description=redact_text(desc),
        resolved_config_available=v.resolved_config_available,
        engine=v.engine,
        kind=v.kind,
        variant=v.variant,
        server_version=v.server_version,
        served_model_name=v.served_model_name,
        kv_cache_dtype=v.kv_cache_dtype,
        attention_backend=v.attention_backend,
        dsa_prefill_backend=v.dsa_prefill_backend,
        dsa_decode_backend=v.dsa_decode_backend,
        tp_size=v.tp_size,
        ep_size=v.ep_size,
        speculative_algorithm=v.speculative_algorithm,
        seed_effective=v.seed_effective,
        launch_command=_text(v.launch_command),
        checks=[
            VerifiedCheck(key=c.key, expected=_text(c.expected), resolved=_text(c.resolved), ok=c.ok)
            for c in v.checks
        ],
    )


def model_summary(inputs: RunInputs) -> ModelSummary:
    cfg = inputs.config
    if cfg is None:
        served = inputs.verification.served_model_name if inputs.verification else None
        return ModelSummary(path=None, served_name=served, thinking=None, chat_template=None)
    return ModelSummary(
        path=cfg.model.path,
        served_name=cfg.model.served_name,
        thinking=cfg.model.thinking,
        chat_template=cfg.model.chat_template,
    )


def generation_summary(inputs: RunInputs) -> GenerationSummary:
    g = inputs.config.generation if inputs.config else None
    return GenerationSummary(
        temperature=g.temperature if g else None,
        top_p=g.top_p if g else None,
        seed=g.seed if g else None,
        seed_effective=inputs.verification.seed_effective if inputs.verification else None,
    )


def response_selection(linkage: Linkage | None, violations: int, unverifiable: int) -> ResponseSelection:
    if linkage is None:
        return ResponseSelection(
            rule=SELECTION_RULE,
            samples_with_several_responses=None,
            violations=None,
            correctness_based_selection=None,
            statement="Response selection not checked: no request log.",
        )
    several = sum(len(g.samples) for g in linkage.groups.values() if len(g.successes) > len(g.samples))
    if violations:
        statement = (
            f"Response selection deviated from the declared rule for {violations} sample(s): "
            "correctness-based selection cannot be ruled out."
        )
        flag: bool | None = True
    elif unverifiable:
        statement = (
            f"No selection-rule violation found, but {unverifiable} sample(s) could not be traced "
            "to a logged response."
        )
        flag = None
    elif several:
        statement = (
            f"No correctness-based selection: {several} sample(s) had several successful responses "
            "and each used the last completed one that reached the client."
        )
        flag = False
    else:
        statement = "No correctness-based selection: every sample had a single successful response."
        flag = False
    return ResponseSelection(
        rule=SELECTION_RULE,
        samples_with_several_responses=several,
        violations=violations,
        correctness_based_selection=flag,
        statement=statement,
    )


def paired_control(inputs: RunInputs) -> str | None:
    cfg = inputs.config
    if cfg is None or len(cfg.variants) < 2:
        return None
    names = ", ".join(v.name for v in cfg.variants)
    this = (
        inputs.verification.variant
        if inputs.verification
        else (inputs.launch.variant if inputs.launch else None)
    )
    compared = _compare_lines(inputs.rundir.root.parent / "compare.json", this)
    if compared:
        return compared
    return f"variants {names} configured; this run directory is variant {this or 'unknown'}"


def _compare_lines(path: Path, variant: str | None) -> str | None:
    """The paired comparison written beside the variant directories (``evalpipe run`` with variants)."""
    if not path.is_file():
        return None
    from evalpipe.errors import EvalpipeError
    from evalpipe.io import read_model
    from evalpipe.schema.compare import CompareResult

    try:
        cmp = read_model(path, CompareResult)
    except EvalpipeError:
        return None
    if variant is not None and Path(cmp.run_a).name != variant and Path(cmp.run_b).name != variant:
        return None
    lines = [b.line for b in cmp.benchmarks]
    return "; ".join(lines) + " (compare.json)"


def limitations(inputs: RunInputs, results: list[BenchmarkResult], server: ServerSummary) -> list[str]:
    out: list[str] = []
    pc = paired_control(inputs)
    if pc is None:
        out.append(
            "No paired control ran: the accuracy effect of this server configuration relative to a reference "
            "configuration (e.g. a BF16 KV cache) is not measured by this run."
        )
    else:
        out.append(f"Paired control: {pc}; the paired difference is in the compare stage's output.")
    seed = inputs.config.generation.seed if inputs.config else None
    if server.seed_effective is True:
        out.append(
            f"The request seed ({seed}) was effective (deterministic inference): reruns should reproduce."
        )
    elif server.seed_effective is False:
        out.append(
            f"The request seed ({seed}) was not effective (deterministic inference off): a rerun can produce "
            "different responses even at temperature 0."
        )
    else:
        out.append("Whether the request seed was effective is not verified.")
    if server.verified is not True:
        out.append("The server configuration (model, KV layout, kernels) is not verified from server_info.")
    total = sum(r.scored for r in results)
    out.append(
        f"Scores come from {total} sampled records; the 95 % intervals cover sampling error only, "
        "not run-to-run variation of the server."
    )
    for r in results:
        if not r.allocation_proportional:
            out.append(
                f"{r.display_name}: the sample is not proportional to its strata, so its raw score is not a "
                "population score; use the population-weighted estimate."
            )
    return out
