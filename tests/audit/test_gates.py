"""Gates from the config's ``gates:`` block → verdict and exit code."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures_rundir import Attempt, RunDirBuilder, Sample, clean_run, planted_faults_run, run_cli

from evalpipe.artifacts.schema.summary import Finding, RequestAudit
from evalpipe.audit.gates import AuditErrorFound, GateFailed, decide, evaluate_gates, raise_for_verdict
from evalpipe.config.models import GateConfig
from evalpipe.errors import ExitCode
from evalpipe.run.audit import audit_run


def _failed(summary) -> list[tuple[str, str | None]]:  # type: ignore[no-untyped-def]
    return [(g.gate, g.benchmark) for g in summary.gates if not g.passed]


def test_min_score_and_ci_lower(tmp_path: Path) -> None:
    # clean run: gsm8k 3/4 = 0.75, Wilson lower 0.3006; ceval 2/3
    b = clean_run(tmp_path / "run").gates(
        min_score={"gsm8k": 0.75, "ceval": 0.7}, min_ci_lower={"gsm8k": 0.30, "ifeval": 0.5}
    )
    s = audit_run(b.write().root)
    assert _failed(s) == [("min_score", "ceval"), ("min_ci_lower", "ifeval")]
    assert (s.verdict, s.exit_code) == ("gate_failed", 1)
    gsm_ci = next(g for g in s.gates if g.gate == "min_ci_lower" and g.benchmark == "gsm8k")
    assert gsm_ci.actual == pytest.approx(0.3006, abs=5e-5)
    assert run_cli(["audit", str(b.root)]) == 1


def test_gate_on_benchmark_not_in_run_fails(tmp_path: Path) -> None:
    b = RunDirBuilder(tmp_path / "run").add(Sample("gsm8k", "a")).gates(min_score={"ceval": 0.1})
    s = audit_run(b.write().root, write=False)
    assert _failed(s) == [("min_score", "ceval")]
    assert "not in this run" in s.gates[0].message


def test_max_transport_failures(tmp_path: Path) -> None:
    b = RunDirBuilder(tmp_path / "run")
    b.add(Sample("gsm8k", "a", attempts=[Attempt(status=503), Attempt()]))
    b.gates(max_transport_failures=0)
    s = audit_run(b.write().root, write=False)
    assert _failed(s) == [("max_transport_failures", None)]
    assert s.exit_code == 1
    b.gates(max_transport_failures=1)
    assert audit_run(b.write().root, write=False).exit_code == 0


def test_error_findings_take_precedence_over_gates(tmp_path: Path) -> None:
    b = planted_faults_run(tmp_path / "run").gates(min_score={"gsm8k": 0.99})
    s = audit_run(b.write().root, write=False)
    assert {g for g, _ in _failed(s)} == {"min_score", "max_error_findings"}
    assert (s.verdict, s.exit_code) == ("audit_error", 3)
    with pytest.raises(AuditErrorFound) as exc:
        raise_for_verdict(s)
    assert exc.value.exit_code == ExitCode.AUDIT_ERROR


def test_max_error_findings_tolerance(tmp_path: Path) -> None:
    b = planted_faults_run(tmp_path / "run").gates(max_error_findings=3)
    s = audit_run(b.write().root, write=False)
    assert (s.verdict, s.exit_code) == ("pass", 0)
    raise_for_verdict(s)  # no exception on pass
    b.gates(max_error_findings=2)
    assert audit_run(b.write().root, write=False).exit_code == 3


def test_decide_and_raise_without_run_dir() -> None:
    gates = evaluate_gates(
        GateConfig(max_transport_failures=0),
        [],
        [Finding(severity="warn", code="torn_log", message="x")],
        RequestAudit(samples=0, samples_with_requests=None, actual_requests=None),
    )
    # no request log and no benchmarks: zero API-error outcomes, warn findings only
    assert [g.passed for g in gates] == [True, True]
    assert decide(gates) == ("pass", ExitCode.OK)
    gates[1].passed = False
    assert decide(gates) == ("gate_failed", ExitCode.GATE_FAILED)
    assert GateFailed("x").exit_code == ExitCode.GATE_FAILED
