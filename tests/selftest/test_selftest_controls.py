"""The self-test's guarantees: the controls run through the real pipeline, and the checks can fail.

The controls are ``run_selftest`` on the demo config extended to every registered benchmark (the session's
``registry_controls``, shared with the benchmark contract test): the demo's own benchmarks keep their
plans, faults and gates, the others add their bundled miniatures."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.registry_controls import RegistryControls

from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.summary import Finding, Summary
from evalpipe.selftest.controls import (
    FAULT_EXPECTATIONS,
    ControlCheck,
    check_negative,
    check_positive,
    fault_targets,
)


@pytest.fixture(scope="module")
def controls(registry_controls: RegistryControls) -> list[ControlCheck]:
    return [registry_controls.positive, registry_controls.negative]


def test_positive_and_negative_controls_hold(controls) -> None:
    positive, negative = controls
    assert positive.ok, positive.problems
    assert negative.ok, negative.problems
    targets = fault_targets()
    found = {(f.code, f.benchmark, tuple(f.sample_ids)) for f in positive.summary.findings}
    assert found == {
        (FAULT_EXPECTATIONS[fault][0], *targets[fault][:1], (targets[fault][1],)) for fault in targets
    }
    assert positive.summary.exit_code == 0
    scores = {b.benchmark: (b.correct, b.scored) for b in positive.summary.benchmarks}
    # 100 % except the three planted faults that change a score
    assert scores["ifeval"][0] == scores["ifeval"][1] and scores["ceval"][0] == scores["ceval"][1] - 1
    assert scores["gsm8k"][0] == scores["gsm8k"][1] - 1
    assert scores["live_code_bench"][0] == scores["live_code_bench"][1] - 1
    assert negative.summary.exit_code == 1
    assert all(b.score is not None and b.score <= 0.10 for b in negative.summary.benchmarks)


def _row(bench: str, sid: str, cls: str = "ok", score: float = 1.0, detail: str | None = None) -> OutcomeRow:
    return OutcomeRow(
        benchmark=bench, subset="s", index=0, source_id=sid, stratum="x", prediction_present=True,
        review_present=True, n_predictions=1, n_reviews=1, score=score, failure_class=cls,  # type: ignore[arg-type]
        failure_detail=detail,
    )  # fmt: skip


def _summary(findings: list[Finding], exit_code: int = 0) -> Summary:
    return Summary.model_construct(findings=findings, exit_code=exit_code, verdict="pass", benchmarks=[])


def test_checks_fail_when_a_guarantee_is_broken() -> None:
    t = fault_targets()
    faults = ["truncate", "index_error"]
    rows = [
        _row(*t["truncate"], cls="budget_exhausted", score=0.0),
        _row(*t["index_error"], cls="code_runtime_error", score=0.0, detail="IndexError"),
        _row("gsm8k", "other"),
    ]
    good = [
        Finding(severity="info", code="budget_exhausted", benchmark=t["truncate"][0], sample_ids=[t["truncate"][1]], message="m"),
        Finding(severity="info", code="code_runtime_error", benchmark=t["index_error"][0], sample_ids=[t["index_error"][1]], message="m"),
    ]  # fmt: skip
    assert check_positive(_summary(good), rows, faults) == []
    # a planted fault the audit missed
    assert any("not found by the audit" in p for p in check_positive(_summary(good[:1]), rows, faults))
    # anything else in the findings
    extra = [
        *good,
        Finding(severity="warn", code="failed_request", benchmark="gsm8k", sample_ids=["other"], message="m"),
    ]
    assert any(
        "unexpected finding: failed_request" in p for p in check_positive(_summary(extra), rows, faults)
    )
    # a sample that is not 100 % although no fault was planted on it
    bad_rows = [*rows[:2], _row("gsm8k", "other", cls="wrong", score=0.0)]
    assert any("gsm8k other" in p for p in check_positive(_summary(good), bad_rows, faults))
    # the wrong exception type
    wrong_exc = [
        rows[0],
        _row(*t["index_error"], cls="code_runtime_error", score=0.0, detail="KeyError"),
        rows[2],
    ]
    assert any("expected IndexError" in p for p in check_positive(_summary(good), wrong_exc, faults))
    # gates must pass for the positive control and fail for the negative one
    assert any("gates should pass" in p for p in check_positive(_summary(good, exit_code=1), rows, faults))
    neg = Summary.model_construct(findings=[], exit_code=0, verdict="pass", benchmarks=[])
    assert any("gates should fail" in p for p in check_negative(neg))


def test_demo_config_is_found(repo_root: Path) -> None:
    from evalpipe.selftest.controls import demo_config_path

    assert demo_config_path() == repo_root / "configs" / "demo.yaml"


def test_the_readme_demo_excerpt_is_what_the_demo_prints(controls, repo_root: Path) -> None:
    """The README's excerpt of ``make demo`` (its faults run) quotes the positive control's numbers: each row's
    correct / scored, score and Wilson interval (throughput columns vary by host; the findings lines depend on
    which sample each planted fault hits, which the control moves when it adds every benchmark: not checked)."""
    import re

    positive = controls[0].summary
    readme = (repo_root / "README.md").read_text(encoding="utf-8")
    excerpt = readme[readme.index("run demo-answer-key-…/faults") :].split("```")[0]
    rows = re.findall(
        r"^ (\S[^│]*?) +│ +(\d+)/(\d+) │ +([0-9.]+) % │ +\[([0-9.]+), ([0-9.]+)\] %", excerpt, re.M
    )
    assert len(rows) == 5, excerpt  # the demo config's five benchmarks
    by_label = {f"{b.display_name} / {b.metric}": b for b in positive.benchmarks}
    for label, correct, scored, score, lower, upper in rows:
        b = by_label[label]
        assert b.interval is not None and b.score is not None
        assert (int(correct), int(scored)) == (b.correct, b.scored), label
        assert (score, lower, upper) == (
            f"{100 * b.score:.1f}",
            f"{100 * b.interval.lower:.1f}",
            f"{100 * b.interval.upper:.1f}",
        ), label
