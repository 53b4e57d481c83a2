"""LiveCodeBench as a plugin: EvalScope's test result codes → failure classes, the rows written for the
adapter, and the benchmark's own hooks as the outcome table calls them (no other module names it)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from evalpipe.benchmarks import benchmark
from evalpipe.benchmarks.live_code_bench import adapter_row
from evalpipe.benchmarks.live_code_bench.result_codes import classify_code
from evalpipe.errors import DataError

# ---------------------------------------------------------------- result codes (moved from test_evalscope_outcomes)


def review_score(results: list, meta: dict, extracted: str = "print(1)") -> dict:
    return {
        "value": {"acc": 0.0},
        "extracted_prediction": extracted,
        "main_score_name": "acc",
        "metadata": {"eval_results": {"0": [results]}, "final_metadata": [[json.dumps(meta)]]},
    }


@pytest.mark.parametrize(
    ("results", "meta", "extracted", "expected"),
    [
        ([-4], {"error": "IndexError('list index out of range')", "error_code": -4}, "x", ("code_runtime_error", "IndexError")),
        ([True, -4], {"error": "ZeroDivisionError('division by zero')"}, "x", ("code_runtime_error", "ZeroDivisionError")),
        ([-3], {"error": "TimeoutException", "error_code": -3, "error_message": "Time Limit Exceeded"}, "x",
         ("code_timeout", "Time Limit Exceeded")),
        ([-2], {}, "x", ("code_timeout", "no result from the test process (global timeout or crash)")),
        ([True, -2], {"error_code": -2, "error_message": "Wrong answer at output_line_idx=0: 1 != 2"}, "x",
         ("code_wrong_answer", "Wrong answer at output_line_idx=0: 1 != 2")),
        ([False], {"error_code": -2, "error_message": "Wrong Answer"}, "x", ("code_wrong_answer", "Wrong Answer")),
        ([-4], {"error_code": -4, "error_message": "Error during testing: invalid syntax"}, "def f(:\n  pass",
         ("code_compile_error", "SyntaxError: invalid syntax (line 1)")),
    ],
)  # fmt: skip
def test_failure_classes_from_result_codes(
    results: list, meta: dict, extracted: str, expected: tuple
) -> None:
    fclass, detail = classify_code(review_score(results, meta, extracted))
    assert fclass == expected[0]
    assert detail == expected[1] or (expected[0] == "code_compile_error" and detail.startswith("SyntaxError"))


def test_unparsable_harness_error_and_load_error() -> None:
    assert classify_code(review_score([-4], {}, extracted=""))[0] == "unparsable_answer"
    harness = {"value": {"acc": 0.0}, "extracted_prediction": "x", "metadata": {"error": "spawn failed"}}
    assert classify_code(harness) == ("scoring_error", "test harness failed: spawn failed")
    fclass, detail = classify_code(
        review_score(
            [-4], {"error_code": -4, "error_message": "Error during testing: name 'q' is not defined"}, "q()"
        )
    )
    assert fclass == "code_runtime_error" and "type not reported" in detail


# ---------------------------------------------------------------- rows for the adapter (moved from test_evalscope_materialize)


def test_private_test_cases_rules() -> None:
    base = {"question_id": "q", "contest_date": datetime(2025, 1, 4), "public_test_cases": "[]"}
    assert adapter_row(base, pinned=False, where="f:1")["private_test_cases"] == "[]"
    assert (
        adapter_row({**base, "private_test_cases": ""}, pinned=False, where="f:1")["private_test_cases"]
        == "[]"
    )
    assert adapter_row(base, pinned=False, where="f:1")["contest_date"] == "2025-01-04T00:00:00"
    ok = adapter_row(
        {**base, "private_test_cases": '[{"input": "1", "output": "2"}]'}, pinned=False, where="f:1"
    )
    assert ok["private_test_cases"] == '[{"input": "1", "output": "2"}]'
    pickled = {
        **base,
        "private_test_cases": "eJxrYJmqxgABPAEYAQQ=",
    }  # base64/zlib/pickle, as upstream LiveCodeBench
    with pytest.raises(DataError, match=r"not JSON.*not pinned"):
        adapter_row(pickled, pinned=False, where="f:7")
    assert (
        adapter_row(pickled, pinned=True, where="f:7")["private_test_cases"] == pickled["private_test_cases"]
    )
    with pytest.raises(DataError, match="JSON list"):
        adapter_row({**base, "private_test_cases": '{"a": 1}'}, pinned=True, where="f:1")


# ---------------------------------------------------------------- the hooks the outcome table calls


def test_outcome_classification_asks_the_plugin() -> None:
    """``outcomes.classify`` names no benchmark: a wrong program's class comes from this plugin's hook."""
    from evalpipe.evalscope_bridge.outcomes import classify
    from evalpipe.schema.evalscope import IndexMapEntry

    entry = IndexMapEntry(
        benchmark="live_code_bench", subset="release_v6", index=0, source_id="q", record_sha256="r",
        stratum="easy", question="Q?",
    )  # fmt: skip
    pred = {
        "index": 0,
        "model_output": {"id": "r1", "choices": [{"message": {"content": "x"}, "stop_reason": "stop"}]},
    }
    score = review_score([-4], {"error": "IndexError('list index out of range')", "error_code": -4}, "x")
    rev = {"index": 0, "sample_score": {"score": score}}
    assert classify("live_code_bench", entry, pred, rev, {}, punkt_tab=True) == (
        "code_runtime_error",
        "IndexError",
    )
    assert benchmark("live_code_bench").classify_wrong(score) == classify_code(score)


def test_post_review_records_how_the_review_ran(tmp_path: Path) -> None:
    """A reviewed program that did not time out keeps its class and records EvalScope's review limits;
    a review without test results is left as it is (nothing ran)."""
    from evalpipe.benchmarks.base import ReviewContext
    from evalpipe.schema.evalscope import IndexMap
    from evalpipe.schema.outcomes import OutcomeRow

    row = OutcomeRow(
        benchmark="live_code_bench", subset="release_v6", index=0, source_id="q", stratum="easy",
        prediction_present=True, review_present=True, n_predictions=1, n_reviews=1, score=0.0,
        failure_class="code_wrong_answer", failure_detail="Wrong Answer",
    )  # fmt: skip
    context = ReviewContext("live_code_bench", tmp_path, IndexMap(datasets=[], entries=[]))
    score = review_score([True, False, True], {"error_code": -2, "error_message": "Wrong Answer"})
    score["metadata"]["timeout"] = 6
    out = benchmark("live_code_bench").post_review(row, score, context)
    assert (out.failure_class, out.failure_detail, out.score) == ("code_wrong_answer", "Wrong Answer", 0.0)
    e = out.code_execution
    assert e is not None and (e.mode, e.limit_clock, e.per_test_limit_s, e.tests, e.global_limit_s) == (
        "evalscope_review", "wall_from_interpreter_spawn", 6.0, 3, 21.0,
    )  # fmt: skip
    harness = {"value": {"acc": 0.0}, "extracted_prediction": "x", "metadata": {"error": "spawn failed"}}
    assert benchmark("live_code_bench").post_review(row, harness, context) is row


def test_test_processes_start_in_the_runs_sandbox(tmp_path: Path) -> None:
    """The re-check's test process starts through the run's ``ProgramLauncher``: in bwrap a program cannot
    see a file outside its view (a runtime error naming the denial), unsandboxed it reads it — the same
    program, the same launcher seam; a correct program passes in both."""
    from evalpipe.benchmarks.live_code_bench.recheck import recheck
    from evalpipe.sandbox.launcher import ProgramLauncher

    planted = tmp_path / "planted.txt"
    planted.write_text("6\n")
    tests = json.dumps({"inputs": ["3\n1 2 3"], "outputs": ["6"], "fn_name": None})
    reads = f"print(open({str(planted)!r}).read())"
    correct = "n = int(input())\nprint(sum(map(int, input().split())))"
    for kind in ("bwrap", "none"):
        launcher = ProgramLauncher.for_sandbox(kind)
        r = recheck(correct, tests, 2.0, "code_timeout", None, launcher)
        assert (r.failure_class, r.passed, r.execution.tests, r.execution.sandbox) == ("ok", True, 1, kind)
    boxed = recheck(reads, tests, 2.0, "code_timeout", None, ProgramLauncher.for_sandbox("bwrap"))
    assert (boxed.failure_class, boxed.failure_detail) == (
        "code_runtime_error", "FileNotFoundError; denied by the sandbox: filesystem",
    )  # fmt: skip
    assert [d.kind for d in boxed.execution.denied] == ["filesystem"]
    host = recheck(reads, tests, 2.0, "code_timeout", None, ProgramLauncher.for_sandbox("none"))
    assert (host.failure_class, host.passed, host.execution.denied) == ("ok", True, [])
