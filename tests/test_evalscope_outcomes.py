"""Failure classification of outcome rows, from EvalScope-shaped prediction/review records."""

from __future__ import annotations

import json

import pytest

from evalpipe.evalscope_bridge.outcomes import classify, classify_code
from evalpipe.schema.evalscope import EvalscopeErrorRecord, IndexMapEntry

ENTRY = IndexMapEntry(
    benchmark="gsm8k", subset="main", index=0, source_id="s", record_sha256="r", stratum="all", question="Q?"
)
IFEVAL_ENTRY = ENTRY.model_copy(
    update={
        "benchmark": "ifeval",
        "instruction_ids": ["length_constraints:number_sentences", "punctuation:no_comma"],
    }
)


def pred(content: str = "\\boxed{3}", stop: str = "stop", **output: object) -> dict:
    out = {
        "id": "chatcmpl-1",
        "choices": [{"message": {"role": "assistant", "content": content}, "stop_reason": stop}],
        "usage": {"input_tokens": 10, "output_tokens": 3},
        "time": 0.5,
        **output,
    }
    return {"index": 0, "model_output": out, "messages": [{"role": "user", "content": "Q?"}]}


def review(value: dict, extracted: str = "3", main: str = "acc", **score: object) -> dict:
    return {
        "index": 0,
        "target": ["3"],
        "sample_score": {
            "score": {"value": value, "extracted_prediction": extracted, "main_score_name": main, **score}
        },
    }


def err(phase: str, etype: str = "InternalServerError", msg: str = "Error code: 500") -> EvalscopeErrorRecord:
    return EvalscopeErrorRecord(
        benchmark="gsm8k", subset="main", index=0, phase=phase, error_type=etype, message=msg, at="2026-01-01"
    )


def c(benchmark: str, p, r, errors=None, punkt: bool = True, entry=ENTRY):  # type: ignore[no-untyped-def]
    return classify(benchmark, entry, p, r, errors or {}, punkt_tab=punkt)


def test_prediction_level_classes() -> None:
    assert c("gsm8k", None, None, {"predict": err("predict")}) == (
        "api_error",
        "InternalServerError: Error code: 500",
    )
    assert c("gsm8k", None, None) == ("missing_prediction", None)
    assert c("gsm8k", pred(error="connection reset"), None) == ("api_error", "connection reset")
    rejected = pred(
        "This model's maximum context length is 4096 tokens", stop="model_length", id=None, usage=None
    )
    fclass, detail = c("gsm8k", rejected, review({"acc": 0.0}))
    assert fclass == "api_error" and detail.startswith("request rejected by the server (model_length)")
    assert c("gsm8k", pred(), None) == ("missing_review", None)
    assert c("gsm8k", pred(), None, {"review": err("review", "ValueError", "bad")}) == (
        "scoring_error",
        "review raised ValueError: bad",
    )


def test_review_level_classes() -> None:
    assert c("gsm8k", pred(), review({"acc": 1.0})) == ("ok", None)
    assert c("gsm8k", pred(), review({"acc": 0.0}, extracted="4")) == ("wrong", None)
    assert c("ceval", pred("不知道"), review({"acc": 0.0}, extracted="")) == ("unparsable_answer", None)
    fclass, detail = c("gsm8k", pred(stop="max_tokens"), review({"acc": 1.0}))
    assert fclass == "budget_exhausted" and "scored the truncated answer 1" in detail
    assert c("gsm8k", pred(stop="max_tokens"), review({"acc": 0.0}))[0] == "budget_exhausted"


def test_empty_review_is_a_scoring_error_with_the_reason() -> None:
    p, r = pred("text"), review({}, extracted="text", main="prompt_level_strict")
    assert c("ifeval", p, r, punkt=False, entry=IFEVAL_ENTRY) == (
        "scoring_error",
        "NLTK punkt_tab is not installed; needed by length_constraints:number_sentences",
    )
    fclass, detail = c("ifeval", p, r, punkt=True, entry=IFEVAL_ENTRY)
    assert fclass == "scoring_error" and detail.startswith("review produced no score")
    excluded = review({"acc": 0.0}, status="excluded", explanation="metric unavailable")
    assert c("gsm8k", pred(), excluded) == ("scoring_error", "review produced no score: metric unavailable")


def lcb_score(results: list, meta: dict, extracted: str = "print(1)") -> dict:
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
def test_lcb_classes(results: list, meta: dict, extracted: str, expected: tuple) -> None:
    fclass, detail = classify_code(lcb_score(results, meta, extracted))
    assert fclass == expected[0]
    assert detail == expected[1] or (expected[0] == "code_compile_error" and detail.startswith("SyntaxError"))


def test_lcb_unparsable_harness_error_and_load_error() -> None:
    assert classify_code(lcb_score([-4], {}, extracted=""))[0] == "unparsable_answer"
    harness = {"value": {"acc": 0.0}, "extracted_prediction": "x", "metadata": {"error": "spawn failed"}}
    assert classify_code(harness) == ("scoring_error", "test harness failed: spawn failed")
    fclass, detail = classify_code(
        lcb_score(
            [-4], {"error_code": -4, "error_message": "Error during testing: name 'q' is not defined"}, "q()"
        )
    )
    assert fclass == "code_runtime_error" and "type not reported" in detail
