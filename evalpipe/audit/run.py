"""``build_summary``: recompute the whole sign-off from a run directory.

``evalpipe.run.audit.audit_run`` (behind ``evalpipe audit`` and the last stage of ``evalpipe run``) calls it and
writes the summary, the reports and the explorer; this module renders nothing.  It reads only the run
directory (never a live server, never a neighbouring directory) and returns the ``Summary``.
A paired comparison of variants lives beside the variant directories, so the caller hands it in.
Exit codes are decided by ``evalpipe.audit.gates.raise_for_verdict``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import get_args

from evalpipe import __version__
from evalpipe.artifacts import read_model
from evalpipe.artifacts.schema.compare import CompareResult
from evalpipe.artifacts.schema.fleet import FleetRecord
from evalpipe.artifacts.schema.numerics import NumericsComparison
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.sandbox import SandboxRecord
from evalpipe.artifacts.schema.speed import SpeedArtifact
from evalpipe.artifacts.schema.speed_compare import SpeedComparison
from evalpipe.artifacts.schema.summary import FINDING_CODES, Finding, Severity, Summary
from evalpipe.audit import checks
from evalpipe.audit.fleet import check_fleet, fleet_limitations, fleet_summary, load_fleet
from evalpipe.audit.gates import decide, evaluate_gates, mark_advisory, numerics_gates, paired_gates
from evalpipe.audit.inputs import RunInputs, load_inputs
from evalpipe.audit.linkage import Linkage, link
from evalpipe.audit.request_metrics import request_audit, response_selection
from evalpipe.audit.reviews import reviews_record
from evalpipe.audit.run_context import (
    generation_summary,
    limitations,
    model_summary,
    paired_control,
    power_limitations,
    sampling_summary,
    server_summary,
    this_variant,
    under_test,
)
from evalpipe.audit.scores import benchmark_results
from evalpipe.audit.speed import speed_findings, speed_gates, speed_not_measured, speed_summary
from evalpipe.audit.utilisation import server_utilisation
from evalpipe.config.models import GateConfig

_SEVERITY_ORDER = {"error": 0, "warn": 1, "info": 2}


def _sort_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(
        findings,
        key=lambda f: (
            _SEVERITY_ORDER[f.severity],
            FINDING_CODES.index(f.code),
            f.benchmark or "",
            f.sample_ids,
            f.attempt_ids,
            f.path or "",
        ),
    )


@dataclass(frozen=True)
class _Checked:
    """Every check's findings, sorted, and what the summary reads of the checks besides them."""

    findings: list[Finding]
    fleet: FleetRecord | None
    violations: int
    unverifiable: int
    speed: SpeedArtifact | None


def _checks(
    inputs: RunInputs,
    rows: dict[tuple[str, str], OutcomeRow],
    linkage: Linkage | None,
    comparison: CompareResult | None,
    join_findings: list[Finding],
) -> _Checked:
    """Run every check of the run directory in order (each a function of ``audit.checks`` or its own module)."""
    findings = list(inputs.findings) + join_findings
    for row in rows.values():
        findings += checks.check_outcome_row(row)
    violations = unverifiable = 0
    if linkage is not None:
        req_findings, violations, unverifiable = checks.check_requests(rows, linkage)
        findings += req_findings
    findings += checks.check_cache_repairs(inputs.cache_repairs)
    findings += checks.check_dataset_drift(inputs.manifest)
    findings += checks.check_server(inputs.verification, inputs.rundir.server_verification.is_file())
    findings += checks.check_fp8_scales(inputs.verification)
    findings += checks.check_dsa_prefill_share(inputs.verification, inputs.attempts)
    findings += checks.check_thinking_setting(inputs)
    findings += checks.check_secrets(inputs)
    findings += checks.check_config_identity(inputs)
    findings += checks.check_replay_misses(inputs.rundir)
    findings += checks.check_extension(inputs.rundir)
    fleet = load_fleet(inputs.rundir, findings)
    if fleet is not None:
        findings += check_fleet(fleet, inputs.attempts)
    if under_test(inputs):
        findings += checks.check_design(comparison)
    speed_artifact, more = speed_findings(inputs.rundir.root, inputs.config)
    findings += more
    return _Checked(_sort_findings(findings), fleet, violations, unverifiable, speed_artifact)


def numerics_of(inputs: RunInputs, comparison: CompareResult | None) -> NumericsComparison | None:
    """The numerics block of the comparison this variant is an arm of, without its per-prompt pairs."""
    if comparison is None or comparison.numerics is None:
        return None
    this = this_variant(inputs)
    if this is not None and this not in (
        Path(p).name for p in (comparison.run_a, comparison.run_b, comparison.run_aa) if p
    ):
        return None
    return comparison.numerics.model_copy(update={"pairs": []})


def build_summary(
    run_dir: Path,
    comparison: CompareResult | None = None,
    speed_comparison: SpeedComparison | None = None,
) -> Summary:
    """Everything the audit computes, without writing anything.

    ``comparison``: the paired comparison this run directory is a variant of (``compare.json`` beside it),
    cited in the report's paired-control line; ``speed_comparison``: its serving-speed counterpart
    (``speed_compare.json``), shown in the "Serving speed" section and read by ``min_output_throughput_ratio``.
    """
    inputs = load_inputs(run_dir)
    rows, join_findings = checks.join_outcomes(inputs.manifest, inputs.outcomes)
    linkage = link(rows.values(), inputs.attempts) if inputs.attempts is not None else None
    checked = _checks(inputs, rows, linkage, comparison, join_findings)
    findings, fleet, speed_artifact = checked.findings, checked.fleet, checked.speed

    results = benchmark_results(inputs, rows, linkage)
    overall = request_audit(inputs.manifest.entries, linkage, None, inputs.attempts_torn)
    if linkage is not None and inputs.config is not None and inputs.attempts is not None:
        benchmark_of = {h: g.samples[0].benchmark for h, g in linkage.groups.items() if g.samples}
        used = server_utilisation(inputs.attempts, benchmark_of, inputs.config.generation.concurrency)
        overall = overall.model_copy(update={"utilisation": used})
    server = server_summary(inputs)
    paired = paired_control(inputs, comparison)
    gate_cfg = inputs.config.gates if inputs.config else GateConfig()
    gates = evaluate_gates(gate_cfg, results, findings, overall)
    gates += paired_gates(gate_cfg, comparison, under_test=under_test(inputs))
    gates += speed_gates(gate_cfg, inputs.config, speed_comparison, inputs.run_record)
    gates += numerics_gates(inputs.config, comparison, under_test=under_test(inputs))
    gates = mark_advisory(gate_cfg, gates)
    verdict, code = decide(gates)
    counts: dict[Severity, int] = {s: sum(1 for f in findings if f.severity == s) for s in get_args(Severity)}
    rd = inputs.rundir
    return Summary(
        run_id=inputs.run_id,
        audited_at=datetime.now(UTC).isoformat(timespec="seconds"),
        evalpipe_version=__version__,
        config_name=inputs.config.name
        if inputs.config
        else (inputs.run_record.config_name if inputs.run_record else None),
        config_sha256=inputs.config_sha256,
        model=model_summary(inputs),
        generation=generation_summary(inputs),
        server=server,
        fleet=fleet_summary(fleet, inputs.attempts) if fleet is not None else None,
        provenance=inputs.provenance,
        sampling=sampling_summary(inputs),
        sampled_ids_csv=rd.sampled_ids.name if rd.sampled_ids.is_file() else None,
        benchmarks=results,
        code_sandbox=read_model(rd.code_sandbox, SandboxRecord) if rd.code_sandbox.is_file() else None,
        requests=overall,
        response_selection=response_selection(linkage, checked.violations, checked.unverifiable),
        paired_control=paired,
        limitations=limitations(inputs, results, server, paired)
        + power_limitations(inputs, comparison)
        + (fleet_limitations(fleet) if fleet else []),
        findings=findings,
        finding_counts=counts,
        gates=gates,
        verdict=verdict,
        exit_code=int(code),
        speed=speed_summary(speed_artifact, speed_comparison),
        reviews=reviews_record(rd, inputs.manifest),
        speed_not_measured=speed_not_measured(inputs.run_record),
        numerics=numerics_of(inputs, comparison),
    )
