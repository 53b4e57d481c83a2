"""The audit's view of the serving benchmark: findings from ``speed.json`` / ``speed_error.txt`` and the
``min_output_throughput_ratio`` gate from the paired speed comparison (handed in, as ``compare.json`` is).

A round that did not complete every request (or whose requests had other lengths than asked) is an error
finding, ``speed_incomplete``: its figures are kept in ``speed.json`` but the comparison that uses it says
"inconclusive", and a reviewer must not read the table as a clean measurement.  Every other problem line
the benchmark wrote (prefix-cache hits, a non-finite figure) is a warning, ``speed_problem``.  A benchmark
that could not run at all (``speed_error.txt``) is an error finding, ``speed_setup``; the accuracy results
of the run are not touched by any of these.
"""

from __future__ import annotations

from pathlib import Path

from evalpipe.artifacts import RunDir
from evalpipe.artifacts.schema.run import RunRecord
from evalpipe.artifacts.schema.speed import SpeedArtifact
from evalpipe.artifacts.schema.speed_compare import SpeedComparison
from evalpipe.artifacts.schema.summary import Finding, GateResult, SpeedSummary
from evalpipe.config.models import GateConfig, RunConfig
from evalpipe.errors import ArtifactError
from evalpipe.speed.run import read_speed
from evalpipe.speed.summary import summarize_speed

#: What the report and the gate say of a run started with ``--no-speed``.
NOT_MEASURED = "serving speed not measured (--no-speed)"


def speed_not_measured(record: RunRecord | None) -> str | None:
    """The report's sentence for an accuracy-only run (run.json ``no_speed``), else None."""
    return NOT_MEASURED if record is not None and record.no_speed else None


def speed_findings(run_dir: Path, config: RunConfig | None) -> tuple[SpeedArtifact | None, list[Finding]]:
    """``speed.json`` of the run (None when absent or unreadable) and the findings it and its error file give."""
    run_dir = Path(run_dir)
    findings: list[Finding] = []
    error_path = RunDir(run_dir).speed_error
    if error_path.is_file():
        line = error_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        findings.append(
            Finding(
                severity="error",
                code="speed_setup",
                path=error_path.name,
                message="the speed benchmark did not run: " + (line[0] if line else "(empty error file)"),
            )
        )
    path = RunDir(run_dir).speed_json
    if not path.is_file():
        if config is not None and config.speed is not None and not error_path.is_file():
            findings.append(
                Finding(
                    severity="warn",
                    code="missing_artifact",
                    path=path.name,
                    message="absent: the config has a speed section but no benchmark result is in the run",
                )
            )
        return None, findings
    try:
        artifact = read_speed(path)
    except ArtifactError as exc:
        findings.append(
            Finding(severity="error", code="unreadable_artifact", path=path.name, message=exc.message)
        )
        return None, findings
    for w in artifact.workloads:
        for r in w.rounds:
            if not r.usable:
                why = r.problems[0] if r.problems else "lengths other than requested"
                findings.append(
                    Finding(
                        severity="error",
                        code="speed_incomplete",
                        benchmark=w.name,
                        path=path.name,
                        message=f"{artifact.variant} {w.name} round {r.round_index + 1}: {why} "
                        "(its comparisons are inconclusive)",
                    )
                )
        missing = artifact.config.rounds - len(w.rounds)
        if missing > 0:
            findings.append(
                Finding(
                    severity="error",
                    code="speed_incomplete",
                    benchmark=w.name,
                    path=path.name,
                    message=f"{artifact.variant} {w.name}: {len(w.rounds)} of {artifact.config.rounds} rounds ran",
                )
            )
    for p in artifact.problems:
        if p.severity == "error":
            continue  # the first problem of an unusable round: already a speed_incomplete finding above
        findings.append(
            Finding(
                severity="warn" if p.severity == "warn" else "info",
                code="speed_problem",
                benchmark=p.workload,
                path=path.name,
                message=(f"round {p.round_index + 1}: " if p.round_index is not None else "") + p.message,
            )
        )
    return artifact, findings


def speed_summary(artifact: SpeedArtifact | None, comparison: SpeedComparison | None) -> SpeedSummary | None:
    return summarize_speed(artifact, comparison) if artifact is not None else None


def _without_ratio(threshold: float, message: str, *, advisory: bool = False) -> GateResult:
    """The speed gate of a run that has no ratio to judge: failed, or only reported when ``advisory``."""
    return GateResult(
        gate="min_output_throughput_ratio",
        threshold=threshold,
        actual=None,
        passed=False,
        advisory=advisory,
        message=message,
    )


def speed_gates(
    gates: GateConfig,
    config: RunConfig | None,
    comparison: SpeedComparison | None,
    record: RunRecord | None = None,
) -> list[GateResult]:
    """``min_output_throughput_ratio``: one result per workload of the comparison; without a comparison the
    gate fails (sign-off asked for a ratio the run did not produce).  A run started with ``--no-speed``
    (``record``) fails it with that reason, or — ``--waive-speed-gate`` — reports it as advisory: the
    verdict then rests on accuracy alone, and the report says so."""
    threshold = gates.min_output_throughput_ratio
    if threshold is not None and record is not None and record.no_speed:
        waived = record.speed_gate_waived
        return [
            _without_ratio(
                threshold,
                f"{NOT_MEASURED}: "
                + ("waived (--waive-speed-gate)" if waived else "the ratio was not measured; pass "
                   "--waive-speed-gate with --no-speed to sign off on accuracy alone"),
                advisory=waived,
            )
        ]  # fmt: skip
    if threshold is None or config is None or config.speed is None:
        return []
    if comparison is None:
        return [
            _without_ratio(
                threshold,
                "no speed comparison (speed_compare.json) beside this run: the ratio needs two variants "
                "with a speed.json each",
            )
        ]
    results: list[GateResult] = []
    for w in comparison.workloads:
        ratio = w.metrics[0].ratio if w.metrics else None
        passed = w.complete and ratio is not None and ratio >= threshold
        results.append(
            GateResult(
                gate="min_output_throughput_ratio",
                benchmark=w.workload,
                threshold=threshold,
                actual=ratio,
                passed=passed,
                message=w.gate.message
                if w.gate is not None and w.gate.threshold == threshold
                else (
                    f"{w.workload}: output-throughput ratio {comparison.test}/{comparison.control} "
                    + ("n/a" if ratio is None else f"{ratio:.3f}")
                    + (" >= " if passed else " < ")
                    + f"min {threshold:.3f}"
                    + ("" if w.complete else " (incomplete rounds)")
                ),
            )
        )
    return results
