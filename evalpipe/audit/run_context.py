"""What the scores are a measurement of: the sampling design, model, generation settings and server as
verified, the paired control (if any), and the limitations the report must state.

Everything here comes from the run directory, except a paired comparison, which lives beside the variant
directories and is handed in by the caller (``evalpipe run`` with variants, or ``evalpipe audit``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalpipe.artifacts.redact import redact_text
from evalpipe.artifacts.schema.compare import CompareResult
from evalpipe.artifacts.schema.manifest import BenchmarkSampling
from evalpipe.artifacts.schema.summary import (
    BenchmarkResult,
    BenchmarkSamplingSummary,
    GenerationSummary,
    ModelSummary,
    SamplingSummary,
    ServerSummary,
    VerifiedCheck,
)
from evalpipe.audit.inputs import RunInputs
from evalpipe.server.kinds.registry import server_kind
from evalpipe.words.compare import (
    design_check_sentence,
    dropped_sentence,
    paired_line,
    power_sentences,
    scoring_sentence,
)
from evalpipe.words.sentences import operating_sentence, sequential_design_line


def _allocation(sampling: BenchmarkSampling) -> str:
    plan = sampling.plan
    return "per_stratum" if plan.per_stratum is not None else (plan.allocation or "unknown")


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


def _redacted_text(value: Any) -> str | None:
    if value is None:
        return None
    return redact_text(value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str))


def server_summary(inputs: RunInputs) -> ServerSummary:
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
        launch_command=_redacted_text(v.launch_command),
        checks=[
            VerifiedCheck(
                key=c.key, expected=_redacted_text(c.expected), resolved=_redacted_text(c.resolved), ok=c.ok
            )
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


def this_variant(inputs: RunInputs) -> str | None:
    """The variant this run directory ran (from its server verification or launch record)."""
    if inputs.verification:
        return inputs.verification.variant
    return inputs.launch.variant if inputs.launch else None


def under_test(inputs: RunInputs) -> bool:
    """This run is the one a paired gate judges: the first variant, or a run without variants."""
    cfg = inputs.config
    if cfg is None or not cfg.variants:
        return True
    return this_variant(inputs) in (None, cfg.variants[0].name)


def paired_control(inputs: RunInputs, comparison: CompareResult | None) -> str | None:
    """What paired control ran: None without variants; the comparison's lines when ``comparison`` covers
    this variant; else which variants are configured."""
    cfg = inputs.config
    if cfg is None or len(cfg.variants) < 2:
        return None
    names = ", ".join(v.name for v in cfg.variants)
    this = (
        inputs.verification.variant
        if inputs.verification
        else (inputs.launch.variant if inputs.launch else None)
    )
    if comparison is not None and (
        this is None or this in (Path(comparison.run_a).name, Path(comparison.run_b).name)
    ):
        lines = (paired_line(b, comparison.label_a, comparison.label_b) for b in comparison.benchmarks)
        return "; ".join(lines) + " (compare.json)"
    return f"variants {names} configured; this run directory is variant {this or 'unknown'}"


def power_limitations(inputs: RunInputs, comparison: CompareResult | None) -> list[str]:
    """What the paired comparison could see (compare.json's MDE, noise and non-inferiority sentences),
    for the variants it compares; nothing is recomputed."""
    if comparison is None or inputs.config is None or len(inputs.config.variants) < 2:
        return []
    this = this_variant(inputs)
    if this is not None and this not in (Path(comparison.run_a).name, Path(comparison.run_b).name):
        return []
    out: list[str] = []
    for b in [
        *comparison.benchmarks,
        *comparison.pools,
        *([comparison.overall] if comparison.overall else []),
    ]:
        said = power_sentences(b)
        if said:
            out.append(f"Power ({b.benchmark}): " + "; ".join(said) + ".")
        if b.sequential is not None:
            out.append(f"Sequential ({b.benchmark}): {sequential_design_line(b.sequential, b.members)}.")
        dropped = dropped_sentence(b)
        if dropped:
            out.append(f"Dropped ({b.benchmark}): {dropped}.")
        if b.operating is not None:
            out.append(f"Operating characteristic ({b.benchmark}): {operating_sentence(b.operating)}.")
        if b.design_check is not None:
            out.append(
                f"Measured beside designed ({b.benchmark}): {design_check_sentence(b.design_check, b.operating)}."
            )
    scoring = scoring_sentence(comparison)
    if out and scoring:
        out.insert(0, f"Paired scoring: {scoring}.")
    return out


def limitations(
    inputs: RunInputs, results: list[BenchmarkResult], server: ServerSummary, paired: str | None
) -> list[str]:
    """What the sign-off does not establish; ``paired`` is ``paired_control``'s text."""
    out: list[str] = []
    if paired is None:
        out.append(
            "No paired control ran: the accuracy effect of this server configuration relative to a reference "
            "configuration (e.g. a BF16 KV cache) is not measured by this run."
        )
    else:
        out.append(f"Paired control: {paired}; the paired difference is in the compare stage's output.")
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
    for bench, (gone, planned) in inputs.not_sent.items():
        out.append(
            f"{bench}: the sequential rule stopped sending after {planned - gone} of {planned} planned samples "
            f"(generation.sequential, sequential_stop.json): {gone} were never sent, and this run's scores are "
            "over the samples sent, the leading samples of the seeded sequence order."
        )
    if inputs.pilot is not None:
        out.append(
            f"{inputs.pilot.statement[0].upper()}{inputs.pilot.statement[1:]} (generation.sequential.pilot, "
            "pilot.json): the pilot's samples were asked once (its first ones twice, to measure how far attempts "
            "of one sample agree), the others as many times as it chose, each scored by the mean of its attempts."
        )
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
