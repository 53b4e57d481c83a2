"""Positive and negative controls of the whole pipeline, and the guarantees they must meet.

``evalpipe selftest`` runs the bundled demo config twice through the real pipeline (answer-key server
launched like SGLang, recording proxy, EvalScope, audit; ``evalpipe.run.selftest.run_selftest`` runs them,
beside the pipeline: this module says what to plant and how to judge, and imports no run):

* **positive control with planted faults**: every sample scores 1 except exactly the planted faults
  that change a score (truncation → budget_exhausted, thinking until the budget →
  budget_exhausted_in_reasoning, the IndexError solution → code_runtime_error);
  every planted fault appears among the audit findings with its sample id and class, and nothing else
  does; the gates pass (exit 0).
* **negative control** (each item answered with another item's gold answer): every benchmark scores at
  most 10 %, and the gates fail (exit 1).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import evalpipe
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.summary import Summary
from evalpipe.benchmarks.base import bundled_data_dir
from evalpipe.config.models import AnswerKeyConfig, RunConfig
from evalpipe.errors import ConfigError

NEGATIVE_MAX_SCORE = 0.10

# planted fault → (finding code it must produce, failure class of its sample or None if the score stays 1)
FAULT_EXPECTATIONS: dict[str, tuple[str, str | None]] = {
    # the server holds the item's first request past the client's timeout; evalpipe's proxy bounds server
    # time itself (request_timeout_s) and EvalScope's own timeout outlasts it, so the held request ends as a
    # failed attempt that is retried — never as a late duplicate success (test_audit plants those directly)
    "duplicate_request": ("failed_request", None),
    "http_500_once": ("failed_request", None),
    "truncate": ("budget_exhausted", "budget_exhausted"),
    "index_error": ("code_runtime_error", "code_runtime_error"),
    "reasoning_budget": ("budget_exhausted_in_reasoning", "budget_exhausted_in_reasoning"),
}


def demo_config_path() -> Path:
    """``configs/demo.yaml`` of the checkout evalpipe runs from (the demo uses the repo's plans)."""
    path = Path(evalpipe.__file__).resolve().parents[1] / "configs" / "demo.yaml"
    if not path.is_file():
        raise ConfigError(
            f"{path}: demo config not found (run from a checkout of evalpipe, or pass --config)"
        )
    return path


def fault_targets() -> dict[str, tuple[str, str]]:
    data = json.loads((bundled_data_dir() / "faults.json").read_text(encoding="utf-8"))
    return {f: (t["benchmark"], t["source_id"]) for f, t in data["targets"].items()}


def control_config(cfg: RunConfig, *, mode: str, faults: list[str]) -> RunConfig:
    """The demo config as a single run (no variants) with the given answer-key mode and faults."""
    base = cfg.server.answer_key or AnswerKeyConfig()
    key = base.model_copy(update={"mode": mode, "faults": faults})  # keeps the thinking mode
    server = cfg.server.model_copy(update={"answer_key": key})
    out = cfg.model_copy(update={"server": server, "variants": []})
    out._config_path = cfg.config_path
    return out


@dataclass
class ControlCheck:
    name: str
    summary: Summary | None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def check_positive(summary: Summary, outcomes: list[OutcomeRow], faults: list[str]) -> list[str]:
    """Guarantees of the positive control with ``faults`` planted."""
    problems: list[str] = []
    targets = fault_targets()
    expected_class = {targets[f]: FAULT_EXPECTATIONS[f][1] for f in faults if FAULT_EXPECTATIONS[f][1]}
    for row in outcomes:
        key = (row.benchmark, row.source_id)
        want = expected_class.get(key, "ok")
        if row.failure_class != want:
            problems.append(
                f"{row.benchmark} {row.source_id}: failure class {row.failure_label}, expected {want}"
            )
        if key not in expected_class and row.score != 1.0:
            problems.append(f"{row.benchmark} {row.source_id}: score {row.score}, expected 1")
        if row.failure_class == "code_runtime_error" and row.failure_detail != "IndexError":
            problems.append(
                f"{row.benchmark} {row.source_id}: raised {row.failure_detail}, expected IndexError"
            )
    expected_findings = {(FAULT_EXPECTATIONS[f][0], *targets[f]) for f in faults}
    found = {(f.code, f.benchmark, sid) for f in summary.findings for sid in f.sample_ids}
    unexplained = [f for f in summary.findings if not f.sample_ids]
    for code, bench, sid in sorted(expected_findings - found):
        problems.append(f"planted fault not found by the audit: {code} for {bench} {sid}")
    for code, where, sid in sorted(found - expected_findings):
        problems.append(f"unexpected finding: {code} for {where} {sid}")
    for f in unexplained:
        problems.append(f"unexpected finding: {f.severity} {f.code}: {f.message}")
    if "reasoning_budget" in faults:  # the report must show how close the budget came to biting: all the way
        bench = targets["reasoning_budget"][0]
        result = next((b for b in summary.benchmarks if b.benchmark == bench), None)
        share = result.reasoning.share_of_budget if result and result.reasoning else None
        if share is None or share.max < 1.0:
            problems.append(f"{bench}: reasoning length not reported up to the whole budget ({share})")
    if summary.exit_code != 0:
        problems.append(f"verdict {summary.verdict} (exit {summary.exit_code}); the gates should pass")
    return problems


def check_negative(summary: Summary) -> list[str]:
    problems = []
    for b in summary.benchmarks:
        if b.score is not None and b.score > NEGATIVE_MAX_SCORE:
            problems.append(
                f"negative control: {b.benchmark} scored {b.score:.1%} (> {NEGATIVE_MAX_SCORE:.0%})"
            )
    if summary.exit_code != 1:
        problems.append(
            f"negative control: verdict {summary.verdict} (exit {summary.exit_code}); gates should fail"
        )
    return problems
