"""One function per audit check; each returns findings (and never recomputes a score).

Severity policy: *error* = a number in the summary cannot be trusted as stated (a sample not
evaluated exactly once, a prompt or response that is not the sample's, a response chosen against
the declared rule, a scoring crash, a leaked secret); *warn* = the numbers stand but sign-off should
know (duplicates, failed attempts, repairs at resume, allowed dataset drift, unverified server);
*info* = context.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from evalpipe.artifacts import RunDir, read_jsonl, read_model
from evalpipe.artifacts.schema.compare import CompareResult
from evalpipe.artifacts.schema.manifest import Manifest, ManifestEntry
from evalpipe.artifacts.schema.outcomes import BUDGET_CLASSES, CacheRepair, OutcomeRow
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.artifacts.schema.run import ExtensionRecord
from evalpipe.artifacts.schema.server import ServerVerification
from evalpipe.artifacts.schema.summary import Finding, FindingCode, Severity
from evalpipe.audit.inputs import RunInputs
from evalpipe.audit.linkage import Linkage, PromptGroup, attempt_failure, attempt_ok
from evalpipe.audit.secret_scan import scan_paths
from evalpipe.errors import ConfigError
from evalpipe.server.chat_template import THINKING_TOGGLE, thinking_kwargs
from evalpipe.server.kinds.registry import server_kind
from evalpipe.server.verify import unverifiable_text
from evalpipe.words.compare import design_check_sentence

#: Run-directory files as findings name them (relative to the run directory).
_VERIFICATION = str(RunDir(Path(".")).server_verification)
_REQUESTS = str(RunDir(Path(".")).requests_log)

SampleKey = tuple[str, str]
_MAX_IDS = 50  # ids listed in one finding; the message carries the full count


def _ids(values: Iterable[str]) -> list[str]:
    return sorted(set(values))[:_MAX_IDS]


def join_outcomes(
    manifest: Manifest, outcomes: list[OutcomeRow]
) -> tuple[dict[SampleKey, OutcomeRow], list[Finding]]:
    """Key outcome rows by manifest entry; rows missing, unknown or repeated are findings."""
    findings: list[Finding] = []
    entries: dict[SampleKey, ManifestEntry] = {(e.benchmark, e.source_id): e for e in manifest.entries}
    rows: dict[SampleKey, OutcomeRow] = {}
    repeated: dict[SampleKey, int] = {}
    orphans: dict[str, list[str]] = {}
    for row in outcomes:
        key = (row.benchmark, row.source_id)
        if key not in entries:
            orphans.setdefault(row.benchmark, []).append(row.source_id)
            continue
        if key in rows:
            repeated[key] = repeated.get(key, 1) + 1
            continue
        rows[key] = row
    for bench, ids in sorted(orphans.items()):
        findings.append(
            Finding(
                severity="error",
                code="orphan_outcome",
                benchmark=bench,
                sample_ids=_ids(ids),
                message=f"{len(ids)} outcome row(s) for samples not in the manifest",
            )
        )
    for (bench, sid), n in sorted(repeated.items()):
        findings.append(
            Finding(
                severity="error",
                code="duplicate_outcome",
                benchmark=bench,
                sample_ids=[sid],
                message=f"{n} outcome rows for one manifest entry; the first was used",
            )
        )
    for key, entry in entries.items():
        if key not in rows:
            findings.append(
                Finding(
                    severity="error",
                    code="missing_outcome",
                    benchmark=entry.benchmark,
                    sample_ids=[entry.source_id],
                    message="manifest entry has no outcome row: it was not evaluated (counted as incorrect)",
                )
            )
        elif rows[key].stratum != entry.stratum or rows[key].subset != entry.subset:
            findings.append(
                Finding(
                    severity="error",
                    code="outcome_inconsistent",
                    benchmark=entry.benchmark,
                    sample_ids=[entry.source_id],
                    message=(
                        f"outcome says subset/stratum {rows[key].subset}/{rows[key].stratum}, "
                        f"manifest says {entry.subset}/{entry.stratum}"
                    ),
                )
            )
    return rows, findings


#: One finding of a row before it is placed: severity, code, message.
_Said = tuple[Severity, FindingCode, str]


def check_outcome_row(row: OutcomeRow) -> list[Finding]:
    """Prediction/review multiplicity, prompt identity, review consistency, scoring sanity."""
    said = [*_multiplicity(row), *_identity(row), *_model_side(row), *_score_sanity(row)]
    return [
        Finding(severity=severity, code=code, benchmark=row.benchmark, sample_ids=[row.source_id], message=message)
        for severity, code, message in said
    ]


def _multiplicity(row: OutcomeRow) -> list[_Said]:
    """One prediction and one review per entry.  A sample left without a response after all its attempts
    (retries included) is an error: its score says nothing about the model.  Failed attempts that a retry
    recovered are warnings (failed_request), governed by the transport-failure gate.  Without any reason the
    sample was silently not evaluated."""
    out: list[_Said] = []
    api = row.failure_class == "api_error"
    dropped = row.failure_class == "context_overflow"  # consented drop, listed in context_fit.json
    if row.n_predictions == 0:
        if dropped:
            why = f"the prompt does not fit the context ({row.failure_detail})"
        elif api:
            why = f"the request failed ({row.api_error or row.failure_detail or 'API error'}) and no attempt succeeded"
        else:
            why = "no error recorded"
        out.append(
            ("warn" if dropped else "error", "no_prediction", f"no prediction for this entry: {why}; counted as incorrect")
        )
    elif row.n_predictions > 1:
        out.append(("error", "several_predictions", f"{row.n_predictions} predictions for one entry"))
    if row.n_predictions > 0:
        if row.n_reviews == 0:
            out.append((
                "warn" if api else "error",
                "no_review",
                "prediction was never reviewed (scored)"
                + (f" after an API error ({row.api_error or row.failure_detail})" if api else "")
                + "; counted as incorrect",
            ))  # fmt: skip
        elif row.n_reviews > 1:
            out.append(("error", "several_reviews", f"{row.n_reviews} reviews for one entry"))
    return out


def _identity(row: OutcomeRow) -> list[_Said]:
    """The prediction was asked this entry's prompt, the review scores that prediction, the scorer ran."""
    out: list[_Said] = []
    if row.prediction_present:
        if (
            row.prompt_sha256 is not None
            and row.expected_prompt_sha256 is not None
            and row.prompt_sha256 != row.expected_prompt_sha256
        ):
            out.append(
                ("error", "prompt_mismatch", "prediction's prompt hash differs from the one rendered for this entry")
            )
        elif row.prompt_contains_question is False:
            out.append(("error", "prompt_mismatch", "prediction's prompt does not contain this entry's question"))
    if row.review_matches_prediction is False:
        out.append(("error", "review_mismatch", "review's messages/output differ from the prediction it scores"))
    if row.failure_class == "scoring_error":
        out.append(
            ("error", "scoring_error", f"scorer failed: {row.failure_detail or 'no detail'}; counted as incorrect")
        )
    return out


def _model_side(row: OutcomeRow) -> list[_Said]:
    """Model-side failures, not pipeline faults: listed (info) so each one is traceable to its sample."""
    if row.failure_class == "budget_exhausted_in_reasoning":
        spent = (
            f"{row.reasoning_tokens} reasoning tokens"
            if row.reasoning_tokens is not None
            else f"{row.reasoning_chars} reasoning characters (tokens not reported)"
        )
        return [(
            "info",
            "budget_exhausted_in_reasoning",
            f"response exhausted its output budget while still thinking ({spent}, stop reason "
            f"{row.stop_reason or 'length'}) without a final answer; counted as incorrect",
        )]  # fmt: skip
    if row.failure_class == "budget_exhausted":
        return [(
            "info",
            "budget_exhausted",
            f"response hit its output budget (stop reason {row.stop_reason or 'length'}) while writing its "
            "answer, which is truncated; counted as incorrect",
        )]  # fmt: skip
    if row.failure_class == "code_runtime_error":
        return [("info", "code_runtime_error", f"generated code raised {row.failure_detail or 'an exception'}")]
    return []


def _score_sanity(row: OutcomeRow) -> list[_Said]:
    """A 0/1 primary score that agrees with the failure class."""
    out: list[_Said] = []
    if row.score is not None and row.score not in (0.0, 1.0):
        out.append(("error", "non_binary_score", f"primary score {row.score} is not 0/1"))
    if row.failure_class == "ok" and row.score != 1.0:
        out.append(("error", "outcome_inconsistent", f"failure class 'ok' with score {row.score}"))
    elif row.failure_class == "wrong" and row.score != 0.0:
        out.append(("error", "outcome_inconsistent", f"failure class 'wrong' with score {row.score}"))
    elif row.failure_class != "ok" and row.failure_class not in BUDGET_CLASSES and row.score == 1.0:
        out.append(("error", "outcome_inconsistent", f"failure class {row.failure_class!r} with score 1"))
    return out


def _used_responses(row: OutcomeRow) -> list[tuple[str | None, str | None, str]]:
    """``(response_id, response_sha256, failure_class)`` of every response the sample used: one, or one per
    answered attempt with ``generation.repeats``."""
    if not row.attempts:
        return [(row.response_id, row.response_sha256, row.failure_class)]
    return [
        (a.response_id, a.response_sha256, a.failure_class)
        for a in row.attempts
        if a.failure_class != "missing_prediction"
    ]


def check_requests(rows: dict[SampleKey, OutcomeRow], linkage: Linkage) -> tuple[list[Finding], int, int]:
    """Response ids against the request log, the selection rule, duplicates, failures, unlinked.

    Returns (findings, selection-rule violations, samples whose response could not be checked).
    """
    findings: list[Finding] = []
    violations = 0
    unverifiable = 0
    for row in rows.values():
        if not row.prediction_present and not row.attempts:
            continue
        checked = _responses_used(row, linkage)
        findings += checked.findings
        violations += checked.violations
        unverifiable += checked.unverifiable
    for group in linkage.groups.values():
        findings += _group_findings(group)
    if linkage.unlinked:
        findings.append(
            Finding(
                severity="warn",
                code="unlinked_request",
                attempt_ids=_ids(a.attempt_id for a in linkage.unlinked),
                message=f"{len(linkage.unlinked)} chat request(s) whose prompt matches no sample in the manifest",
            )
        )
    return findings, violations, unverifiable


@dataclass
class _Checked:
    """One sample's responses checked against the request log: the findings, the selection-rule violations
    and the responses that could not be checked."""

    findings: list[Finding] = field(default_factory=list)
    violations: int = 0
    unverifiable: int = 0


def _responses_used(row: OutcomeRow, linkage: Linkage) -> _Checked:
    """Each response the sample used: logged, asked with this sample's prompt, the logged text, and the
    attempt the selection rule names (the last completed successful one)."""
    out = _Checked()
    group = linkage.group_of.get((row.benchmark, row.source_id))

    def add(code: FindingCode, message: str, attempts: list[str]) -> None:
        out.findings.append(
            Finding(severity="error", code=code, benchmark=row.benchmark, sample_ids=[row.source_id],
                    attempt_ids=attempts, message=message)
        )  # fmt: skip

    for used_id, used_sha, used_class in _used_responses(row):
        if used_id is None and used_class == "api_error":
            continue  # no response came back: failed_request / no_prediction tell the story
        if used_id is None:
            add("response_not_logged", "prediction carries no response id: it cannot be traced to a request", [])
            out.unverifiable += 1
            continue
        attempt = linkage.by_id.get(used_id)
        if attempt is None:
            add("response_not_logged", f"response id {used_id} is not in the request log", [])
            out.unverifiable += 1
            continue
        if group is None or attempt.messages_sha256 != group.prompt_sha256:
            add(
                "response_of_other_prompt",
                f"response {attempt.attempt_id} was requested with another prompt than this sample's",
                [attempt.attempt_id],
            )
            out.unverifiable += 1
            continue
        if used_sha and attempt.response_sha256 and used_sha != attempt.response_sha256:
            add(
                "response_content_mismatch",
                f"prediction text differs from the response logged for {attempt.attempt_id}",
                [attempt.attempt_id],
            )
        if not attempt_ok(attempt):
            out.violations += 1
            add(
                "selection_rule_violated",
                f"used response {attempt.attempt_id} is a failed attempt ({attempt_failure(attempt)})",
                [attempt.attempt_id],
            )
        elif attempt.attempt_id not in group.expected_ids():
            out.violations += 1
            last = [a.attempt_id for a in group.successes[-group.responses_wanted :]]
            add(
                "selection_rule_violated",
                f"used response {attempt.attempt_id}, but the last completed successful attempt is "
                f"{', '.join(last)}: the choice may have been correctness-based",
                [attempt.attempt_id, *last],
            )
    return out


def _group_findings(group: PromptGroup) -> list[Finding]:
    """One prompt's attempts: shared by several samples, duplicate requests, failed attempts."""
    findings: list[Finding] = []
    ids = [s.source_id for s in group.samples]
    bench = group.benchmark
    if len(group.samples) > 1:
        findings.append(
            Finding(
                severity="info",
                code="shared_prompt",
                benchmark=bench,
                sample_ids=_ids(ids),
                message=f"{len(group.samples)} samples share one prompt; their attempts are judged together",
            )
        )
    if group.duplicates:
        succ = [a.attempt_id for a in group.successes]
        findings.append(
            Finding(
                severity="warn",
                code="duplicate_requests",
                benchmark=bench,
                sample_ids=_ids(ids),
                attempt_ids=succ,
                message=f"{len(succ)} successful attempts for {len(group.samples)} sample(s) "
                f"({group.duplicates} duplicate request(s)"
                + (f", {group.reasked} re-asked with the seed of an earlier attempt" if group.reasked else "")
                + ")",
            )
        )
    fails = group.failures
    if fails:
        kinds = ", ".join(sorted({attempt_failure(a) for a in fails}))
        recovered = "a later attempt succeeded" if group.successes else "no attempt succeeded"
        findings.append(
            Finding(
                severity="warn",
                code="failed_request",
                benchmark=bench,
                sample_ids=_ids(ids),
                attempt_ids=[a.attempt_id for a in fails],
                message=f"{len(fails)} failed attempt(s) ({kinds}); {group.retries} retried; {recovered}",
            )
        )
    return findings


def check_cache_repairs(repairs: list[CacheRepair]) -> list[Finding]:
    return [
        Finding(
            severity="warn",
            code="cache_repair",
            benchmark=r.benchmark,
            sample_ids=[r.expected_source_id],
            message=(
                f"resume discarded a cached {r.artifact} at {r.subset}[{r.index}] ({r.reason}); "
                "the sample was re-evaluated"
            ),
        )
        for r in repairs
    ]


def check_dataset_drift(manifest: Manifest) -> list[Finding]:
    out = []
    for b in manifest.benchmarks:
        d = b.dataset
        if d.drift_allowed:
            out.append(
                Finding(
                    severity="warn",
                    code="dataset_drift",
                    benchmark=b.benchmark,
                    message=(
                        f"dataset fingerprint {d.fingerprint[:12]} differs from the pinned "
                        f"{(d.pinned_fingerprint or '?')[:12]}; the run allowed drift"
                    ),
                )
            )
        elif d.pinned_fingerprint and d.pinned_fingerprint != d.fingerprint:
            out.append(
                Finding(
                    severity="error",
                    code="dataset_drift",
                    benchmark=b.benchmark,
                    message=(
                        f"dataset fingerprint {d.fingerprint[:12]} differs from the pinned "
                        f"{d.pinned_fingerprint[:12]} and drift was not allowed"
                    ),
                )
            )
    return out


def check_fp8_scales(verification: ServerVerification | None) -> list[Finding]:
    """What SGLang's "no scaling factors provided ... 1.0" line means for the pool that ran, worded per row
    layout.  It concerns per-tensor k/v scales (``--quantization-param-path``): over a pool whose rows carry
    their own per-block scales (a DSA server's scaled FP8 row) it is an info, not a warning; over a raw FP8 row,
    or a pool whose layout was not stated, every K/V value was cast to FP8 at scale 1.0."""
    kv = verification.kv_cache if verification is not None else None
    if kv is None or kv.fp8_scales != "default_1.0":
        return []
    sparse = verification.sparse_attention if verification is not None else None
    quoted = f'(the server\'s log: "{kv.fp8_scales_evidence}")'
    if sparse is not None and sparse.kv_layout == "scaled":
        return [
            Finding(
                severity="info",
                code="fp8_kv_block_scaled",
                path=_VERIFICATION,
                message=f"the {kv.storage_dtype} KV pool stores per-block scales in every row (scaled FP8, "
                f"{sparse.kv_bytes_per_token_layer:g} B per token per layer); no per-tensor k/v scales were "
                f"loaded {quoted}, which this layout does not use",
            )
        ]
    row = "raw FP8 rows without scales" if sparse is not None and sparse.kv_layout == "raw" else "the pool"
    return [
        Finding(
            severity="warn",
            code="fp8_kv_unscaled",
            path=_VERIFICATION,
            message=f"the {kv.storage_dtype} KV cache ran with scaling factors 1.0 — no scales were loaded "
            f"{quoted}; {row}: its accuracy is that of unscaled FP8 KV",
        )
    ]


def check_dsa_prefill_share(
    verification: ServerVerification | None, attempts: list[RequestAttempt] | None
) -> list[Finding]:
    """Which share of the run's prefills reached the DSA prefill kernel the server named: a prefill whose KV
    length (the prompt's tokens, as the server counted them in its usage) is at most the dense-prefill
    threshold runs dense attention instead (SGLang on SM90/SM100).  Info when every prefill reached it, a
    warning when not all did; nothing for a server off the DSA path or without a stated threshold."""
    sparse = verification.sparse_attention if verification is not None else None
    if sparse is None or sparse.dense_prefill_threshold is None or not attempts:
        return []
    lengths = [
        a.usage.prompt_tokens for a in attempts if a.usage is not None and a.usage.prompt_tokens is not None
    ]
    if not lengths:
        return []
    threshold = sparse.dense_prefill_threshold
    reached = sum(1 for n in lengths if n > threshold)
    kernel = (
        server_kind(verification.kind).kernel_label(sparse.prefill_kernel)
        if verification is not None and sparse.prefill_kernel
        else "the DSA kernel"
    )
    head = f"{kernel} prefill on {reached} of {len(lengths)} prefills"
    why = (
        f"(prompt lengths from the recorded usage against the dense-prefill threshold {threshold:,}, "
        f"{sparse.dense_prefill_threshold_source}; a prefill of at most {threshold:,} KV tokens runs dense "
        "attention instead)"
    )
    if reached == len(lengths):
        return [Finding(severity="info", code="dsa_prefill_kernel_share", path=_VERIFICATION,
                        message=f"{head} {why}")]  # fmt: skip
    return [
        Finding(
            severity="warn",
            code="dsa_prefill_kernel_share",
            path=_VERIFICATION,
            message=f"{head}: {len(lengths) - reached} ran dense attention, not {kernel} {why}",
        )
    ]


def check_server(verification: ServerVerification | None, present: bool) -> list[Finding]:
    if verification is None:
        if present:
            return []  # unreadable: already an unreadable_artifact finding
        return [
            Finding(
                severity="warn",
                code="server_not_verified",
                path=_VERIFICATION,
                message="no server verification (e.g. attached endpoint without server_info): "
                "model, KV layout and kernels are not verified",
            )
        ]
    if verification.verified:
        return []
    bad = [c for c in verification.checks if not c.ok]

    if not verification.resolved_config_available and not server_kind(verification.kind).requires_server_info:
        mismatch = "; ".join(f"{c.key}: expected {c.expected!r}, resolved {c.resolved!r}" for c in bad)
        return [
            Finding(
                severity="warn",
                code="server_not_verified",
                path=_VERIFICATION,
                message=unverifiable_text(verification) + (f"; MISMATCH {mismatch}" if mismatch else ""),
            )
        ]
    detail = "; ".join(f"{c.key}: expected {c.expected!r}, resolved {c.resolved!r}" for c in bad[:5])
    return [
        Finding(
            severity="warn",
            code="server_not_verified",
            path=_VERIFICATION,
            message=f"server resolved a different config than requested ({detail or 'see checks'})",
        )
    ]


def check_thinking_setting(inputs: RunInputs) -> list[Finding]:
    """Every recorded chat request carried the thinking setting the config asked for: the reasoning
    parser's toggle with the configured value, or (``thinking: model_default``) no toggle at all."""
    if inputs.config is None or inputs.attempts is None:
        return []
    try:
        expected = thinking_kwargs(inputs.config)
    except ConfigError:
        return []  # such a config never runs (check_generation refuses it)
    toggles = set(THINKING_TOGGLE.values())
    bad: list[str] = []
    for a in inputs.attempts:
        if a.method != "POST" or not a.path.rstrip("/").endswith("chat/completions"):
            continue
        sent = {k: v for k, v in (a.chat_template_kwargs or {}).items() if k in toggles}
        if sent != (expected or {}):
            bad.append(a.attempt_id)
    if not bad:
        return []
    want = f"chat_template_kwargs {expected}" if expected else "no thinking toggle (thinking: model_default)"
    return [
        Finding(
            severity="error",
            code="thinking_setting_mismatch",
            attempt_ids=_ids(bad),
            path=_REQUESTS,
            message=f"{len(bad)} request(s) did not carry the thinking setting the config asks for ({want}): "
            "their answers are not from the configured reasoning mode",
        )
    ]


def check_secrets(inputs: RunInputs) -> list[Finding]:
    rd = inputs.rundir
    hits = scan_paths(rd.root, [rd.server_dir, rd.provenance, rd.config_copy, rd.run_record])
    return [
        Finding(
            severity="error",
            code="secret_in_artifact",
            path=h.path,
            message=f"{h.kind} at {h.where} (value not shown): credentials must never be saved in a run directory",
        )
        for h in hits
    ]


def check_config_identity(inputs: RunInputs) -> list[Finding]:
    rec = inputs.run_record
    if rec is None or inputs.config_sha256 is None or rec.config_sha256 == inputs.config_sha256:
        return []
    return [
        Finding(
            severity="error",
            code="config_changed",
            path="config.yaml",
            message="config.yaml differs from the config the run started with (run.json config_sha256)",
        )
    ]


def check_replay_misses(rd: RunDir) -> list[Finding]:
    """``evalpipe replay``: every request the recorded log had no answer for is an error."""
    if not rd.replay_misses.is_file():
        return []

    misses = read_jsonl(rd.replay_misses)
    if not misses:
        return []
    hashes = sorted({str(m.get("messages_sha256", ""))[:16] for m in misses})
    return [
        Finding(
            severity="error",
            code="replay_miss",
            path=rd.replay_misses.name,
            message=f"{len(misses)} replayed request(s) had no recorded response (prompts {', '.join(hashes)})",
        )
    ]


def check_extension(rd: RunDir) -> list[Finding]:
    """``evalpipe run --extend``: say which run this one grew from and what it reused (info)."""
    if not rd.extension.is_file():
        return []

    ext = read_model(rd.extension, ExtensionRecord)
    return [Finding(severity="info", code="extended_run", path=rd.extension.name, message=ext.statement)]


def check_design(comparison: CompareResult | None) -> list[Finding]:
    """A warning per paired block whose measured discordance lies wholly above what its design assumed
    (compare.json's ``design_check``): the gate passes a good release less often than the plan said.  The
    message names both values and the operating characteristic at the measured one."""
    if comparison is None:
        return []
    out = []
    for block in [*comparison.benchmarks, *comparison.pools]:
        check = block.design_check
        if check is None or not check.exceeds:
            continue
        out.append(
            Finding(
                severity="warn",
                code="discordance_above_design",
                benchmark=block.benchmark,
                message=f"{block.benchmark} (compare.json): {design_check_sentence(check, block.operating)}",
            )
        )
    return out
