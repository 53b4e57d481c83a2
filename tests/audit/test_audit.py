"""The audit on synthetic run directories: planted faults, counts, exit codes, schema."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from fixtures_rundir import (
    PLANTED_SECRET,
    Attempt,
    RunDirBuilder,
    Sample,
    clean_run,
    planted_faults_run,
    run_cli,
)

from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.summary import Summary
from evalpipe.audit.run import build_summary
from evalpipe.errors import ArtifactError
from evalpipe.run.audit import audit_run

REPO = Path(__file__).resolve().parents[2]


def codes(summary: Summary) -> Counter[tuple[str, str]]:
    return Counter((f.severity, f.code) for f in summary.findings)


def bench(summary: Summary, name: str):  # type: ignore[no-untyped-def]
    return next(b for b in summary.benchmarks if b.benchmark == name)


# --- the planted-fault run -----------------------------------------------------------------------------
def test_planted_faults_reported_exactly(tmp_path: Path) -> None:
    rd = planted_faults_run(tmp_path / "run").write()
    s = audit_run(rd.root)
    assert codes(s) == Counter(
        {
            ("error", "scoring_error"): 1,
            ("error", "response_not_logged"): 1,
            ("error", "secret_in_artifact"): 1,
            ("warn", "duplicate_requests"): 1,
            ("warn", "failed_request"): 1,
            ("warn", "cache_repair"): 1,
            ("info", "budget_exhausted"): 1,
            ("info", "code_runtime_error"): 1,
        }
    )
    by_code = {f.code: f for f in s.findings}
    assert by_code["budget_exhausted"].sample_ids == ["ce1"]
    assert "IndexError" in by_code["code_runtime_error"].message
    assert by_code["scoring_error"].sample_ids == ["if1"]
    assert by_code["response_not_logged"].sample_ids == ["ce0"]
    assert "chatcmpl-ghost" in by_code["response_not_logged"].message
    assert by_code["secret_in_artifact"].path == "server/server_info.json"
    assert PLANTED_SECRET not in by_code["secret_in_artifact"].message
    assert by_code["duplicate_requests"].sample_ids == ["g0"]
    assert len(by_code["duplicate_requests"].attempt_ids) == 2
    assert by_code["failed_request"].sample_ids == ["g1"]
    assert "ReadTimeout" in by_code["failed_request"].message
    assert by_code["cache_repair"].sample_ids == ["g2"]
    assert s.finding_counts == {"error": 3, "warn": 3, "info": 2}
    assert (s.verdict, s.exit_code) == ("audit_error", 3)

    # request counts: 18 samples, 20 attempts (one duplicate, one failed + retry)
    r = s.requests
    assert (r.samples, r.actual_requests, r.successful) == (18, 20, 19)
    assert (r.duplicates, r.retries, r.transport_failures, r.unlinked, r.other_requests) == (1, 1, 1, 0, 0)
    assert s.response_selection.violations == 0
    assert s.response_selection.correctness_based_selection is None  # ce0 cannot be traced
    assert s.response_selection.samples_with_several_responses == 1

    # failure taxonomy
    ceval, live_code_bench, ifeval = bench(s, "ceval"), bench(s, "live_code_bench"), bench(s, "ifeval")
    assert {f.label: f.count for f in ceval.failures} == {"ok": 1, "budget_exhausted": 1, "wrong": 1}
    assert {f.label: f.count for f in live_code_bench.failures} == {
        "ok": 3,
        "code_wrong_answer": 2,
        "code_runtime_error:IndexError": 1,
    }
    assert (ifeval.correct, ifeval.scored, ifeval.without_score) == (3, 5, 1)
    assert ceval.max_tokens == 32768
    # summary.json is on disk and round-trips through the model
    assert Summary.model_validate_json(rd.summary.read_text()) == s


def test_planted_faults_exit_code_and_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rd = planted_faults_run(tmp_path / "run").write()
    assert run_cli(["audit", str(rd.root)]) == 3
    out = capsys.readouterr()
    assert "AUDIT ERROR" in out.out
    assert "Dataset / metric" in out.out
    assert "secret_in_artifact" in out.out
    assert PLANTED_SECRET not in out.out + out.err
    assert "error-severity" in out.err


def test_summary_validates_against_committed_schema(tmp_path: Path) -> None:
    import jsonschema

    rd = planted_faults_run(tmp_path / "run").write()
    audit_run(rd.root)
    schema = json.loads((REPO / "audits" / "summary.schema.json").read_text())
    jsonschema.validate(json.loads(rd.summary.read_text()), schema)
    assert next(iter(json.loads(rd.summary.read_text()))) == "schema_version"


def test_secret_never_reaches_summary_or_reports(tmp_path: Path) -> None:
    b = planted_faults_run(tmp_path / "run")
    assert b.verification is not None
    b.verification.launch_command = f"python -m sglang.launch_server --api-key {PLANTED_SECRET}"
    rd = b.write()
    audit_run(rd.root)
    for path in (rd.summary, rd.report_md, rd.report_html):
        assert PLANTED_SECRET not in path.read_text(), path.name
    kinds = {f.path for f in build_summary(rd.root).findings if f.code == "secret_in_artifact"}
    assert kinds == {"server/server_info.json", "server/verification.json"}


# --- clean runs and single faults ----------------------------------------------------------------------
def test_clean_run_passes(tmp_path: Path) -> None:
    rd = clean_run(tmp_path / "run").write()
    s = audit_run(rd.root)
    assert s.findings == []
    assert (s.verdict, s.exit_code) == ("pass", 0)
    assert s.response_selection.correctness_based_selection is False
    assert s.requests.actual_requests == 18
    assert run_cli(["audit", str(rd.root), "--no-write"]) == 0


def test_clean_run_numbers(tmp_path: Path) -> None:
    s = audit_run(clean_run(tmp_path / "run").write().root, write=False)
    gsm = bench(s, "gsm8k")
    assert (gsm.correct, gsm.scored, gsm.score) == (3, 4, 0.75)
    assert gsm.interval is not None and gsm.interval.method == "wilson"
    assert gsm.allocation_proportional and gsm.stratified is None
    live_code_bench = bench(s, "live_code_bench")
    assert not live_code_bench.allocation_proportional
    assert live_code_bench.stratified is not None
    assert live_code_bench.stratified.estimate == pytest.approx(4 / 7)
    assert [(st.stratum, st.correct, st.selected, st.population) for st in live_code_bench.strata] == [
        ("easy", 2, 2, 100),
        ("hard", 0, 2, 50),
        ("medium", 1, 2, 200),
    ]
    ifeval = bench(s, "ifeval")
    assert ifeval.allocation_proportional
    sec = {m.name: m for m in ifeval.secondary}
    assert (sec["prompt_level_strict"].numerator, sec["prompt_level_strict"].denominator) == (4, 5)
    assert (sec["prompt_level_loose"].numerator, sec["prompt_level_loose"].denominator) == (5, 5)
    assert (sec["inst_level_strict"].numerator, sec["inst_level_strict"].denominator) == (6, 7)
    assert (sec["inst_level_loose"].numerator, sec["inst_level_loose"].denominator) == (7, 7)
    assert sec["inst_level_strict"].interval is None and sec["inst_level_strict"].note


def test_throughput_from_logged_traffic(tmp_path: Path) -> None:
    b = RunDirBuilder(tmp_path / "run")
    b.add(
        Sample(
            "gsm8k",
            "a",
            attempts=[Attempt(prompt_tokens=300, completion_tokens=100, duration_s=2.0, start_s=0)],
        ),
        Sample(
            "gsm8k",
            "b",
            attempts=[Attempt(prompt_tokens=500, completion_tokens=300, duration_s=3.0, start_s=1)],
        ),
    )
    s = audit_run(b.write().root, write=False)
    tp = bench(s, "gsm8k").throughput
    assert tp is not None
    assert tp.wall_time_s == pytest.approx(4.0)  # 0 s → 4 s
    assert (tp.input_tokens, tp.output_tokens, tp.total_tokens) == (800, 400, 1200)
    assert tp.input_tps == pytest.approx(200.0)
    assert tp.output_tps == pytest.approx(100.0)
    assert tp.total_tps == pytest.approx(300.0)
    assert tp.tp_size == 8
    assert tp.input_tps_per_gpu == pytest.approx(25.0)


def test_selection_rule_violation_is_flagged(tmp_path: Path) -> None:
    b = RunDirBuilder(tmp_path / "run")
    b.add(Sample("gsm8k", "a", attempts=[Attempt(), Attempt()], used=0), Sample("gsm8k", "b"))
    s = audit_run(b.write().root, write=False)
    assert codes(s) == Counter({("error", "selection_rule_violated"): 1, ("warn", "duplicate_requests"): 1})
    assert s.response_selection.correctness_based_selection is True
    assert s.response_selection.violations == 1
    assert s.exit_code == 3


def test_an_answer_the_client_never_received_is_not_the_one_to_use(tmp_path: Path) -> None:
    # the client timed out on attempt 0 and re-sent; the server finished attempt 0 only after answering the
    # re-send: the last *delivered* success is attempt 1, so using it follows the rule
    b = RunDirBuilder(tmp_path / "run")
    late = Attempt(start_s=0, duration_s=5, client_disconnected=True)
    b.add(Sample("gsm8k", "a", attempts=[late, Attempt(start_s=3, duration_s=1)], used=1))
    s = audit_run(b.write().root, write=False)
    assert codes(s) == Counter({("warn", "duplicate_requests"): 1})
    assert s.response_selection.violations == 0 and s.requests.duplicates == 1
    # using the undelivered answer instead is a violation
    b2 = RunDirBuilder(tmp_path / "run2")
    b2.add(Sample("gsm8k", "a", attempts=[late, Attempt(start_s=3, duration_s=1)], used=0))
    assert ("error", "selection_rule_violated") in codes(audit_run(b2.write().root, write=False))


def test_using_a_failed_attempt_violates_the_rule(tmp_path: Path) -> None:
    b = RunDirBuilder(tmp_path / "run")
    b.add(Sample("gsm8k", "a", attempts=[Attempt(), Attempt(status=500)], used=1))
    s = audit_run(b.write().root, write=False)
    assert ("error", "selection_rule_violated") in codes(s)
    assert ("warn", "failed_request") in codes(s)
    assert s.requests.retries == 0  # the failure came last: nothing followed it


def test_last_completed_wins_over_last_started(tmp_path: Path) -> None:
    # attempt 0 starts first but completes last: it is the one the rule requires
    b = RunDirBuilder(tmp_path / "run")
    b.add(
        Sample(
            "gsm8k",
            "a",
            attempts=[Attempt(start_s=0, duration_s=5), Attempt(start_s=1, duration_s=1)],
            used=0,
        )
    )
    s = audit_run(b.write().root, write=False)
    assert codes(s) == Counter({("warn", "duplicate_requests"): 1})
    assert s.response_selection.correctness_based_selection is False


def test_shared_prompt_samples_are_judged_together(tmp_path: Path) -> None:
    b = RunDirBuilder(tmp_path / "run")
    b.add(
        Sample("gsm8k", "a", prompt_text="same question", attempts=[Attempt()]),
        Sample("gsm8k", "b", prompt_text="same question", attempts=[Attempt()]),
    )
    s = audit_run(b.write().root, write=False)
    assert codes(s) == Counter({("info", "shared_prompt"): 1})
    assert s.requests.duplicates == 0
    assert s.exit_code == 0


def test_unlinked_and_non_chat_requests(tmp_path: Path) -> None:
    b = RunDirBuilder(tmp_path / "run")
    b.add(Sample("gsm8k", "a"))
    b.extra_attempts = [Attempt(messages_sha256="f" * 64), Attempt(messages_sha256=None)]
    s = audit_run(b.write().root, write=False)
    assert codes(s) == Counter({("warn", "unlinked_request"): 1})
    assert (s.requests.unlinked, s.requests.other_requests, s.requests.actual_requests) == (1, 1, 1)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"n_predictions": 0, "score": None, "failure_class": "missing_prediction"}, "no_prediction"),
        ({"n_predictions": 2}, "several_predictions"),
        ({"n_reviews": 0, "score": None, "failure_class": "missing_review"}, "no_review"),
        ({"n_reviews": 3}, "several_reviews"),
        ({"expected_prompt_sha256": "0" * 64}, "prompt_mismatch"),
        ({"prompt_contains_question": False}, "prompt_mismatch"),
        ({"review_matches_prediction": False}, "review_mismatch"),
        ({"score": 0.5}, "non_binary_score"),
        ({"score": 0.0}, "outcome_inconsistent"),
        ({"response_sha256": "e" * 64}, "response_content_mismatch"),
    ],
)
def test_single_outcome_faults(tmp_path: Path, change: dict, expected: str) -> None:
    b = RunDirBuilder(tmp_path / "run")
    sample = Sample("gsm8k", "a")
    for k, v in change.items():
        setattr(sample, k, v)
    b.add(sample, Sample("gsm8k", "b"))
    s = audit_run(b.write().root, write=False)
    assert ("error", expected) in codes(s), s.findings
    assert all(f.sample_ids == ["a"] for f in s.findings if f.severity == "error")
    assert s.exit_code == 3


def test_response_of_another_prompt(tmp_path: Path) -> None:
    b = RunDirBuilder(tmp_path / "run")
    b.add(Sample("gsm8k", "a"), Sample("gsm8k", "b", response_id="att-0000"))
    s = audit_run(b.write().root, write=False)
    assert [(f.code, f.sample_ids) for f in s.findings if f.severity == "error"] == [
        ("response_of_other_prompt", ["b"])
    ]


def test_missing_and_orphan_and_duplicate_outcome_rows(tmp_path: Path) -> None:
    rd = RunDirBuilder(tmp_path / "run").add(Sample("gsm8k", "a"), Sample("gsm8k", "b")).write()
    rows = [OutcomeRow.model_validate_json(line) for line in rd.outcomes.read_text().splitlines()]
    ghost = rows[0].model_copy(update={"source_id": "zzz"})
    rd.outcomes.write_text("".join(r.model_dump_json() + "\n" for r in [rows[0], rows[0], ghost]))
    s = audit_run(rd.root, write=False)
    got = {(f.code, tuple(f.sample_ids)) for f in s.findings}
    assert ("missing_outcome", ("b",)) in got
    assert ("orphan_outcome", ("zzz",)) in got
    assert ("duplicate_outcome", ("a",)) in got
    g = bench(s, "gsm8k")
    assert (g.correct, g.scored, g.without_score) == (1, 2, 1)  # the missing entry counts as incorrect


def test_dataset_drift_and_unverified_server(tmp_path: Path) -> None:
    b = RunDirBuilder(tmp_path / "run").add(Sample("gsm8k", "a"))
    b.pinned["gsm8k"] = "1" * 64
    b.drift_allowed.add("gsm8k")
    assert b.verification is not None
    b.verification.verified = False
    b.verification.checks[0].ok = False
    b.verification.checks[0].resolved = "bfloat16"
    s = audit_run(b.write().root, write=False)
    assert codes(s) == Counter({("warn", "dataset_drift"): 1, ("warn", "server_not_verified"): 1})
    assert "bfloat16" in next(f.message for f in s.findings if f.code == "server_not_verified")
    assert s.server.verified is False and s.server.description.startswith("NOT verified")


def test_optional_artifacts_absent_is_not_a_crash(tmp_path: Path) -> None:
    b = RunDirBuilder(tmp_path / "run").add(Sample("gsm8k", "a"))
    b.verification = None
    b.provenance = None
    b.config = None
    b.server_info = None
    b.write_requests_log = False
    rd = b.write()
    s = audit_run(rd.root)
    assert codes(s) == Counter(
        {
            ("warn", "missing_artifact"): 3,  # requests.jsonl, provenance.json, config.yaml
            ("warn", "server_not_verified"): 1,
        }
    )
    assert s.server.verified is None and s.server.description.startswith("not verified")
    assert s.requests.actual_requests is None
    assert s.response_selection.correctness_based_selection is None
    assert bench(s, "gsm8k").throughput is None
    assert s.run_id == "run"  # no run.json: the directory name
    assert (s.verdict, s.exit_code) == ("pass", 0)
    assert "not verified" in rd.report_md.read_text()


def test_torn_request_log_tail(tmp_path: Path) -> None:
    b = RunDirBuilder(tmp_path / "run").add(Sample("gsm8k", "a"))
    b.torn_request_tail = True
    s = audit_run(b.write().root, write=False)
    assert codes(s) == Counter({("warn", "torn_log"): 1})
    assert s.requests.log_torn_tail is True
    assert s.requests.actual_requests == 1


def test_config_changed_after_the_run(tmp_path: Path) -> None:
    rd = RunDirBuilder(tmp_path / "run").add(Sample("gsm8k", "a")).write()
    rd.config_copy.write_text(rd.config_copy.read_text() + "# loosened later\n")
    s = audit_run(rd.root, write=False)
    assert codes(s) == Counter({("error", "config_changed"): 1})


def test_unreadable_optional_artifact_is_an_error_finding(tmp_path: Path) -> None:
    rd = RunDirBuilder(tmp_path / "run").add(Sample("gsm8k", "a")).write()
    rd.provenance.write_text('{"schema_version": 99}')
    s = audit_run(rd.root, write=False)
    assert [(f.severity, f.code, f.path) for f in s.findings] == [
        ("error", "unreadable_artifact", "provenance.json")
    ]


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert run_cli(["audit", str(tmp_path / "nope")]) == 2
    rd = RunDirBuilder(tmp_path / "run").add(Sample("gsm8k", "a")).write()
    rd.outcomes.unlink()
    with pytest.raises(ArtifactError):
        build_summary(rd.root)
    assert run_cli(["audit", str(rd.root)]) == 2
    assert not rd.summary.exists()


def test_audit_rewrites_atomically_and_is_repeatable(tmp_path: Path) -> None:
    rd = planted_faults_run(tmp_path / "run").write()
    a = audit_run(rd.root)
    b = audit_run(rd.root)
    assert a.model_dump(exclude={"audited_at"}) == b.model_dump(exclude={"audited_at"})
    assert not [p for p in rd.root.iterdir() if p.name.endswith(".tmp")]


def test_api_error_without_prediction_after_retries_is_an_error(tmp_path: Path) -> None:
    b = RunDirBuilder(tmp_path / "run")
    b.add(
        Sample(
            "gsm8k",
            "a",
            attempts=[Attempt(status=500), Attempt(status=500)],
            n_predictions=0,
            n_reviews=0,
            score=None,
            failure_class="api_error",
            api_error="InternalServerError: 500",
        ),
        Sample("gsm8k", "b"),
    )
    s = audit_run(b.write().root, write=False)
    # no attempt succeeded: the sample's score says nothing about the model (error); the failed attempts
    # themselves are warnings for the transport gate
    assert codes(s) == Counter({("error", "no_prediction"): 1, ("warn", "failed_request"): 1})
    assert (s.requests.transport_failures, s.requests.retries) == (2, 1)
    assert s.requests.retry_causes == {"HTTP 500": 1}
    g = bench(s, "gsm8k")
    assert (g.correct, g.scored, g.without_score) == (1, 2, 1)
    assert s.exit_code == 3
    b.gates(max_error_findings=1, max_transport_failures=1)
    assert audit_run(b.write().root, write=False).exit_code == 1


def test_budget_exhausted_counts_incorrect_even_if_scored_correct(tmp_path: Path) -> None:
    b = RunDirBuilder(tmp_path / "run")
    b.add(
        Sample(
            "gsm8k",
            "a",
            score=1.0,
            failure_class="budget_exhausted",
            attempts=[Attempt(finish_reason="length")],
        ),
        Sample("gsm8k", "b"),
    )
    s = audit_run(b.write().root, write=False)
    assert [(f.severity, f.code, f.sample_ids) for f in s.findings] == [("info", "budget_exhausted", ["a"])]
    g = bench(s, "gsm8k")
    assert (g.correct, g.scored, g.budget_exhausted_scored_correct) == (1, 2, 1)


# --- paired control: the comparison is handed in, never read from beside the run directory ---------------
def test_paired_control_is_handed_in_and_the_cli_finds_it_beside_the_variant(tmp_path: Path) -> None:
    from evalpipe.compare import Arms, PairedDesign, compare_runs
    from evalpipe.run.compare_files import write_compare
    from evalpipe.words.compare import paired_line

    root = tmp_path / "run"
    for name in ("fp8", "bf16"):
        b = clean_run(root / name)
        assert b.config is not None and b.verification is not None
        b.config["variants"] = [{"name": "fp8"}, {"name": "bf16"}]
        b.verification.variant = name
        b.write()
    comparison = compare_runs(PairedDesign(Arms(root / "fp8", root / "bf16", "FP8", "BF16")))
    write_compare(comparison, root)  # RUN/compare.json, where `evalpipe run` writes it for two variants
    cited = "; ".join(paired_line(b, "FP8", "BF16") for b in comparison.benchmarks) + " (compare.json)"
    assert cited.startswith("FP8 vs BF16 (ifeval): +0.0 pts")

    # the audit reads only its own directory: RUN/compare.json is not looked at
    alone = audit_run(root / "fp8", write=False)
    assert alone.paired_control == "variants fp8, bf16 configured; this run directory is variant fp8"
    # handed in (as `evalpipe run` does after comparing the variants) it is cited, in the limitations too
    for name in ("fp8", "bf16"):
        s = audit_run(root / name, write=False, comparison=comparison)
        assert s.paired_control == cited
        assert (
            f"Paired control: {cited}; the paired difference is in the compare stage's output."
            in s.limitations
        )
    # a comparison of two other runs is not this variant's paired control
    other = comparison.model_copy(update={"run_a": str(tmp_path / "x"), "run_b": str(tmp_path / "y")})
    assert audit_run(root / "fp8", write=False, comparison=other).paired_control == alone.paired_control
    # `evalpipe audit RUN/fp8` finds RUN/compare.json itself and writes the same summary
    assert run_cli(["audit", str(root / "fp8")]) == 0
    written = json.loads((root / "fp8" / "summary.json").read_text())
    assert written["paired_control"] == cited
