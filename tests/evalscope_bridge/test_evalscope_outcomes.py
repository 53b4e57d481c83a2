"""Failure classification of outcome rows, from EvalScope-shaped prediction/review records."""

from __future__ import annotations

from evalpipe.artifacts.schema.evalscope import EvalscopeErrorRecord, IndexMapEntry
from evalpipe.benchmarks import benchmark as benchmark_plugin
from evalpipe.evalscope_bridge.outcomes import classify

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
    return classify(benchmark_plugin(benchmark), entry, p, r, errors or {}, punkt_tab=punkt)


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


def test_the_attempts_read_are_a_prefix_of_the_tasks_never_the_next_samples_rows() -> None:
    from evalpipe.evalscope_bridge.outcomes import _asked_numbers

    # a decision asking more attempts than the task holds (an edited pilot.json) cannot reach index
    # position x repeats + repeats: the next sample's first attempt
    assert list(_asked_numbers(lambda b, s: 3, "gsm8k", "a", 2)) == [0, 1]
    assert list(_asked_numbers(lambda b, s: 1, "gsm8k", "a", 2)) == [0]
    assert list(_asked_numbers(None, "gsm8k", "a", 2)) == [0, 1]
