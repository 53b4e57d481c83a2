"""``summary.json`` — the machine-readable audit result that release sign-off reads.

Every number here is recomputed by ``evalpipe audit`` from the run directory alone; the reports
(``report.md`` / ``report.html``) only render this model.  Rates are fractions in [0, 1].
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from evalpipe.artifacts.schema.base import Artifact, Row
from evalpipe.artifacts.schema.explorer import ExplorerRecord
from evalpipe.artifacts.schema.fleet import FleetSummary
from evalpipe.artifacts.schema.manifest import StratumAllocation
from evalpipe.artifacts.schema.metrics import Interval
from evalpipe.artifacts.schema.metrics import MetricResult as MetricResult
from evalpipe.artifacts.schema.numerics import NumericsComparison
from evalpipe.artifacts.schema.provenance import Provenance
from evalpipe.artifacts.schema.reviews import ReviewsRecord
from evalpipe.artifacts.schema.sandbox import SandboxRecord
from evalpipe.artifacts.schema.speed import LoadAverage, Schedule
from evalpipe.artifacts.schema.speed_compare import SpeedComparison
from evalpipe.artifacts.schema.timings import ServerUtilisation

Severity = Literal["error", "warn", "info"]

FindingCode = Literal[
    # artifacts
    "missing_artifact",
    "unreadable_artifact",
    "torn_log",
    "config_changed",
    # outcome ↔ manifest joins
    "missing_outcome",
    "orphan_outcome",
    "duplicate_outcome",
    "no_prediction",
    "several_predictions",
    "no_review",
    "several_reviews",
    "prompt_mismatch",
    "review_mismatch",
    "scoring_error",
    "non_binary_score",
    "outcome_inconsistent",
    "budget_exhausted",
    "budget_exhausted_in_reasoning",
    "code_runtime_error",
    # prediction ↔ request log
    "response_not_logged",
    "response_of_other_prompt",
    "response_content_mismatch",
    "selection_rule_violated",
    "duplicate_requests",
    "failed_request",
    "unlinked_request",
    "shared_prompt",
    "thinking_setting_mismatch",
    # resume, data, server
    "cache_repair",
    "dataset_drift",
    "server_not_verified",
    "fp8_kv_unscaled",
    "fp8_kv_block_scaled",
    "dsa_prefill_kernel_share",
    "secret_in_artifact",
    "replay_miss",
    "extended_run",
    # a fleet behind a router (server/fleet.json)
    "fleet_not_verified",
    "fleet_not_rechecked",
    "fleet_worker_changed",
    "router_request_field",
    "fleet_worker_health_changed",
    "fleet_worker_idle",
    "fleet_worker_failures",
    "fleet_worker_died",
    "fleet_worker_returned",
    "fleet_earlier_session",
    "router_retries",
    "router_request_field_unobservable",
    "fleet_counters_unavailable",
    "router_version_unknown",
    # the paired comparison (compare.json)
    "discordance_above_design",
    # serving speed (speed.json)
    "speed_setup",
    "speed_incomplete",
    "speed_problem",
]

FINDING_CODES: tuple[str, ...] = get_args(FindingCode)

Verdict = Literal["pass", "gate_failed", "audit_error"]


class Finding(Row):
    severity: Severity
    code: FindingCode
    benchmark: str | None = None
    sample_ids: list[str] = Field(default_factory=list, description="Manifest source ids involved.")
    attempt_ids: list[str] = Field(default_factory=list, description="requests.jsonl attempt ids involved.")
    path: str | None = Field(default=None, description="Run-directory file involved (relative).")
    message: str = Field(description="One line: what is wrong and why it matters.")


class StratifiedEstimate(Row):
    """Population-weighted (stratified) estimate from the design weights N_h / n_h."""

    estimate: float = Field(description="sum_h W_h p_h with W_h = N_h / N.")
    standard_error: float
    effective_sample_size: float = Field(description="p(1-p)/Var, capped at n (design effect >= 1).")
    interval: Interval
    method: str


class StratumResult(Row):
    stratum: str
    population: int = Field(description="N_h")
    selected: int = Field(description="n_h (manifest entries in the stratum)")
    weight: float = Field(description="N_h / n_h")
    correct: int
    score: float | None


class LengthStratumResult(Row):
    """KV-cache view: the score of the entries in one context-length bucket (unweighted, within the bucket)."""

    length: str
    n: int = Field(description="Manifest entries in the bucket (denominator).")
    correct: int
    score: float | None
    interval: Interval | None


class PlacementResult(Row):
    """A generated benchmark's items of one context length whose evidence sat at one placement (the KV-cache
    probe): how many the run answered correctly."""

    length: int
    placement: str = Field(description="dNN (depth in percent), page_before, page_after or beyond_top_k.")
    n: int
    correct: int


class FailureCount(Row):
    label: str = Field(description="failure_class, or failure_class:ExceptionType for runtime errors.")
    failure_class: str
    detail: str | None = None
    count: int
    sample_ids: list[str]


class RequestAudit(Row):
    samples: int = Field(description="Manifest entries.")
    samples_with_requests: int | None = Field(description="Entries with at least one linked attempt.")
    actual_requests: int | None = Field(description="Linked chat attempts (None: no request log).")
    successful: int | None = None
    duplicates: int | None = Field(
        default=None, description="Extra successful attempts beyond one per sample."
    )
    retries: int | None = Field(default=None, description="Attempts that followed a failed attempt.")
    retry_causes: dict[str, int] = Field(
        default_factory=dict,
        description="Retries by how the attempt before them failed, e.g. {'HTTP 500': 1}.",
    )
    transport_failures: int | None = Field(
        default=None, description="Attempts with HTTP >= 400, a transport error or no recorded response."
    )
    hidden_resends: int | None = Field(
        default=None,
        description="Attempts the proxy sent to the server twice (a reused keep-alive connection failed before "
        "any response byte; re-sent once on a fresh one): the server may have received the request twice.",
    )
    unlinked: int | None = Field(default=None, description="Chat attempts whose prompt matches no sample.")
    other_requests: int | None = Field(
        default=None, description="Attempts without chat messages (health etc.)."
    )
    log_torn_tail: bool = False
    utilisation: ServerUtilisation | None = Field(
        default=None,
        description="Run-wide only: how full the server's concurrency slots were during the evaluation.",
    )


class Throughput(Row):
    """Tokens per second of the evaluation traffic over the benchmark's wall time."""

    attempts: int
    attempts_with_usage: int
    wall_time_s: float | None = Field(description="First linked attempt start → last linked attempt end.")
    input_tokens: int
    output_tokens: int
    total_tokens: int
    input_tps: float | None
    output_tps: float | None
    total_tps: float | None
    tp_size: int | None = Field(description="Verified tensor-parallel size (GPUs); None when not verified.")
    input_tps_per_gpu: float | None
    output_tps_per_gpu: float | None
    total_tps_per_gpu: float | None


class LengthStats(Row):
    """Median / p95 / max of a length over responses (p95: nearest rank, the ceil(0.95·n)-th smallest)."""

    n: int
    median: float
    p95: float
    max: float


class ReasoningLength(Row):
    """How close the output budget came to biting: reasoning length per response, as a share of it."""

    budget: int | None = Field(description="Output-token budget (max_tokens) of the benchmark.")
    responses: int = Field(description="Samples with a response (a prediction).")
    with_reasoning: int = Field(description="Responses holding reasoning (parsed or inline <think>).")
    tokens_reported: int = Field(
        description="Responses whose reasoning-token count the server reported (never estimated)."
    )
    tokens: LengthStats | None = Field(
        description="Reported reasoning tokens, over responses with reasoning."
    )
    share_of_budget: LengthStats | None = Field(description="tokens / budget (0..1).")
    chars: LengthStats | None = Field(description="Reasoning characters, over responses with reasoning.")


class CodeExecutionSummary(Row):
    """How a code benchmark's programs were run against their tests (from ``outcomes.code_execution``)."""

    policy: str = Field(description="The execution policy, as the report states it.")
    per_test_limit_s: float
    executed: int = Field(description="Samples whose program was run against its tests.")
    rechecked: int = Field(description="Samples the review left as a timeout, re-run alone.")
    changed_class: int = Field(description="Re-checked samples whose class differs from the review's.")
    passed_on_recheck: int = Field(description="Re-checked samples that passed every test.")
    sandboxes: dict[str, int] = Field(
        default_factory=dict,
        description="Programs by the sandbox they ran in (bwrap, unshare, none; 'unrecorded' for a review "
        "made before evalpipe ran the programs in a sandbox).",
    )
    denied: dict[str, int] = Field(
        default_factory=dict,
        description="Programs by what the sandbox denied them (filesystem, network, processes, …).",
    )


class RepeatsResult(Row):
    """``generation.repeats > 1``: the score with the sample as the cluster, and the server's measured
    nondeterminism (``evalpipe.stats.repeats``)."""

    repeats: int = Field(description="Attempts asked per sample.")
    attempts: int = Field(description="Answered attempts counted (failed attempts dropped; none → one 0).")
    correct_attempts: int
    estimate: float = Field(description="Mean over samples of the per-sample means (= score).")
    standard_error: float = Field(description="Clustered standard error (Miller 2024, Appendix A).")
    effective_sample_size: float = Field(description="Kish's p(1-p)/SE², within [n, attempts].")
    samples_with_repeats: int
    responses_compared: int
    responses_differed: int = Field(description="Samples whose answers were not all byte-identical.")
    scores_differed: int = Field(description="Samples whose attempts were not all scored alike.")
    statement: str


class BenchmarkResult(Row):
    benchmark: str
    display_name: str
    subsets: list[str]
    metric: str = Field(description="Primary metric name (outcome.score).")
    correct: int
    scored: int = Field(
        description="Denominator: every manifest entry; entries without a score count as wrong."
    )
    without_score: int = Field(description="Entries with no score (API/scoring errors, missing rows).")
    budget_exhausted_scored_correct: int = Field(
        description="Budget-exhausted responses EvalScope scored correct; counted as incorrect here."
    )
    score: float | None
    interval: Interval | None
    allocation_proportional: bool
    stratified: StratifiedEstimate | None = Field(
        description="Present when the sample has several strata with unequal design weights."
    )
    strata: list[StratumResult]
    secondary: list[MetricResult] = Field(default_factory=list)
    by_length: list[LengthStratumResult] = Field(
        default_factory=list,
        description="Score by context-length bucket, shortest first (benchmarks with a length stratum only).",
    )
    by_placement: list[PlacementResult] = Field(
        default_factory=list,
        exclude_if=lambda v: not v,
        description="A generated benchmark's correct / n by context length and evidence placement, lengths "
        "ascending, placements as first met (written only for generated benchmarks).",
    )
    failures: list[FailureCount]
    max_tokens: int | None = Field(description="Output-token budget (config, else the request log).")
    requests: RequestAudit
    throughput: Throughput | None
    reasoning: ReasoningLength | None = Field(
        default=None, description="Reasoning length vs the budget; None when no response holds reasoning."
    )
    code_execution: CodeExecutionSummary | None = Field(
        default=None,
        description="Code benchmarks: how programs were executed (isolation, limits, re-checks).",
    )
    repeats: RepeatsResult | None = Field(
        default=None,
        description="generation.repeats > 1: score and interval above are the clustered mean over samples.",
    )


class BenchmarkSamplingSummary(Row):
    benchmark: str
    rule: str = Field(description="The plan's allocation rule in words.")
    stratify_by: str
    allocation: str = Field(description="per_stratum | proportional | uniform")
    population: int
    sample_size: int
    strata: list[StratumAllocation]
    dataset_fingerprint: str
    pinned_fingerprint: str | None
    drift_allowed: bool


class SamplingSummary(Row):
    seed: int
    selection_rule: str
    benchmarks: list[BenchmarkSamplingSummary]


class VerifiedCheck(Row):
    key: str
    expected: str | None
    resolved: str | None
    ok: bool


class ServerSummary(Row):
    """The server configuration as verified from server_info (redacted)."""

    verified: bool | None = Field(description="None: no verification record (e.g. attached endpoint).")
    description: str = Field(description="Human line from the verification, or 'not verified'.")
    resolved_config_available: bool | None = Field(
        default=None,
        description="False: the server has no /server_info, so its resolved config is unverifiable.",
    )
    engine: str | None = None
    kind: str | None = None
    variant: str | None = None
    server_version: str | None = None
    served_model_name: str | None = None
    kv_cache_dtype: str | None = None
    attention_backend: str | None = None
    dsa_prefill_backend: str | None = None
    dsa_decode_backend: str | None = None
    tp_size: int | None = None
    ep_size: int | None = None
    speculative_algorithm: str | None = None
    seed_effective: bool | None = None
    launch_command: str | None = None
    checks: list[VerifiedCheck] = Field(default_factory=list)


class ResponseSelection(Row):
    rule: str
    samples_with_several_responses: int | None
    violations: int | None
    correctness_based_selection: bool | None = Field(
        description="False: every used response follows the rule; True: it cannot be ruled out; None: unchecked."
    )
    statement: str


#: The release gates a config can set (``gates:``), one result each.
GateName = Literal[
    "min_score",
    "min_ci_lower",
    "max_error_findings",
    "max_transport_failures",
    "non_inferiority_margin_pts",
    "max_mde_pts",
    "min_output_throughput_ratio",
    "numerics_fail_above",
]


class GateResult(Row):
    gate: GateName
    benchmark: str | None = None
    threshold: float
    actual: float | None
    passed: bool
    message: str
    advisory: bool = Field(
        default=False, description="gates.advisory names this gate: reported, not deciding the verdict."
    )


class ModelSummary(Row):
    path: str | None
    served_name: str | None
    thinking: str | None
    chat_template: str | None


class GenerationSummary(Row):
    temperature: float | None
    top_p: float | None
    seed: int | None
    seed_effective: bool | None


class SpeedRow(Row):
    """One workload of this variant, across its rounds."""

    workload: str
    input_len: int
    output_len: int
    concurrency: int
    rounds: int
    usable_rounds: int = Field(description="Rounds that completed every request at the requested lengths.")
    requested: int = Field(description="Measured requests per round.")
    completed: list[int] = Field(description="Completed requests, round by round.")
    output_throughput_rounds: list[float | None] = Field(description="tok/s, round by round.")
    output_throughput: float | None = Field(description="Median across rounds, tok/s.")
    output_throughput_min: float | None
    output_throughput_max: float | None
    input_throughput: float | None = Field(description="Median across rounds, prompt tok/s.")
    ttft_p50_ms: float | None
    ttft_p99_ms: float | None
    itl_p50_ms: float | None
    itl_p99_ms: float | None
    e2e_p50_ms: float | None


class SpeedSummary(Row):
    variant: str
    client: str
    client_version: str
    percentile_method: str | None
    schedule: Schedule
    rounds: int = Field(description="Rounds per workload the config asked for.")
    load_before: LoadAverage | None
    load_after: LoadAverage | None
    rows: list[SpeedRow]
    lead_workload: str | None = Field(
        description="The workload whose input throughput fills the results table's speed-benchmark columns "
        "(the config's first)."
    )
    comparison: SpeedComparison | None = Field(
        default=None, description="speed_compare.json of the paired variants, when there is one."
    )


class Summary(Artifact):
    schema_version: int = 7  # 2: explorer, reviews, speed_not_measured, fleet watch events; 3: speed.lead_workload;
    # 4: the finding fp8_kv_unscaled; 5: the finding discordance_above_design; 6: the findings
    # fp8_kv_block_scaled and dsa_prefill_kernel_share; 7: numerics
    run_id: str
    audited_at: str = Field(description="UTC ISO-8601")
    evalpipe_version: str
    config_name: str | None
    config_sha256: str | None = Field(description="sha256 of the run directory's config.yaml bytes.")
    model: ModelSummary
    generation: GenerationSummary
    server: ServerSummary
    fleet: FleetSummary | None = Field(
        default=None, description="The workers behind SGLang's router (server/fleet.json); None: one server."
    )
    provenance: Provenance | None
    sampling: SamplingSummary
    sampled_ids_csv: str | None = Field(description="Path of sampled_ids.csv relative to the run directory.")
    benchmarks: list[BenchmarkResult]
    code_sandbox: SandboxRecord | None = Field(
        default=None,
        description="The sandbox model-written code ran in (code_sandbox.json); None when no benchmark of "
        "the run executes code.",
    )
    requests: RequestAudit
    response_selection: ResponseSelection
    paired_control: str | None = Field(description="What paired control ran, or None.")
    limitations: list[str]
    findings: list[Finding]
    finding_counts: dict[Severity, int]
    gates: list[GateResult]
    verdict: Verdict
    exit_code: int
    speed: SpeedSummary | None = Field(
        default=None,
        description="Serving benchmark of this variant (speed.json) and the paired speed comparison.",
    )
    explorer: ExplorerRecord | None = Field(
        default=None, description="explorer.html beside the report: every sample, what was truncated."
    )
    reviews: ReviewsRecord | None = Field(
        default=None,
        description="A reviewer's verdicts on the flips (reviews.json, from evalpipe audit --reviews); they "
        "change no score and no gate.",
    )
    speed_not_measured: str | None = Field(
        default=None,
        description="Why serving speed was not measured, when the run said so (run.json no_speed: "
        "'serving speed not measured (--no-speed)').",
    )
    numerics: NumericsComparison | None = Field(
        default=None,
        description="The numerics block of the comparison this variant is an arm of (compare.json), without its "
        "per-prompt pairs (they stay in compare.json): the groups, their tests and the gate.",
    )
