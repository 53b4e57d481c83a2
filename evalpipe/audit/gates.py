"""Release gates and the audit verdict → exit code.

Order of precedence (one verdict per run):

1. ``audit_error`` (exit 3) — more error-severity findings than ``gates.max_error_findings`` (default
   0).  An error finding means a number in the summary cannot be trusted as stated, so score gates
   are moot.
2. ``gate_failed`` (exit 1) — a score gate (``min_score``, ``min_ci_lower`` per benchmark) or the
   transport-failure gate failed.  A gate naming a benchmark that is not in the run fails: sign-off
   asked for a number the run did not produce.
3. ``pass`` (exit 0).

Score gates compare the sample score and its Wilson lower bound (the numbers in the table).

Paired gates (``non_inferiority_margin_pts``, ``max_mde_pts``) judge the variant under test (the first
variant) from the ``compare.json`` handed to the audit; they never recompute a statistic.  The non-inferiority
gate reads the block's ``non_inferiority``, which compare wrote by the gate's one rule
(``evalpipe.stats.operating``: the calibrated fixed look, or the e-processes' crossing and else one final look,
or an extended block's e-processes alone — its ``basis`` says which).  Inconclusive fails like inferior (an
underpowered sign-off is not a pass); a gate without a paired comparison fails.

A gate named in ``gates.advisory`` is evaluated and reported the same way but never decides the verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from evalpipe.artifacts.schema.compare import CompareResult, PairedBenchmark
from evalpipe.artifacts.schema.summary import (
    BenchmarkResult,
    Finding,
    GateName,
    GateResult,
    RequestAudit,
    Summary,
    Verdict,
)
from evalpipe.config.models import GateConfig, RunConfig
from evalpipe.errors import EvalpipeError, ExitCode
from evalpipe.words.compare import block_mde_sentence, mde_basis_text, verdict_sentence
from evalpipe.words.numerics import gate_words

#: A per-benchmark score gate: its name, thresholds by benchmark, what it compares, and how to read it.
ScoreGate = tuple[GateName, dict[str, float], str, Callable[[BenchmarkResult], float | None]]


class GateFailed(EvalpipeError):
    """A release gate failed (exit 1)."""

    exit_code = ExitCode.GATE_FAILED


class AuditErrorFound(EvalpipeError):
    """The audit found error-severity findings beyond the allowed number (exit 3)."""

    exit_code = ExitCode.AUDIT_ERROR


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.2f} %"


def evaluate_gates(
    gates: GateConfig,
    benchmarks: list[BenchmarkResult],
    findings: list[Finding],
    requests: RequestAudit,
) -> list[GateResult]:
    by_name = {b.benchmark: b for b in benchmarks}
    results: list[GateResult] = []
    score_gates: tuple[ScoreGate, ...] = (
        ("min_score", gates.min_score, "score", lambda b: b.score),
        (
            "min_ci_lower",
            gates.min_ci_lower,
            "95 % CI lower bound",
            lambda b: b.interval.lower if b.interval else None,
        ),
    )
    for gate, thresholds, what, value in score_gates:
        for name, threshold in sorted(thresholds.items()):
            b = by_name.get(name)
            actual = value(b) if b else None
            ok = actual is not None and actual >= threshold
            message = (
                f"{name}: not in this run"
                if b is None
                else f"{name}: {what} {_pct(actual)} {'>=' if ok else '<'} min {_pct(threshold)}"
            )
            results.append(
                GateResult(
                    gate=gate, benchmark=name, threshold=threshold, actual=actual, passed=ok, message=message
                )
            )
    errors = sum(1 for f in findings if f.severity == "error")
    results.append(
        GateResult(
            gate="max_error_findings",
            threshold=gates.max_error_findings,
            actual=errors,
            passed=errors <= gates.max_error_findings,
            message=f"{errors} error finding(s), at most {gates.max_error_findings} allowed",
        )
    )
    if gates.max_transport_failures is not None:
        if requests.transport_failures is not None:
            failures: int = requests.transport_failures
            src = "failed attempt(s) in the request log"
        else:
            failures = sum(f.count for b in benchmarks for f in b.failures if f.failure_class == "api_error")
            src = "API-error outcome(s) (no request log)"
        results.append(
            GateResult(
                gate="max_transport_failures",
                threshold=gates.max_transport_failures,
                actual=failures,
                passed=failures <= gates.max_transport_failures,
                message=f"{failures} {src}, at most {gates.max_transport_failures} allowed",
            )
        )
    return results


PairedGate = Literal["non_inferiority_margin_pts", "max_mde_pts"]


def _block_names(gates: GateConfig, gate: PairedGate, blocks: dict[str, PairedBenchmark]) -> list[str]:
    value = getattr(gates, gate)
    if isinstance(value, dict):
        return ["all" if name == "overall" else name for name in sorted(value)]
    return list(blocks)


def paired_gates(
    gates: GateConfig, comparison: CompareResult | None, *, under_test: bool
) -> list[GateResult]:
    """Non-inferiority and MDE gates per compare.json block (``all`` = overall).

    ``under_test``: this run is the variant under test (or a run without variants); a control's own
    audit carries no paired gate — the comparison judges the variant under test.
    """
    wanted: list[PairedGate] = [
        g for g in ("non_inferiority_margin_pts", "max_mde_pts") if getattr(gates, g) is not None
    ]
    if not wanted or not under_test:
        return []
    results: list[GateResult] = []
    if comparison is None:
        for gate in wanted:
            what = (
                "non-inferiority" if gate == "non_inferiority_margin_pts" else "a minimum detectable effect"
            )
            results.append(
                GateResult(
                    gate=gate,
                    threshold=0.0,
                    actual=None,
                    passed=False,
                    message=f"{gate}: {what} needs a control variant (one paired comparison, compare.json)",
                )
            )
        return results
    blocks = {b.benchmark: b for b in [*comparison.benchmarks, *comparison.pools]}
    if comparison.overall is not None:
        blocks["all"] = comparison.overall
    for gate in wanted:
        for name in _block_names(gates, gate, blocks):
            threshold = gates.points_for(gate, name)
            assert threshold is not None  # the names come from the gate's own keys or every block
            label = "overall" if name == "all" else name
            block = blocks.get(name)
            if block is None:
                results.append(
                    GateResult(
                        gate=gate,
                        benchmark=label,
                        threshold=threshold,
                        actual=None,
                        passed=False,
                        message=f"{label}: not in this comparison",
                    )
                )
                continue
            if gate == "non_inferiority_margin_pts":
                ni = block.non_inferiority
                ok = ni is not None and ni.verdict == "non-inferior"
                message = (
                    f"{label}: {verdict_sentence(ni)}"
                    if ni
                    else f"{label}: no non-inferiority verdict in compare.json"
                )
                actual = ni.lower_bound_pts if ni else None
            else:
                actual = block.mde_pts
                ok = actual is not None and actual <= threshold
                sign = "<=" if ok else ">"
                head = (
                    f"MDE {actual:.1f} pts {sign} max {threshold:g} pts" if actual is not None else "no MDE"
                )
                basis = mde_basis_text(block.mde_basis, block.n_pairs)
                message = f"{label}: {head}: {block_mde_sentence(block)} ({basis})"
            results.append(
                GateResult(
                    gate=gate, benchmark=label, threshold=threshold, actual=actual, passed=ok, message=message
                )
            )
    return results


def mark_advisory(gates: GateConfig, results: list[GateResult]) -> list[GateResult]:
    """The results of the gates ``gates.advisory`` names, flagged so that ``decide`` leaves them out."""
    names = set(gates.advisory)
    return [r.model_copy(update={"advisory": True}) if r.gate in names else r for r in results]


def decide(gates: list[GateResult]) -> tuple[Verdict, ExitCode]:
    """The verdict and exit code from evaluated gates (see the module docstring for precedence)."""
    if any(g.gate == "max_error_findings" and not g.passed for g in gates):
        return "audit_error", ExitCode.AUDIT_ERROR
    if any(not g.passed and not g.advisory for g in gates):
        return "gate_failed", ExitCode.GATE_FAILED
    return "pass", ExitCode.OK


def raise_for_verdict(summary: Summary) -> None:
    """Raise the error that maps to the summary's exit code (nothing on pass)."""
    failed = [g.message for g in summary.gates if not g.passed and not g.advisory]
    if summary.verdict == "audit_error":
        n = summary.finding_counts.get("error", 0)
        raise AuditErrorFound(f"audit found {n} error-severity finding(s)", details=failed)
    if summary.verdict == "gate_failed":
        raise GateFailed(f"{len(failed)} gate(s) failed", details=failed)


def numerics_gates(
    config: RunConfig | None, comparison: CompareResult | None, *, under_test: bool
) -> list[GateResult]:
    """``numerics.fail_above`` (off when unset): the variant under test fails when the one-sided bound of its
    numerics shift over the A/A arm exceeds the threshold — read from compare.json's numerics block, the same
    decision its report and compare.md print.  Without a numerics comparison with an A/A arm the gate fails."""
    threshold = config.numerics.fail_above if config is not None and config.numerics is not None else None
    if threshold is None or not under_test:
        return []
    block = comparison.numerics if comparison is not None else None
    if block is None or block.gate is None:
        return [
            GateResult(
                gate="numerics_fail_above",
                benchmark="numerics",
                threshold=threshold,
                actual=None,
                passed=False,
                message="numerics.fail_above: no numerics comparison with an A/A arm (compare.json) beside this run",
            )
        ]
    return [
        GateResult(
            gate="numerics_fail_above",
            benchmark="numerics",
            threshold=threshold,
            actual=block.gate.lower,
            passed=block.gate.passed,
            message=gate_words(block),
        )
    ]
