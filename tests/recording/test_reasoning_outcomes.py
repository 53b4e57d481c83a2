"""Reasoning in outcomes: the split of reasoning from the answer (parsed or inline), reasoning tokens as the
server reported them, the budget failure taxonomy, the thinking-setting audit and the report lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures_rundir import Attempt, RunDirBuilder, Sample
from test_evalscope_outcomes import ENTRY, pred, review

from evalpipe.benchmarks import benchmark
from evalpipe.evalscope_bridge.outcomes import _Attempt, _row, classify
from evalpipe.recording.reasoning import split_message, split_text
from evalpipe.recording.recorder import build_attempt
from evalpipe.report.markdown import render_markdown
from evalpipe.report.sections.failures import failure_paragraph, reasoning_line
from evalpipe.run.audit import audit_run

# ---------------------------------------------------------------- the split


@pytest.mark.parametrize(
    ("text", "reasoning", "answer", "form"),
    [
        ("plain answer 42", "", "plain answer 42", "none"),
        ("<think>add 40 and 2</think>\n\\boxed{42}", "add 40 and 2", "\n\\boxed{42}", "think_block"),
        ("<think>add 40 and 2, then check", "add 40 and 2, then check", "", "unclosed_think"),
        # GLM: the template opened <think> in the prompt; the model only closes it
        ("add 40 and 2</think>The answer is 42.", "add 40 and 2", "The answer is 42.", "close_only"),
        ("add 40 and 2</think>", "add 40 and 2", "", "close_only"),
    ],
)
def test_inline_forms(text: str, reasoning: str, answer: str, form: str) -> None:
    got = split_text(text)
    assert (got.reasoning, got.answer, got.form) == (reasoning, answer, form)
    assert got.final_answer_present is bool(answer.strip())


def test_parsed_field_and_evalscope_parts_split_the_same_way() -> None:
    wire = split_message("The answer is 42.", reasoning_content="add 40 and 2")
    parts = split_message(
        [{"type": "reasoning", "reasoning": "add 40 and 2"}, {"type": "text", "text": "The answer is 42."}]
    )
    assert (
        (wire.reasoning, wire.answer)
        == (parts.reasoning, parts.answer)
        == ("add 40 and 2", "The answer is 42.")
    )
    only_thinking = split_message(
        [{"type": "reasoning", "reasoning": "still going"}, {"type": "text", "text": ""}]
    )
    assert only_thinking.reasoning == "still going" and not only_thinking.final_answer_present


# ---------------------------------------------------------------- classification and outcome fields


def _thinking_pred(stop: str, answer: str, reasoning: str = "step " * 50) -> dict:
    content = [{"type": "reasoning", "reasoning": reasoning}, {"type": "text", "text": answer}]
    return pred(content, stop=stop)  # type: ignore[arg-type]


def test_budget_in_reasoning_vs_truncated_answer() -> None:
    c = lambda p: classify(benchmark("gsm8k"), ENTRY, p, review({"acc": 0.0}, extracted=""), {}, punkt_tab=True)  # noqa: E731
    fclass, detail = c(_thinking_pred("max_tokens", ""))
    assert fclass == "budget_exhausted_in_reasoning" and "250 reasoning characters" in detail
    assert c(pred("<think>step step step", stop="max_tokens"))[0] == "budget_exhausted_in_reasoning"
    assert c(pred("step step step</think>", stop="max_tokens"))[0] == "budget_exhausted_in_reasoning"
    # thinking finished, the answer itself was cut off
    assert c(_thinking_pred("max_tokens", "The answer is"))[0] == "budget_exhausted"
    assert c(pred("Natalia sold 48 clips, then", stop="max_tokens"))[0] == "budget_exhausted"
    # not stopped by the budget: reasoning without an answer is just wrong/unparsable, not a budget class
    assert c(_thinking_pred("stop", ""))[0] == "unparsable_answer"


def test_outcome_row_reasoning_fields_and_reported_tokens() -> None:
    p = _thinking_pred("max_tokens", "", reasoning="x" * 120)
    thinking = _Attempt(p, review({"acc": 0.0}), 1, 1, {}, "budget_exhausted_in_reasoning", None)
    row = _row(ENTRY, thinking, None, {"chatcmpl-1": 2048})
    assert (row.reasoning_chars, row.answer_chars, row.final_answer_present) == (120, 0, False)
    assert row.reasoning_tokens == 2048
    # not in the request log: EvalScope's copy of completion_tokens_details, else None (never estimated)
    p2 = pred("<think>abc</think>42")
    p2["model_output"]["usage"]["reasoning_tokens"] = 7
    row2 = _row(ENTRY, _Attempt(p2, review({"acc": 1.0}), 1, 1, {}, "ok", None), None, {})
    assert (row2.reasoning_chars, row2.answer_chars, row2.reasoning_tokens) == (3, 2, 7)
    row3 = _row(ENTRY, _Attempt(pred("42"), review({"acc": 1.0}), 1, 1, {}, "ok", None), None, {})
    assert (row3.reasoning_chars, row3.reasoning_tokens, row3.final_answer_present) == (0, None, True)


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"prompt_tokens": 5, "completion_tokens": 9, "reasoning_tokens": 6}, 6),  # SGLang
        ({"completion_tokens": 9, "completion_tokens_details": {"reasoning_tokens": 4}}, 4),  # OpenAI
        ({"prompt_tokens": 5, "completion_tokens": 9}, None),
    ],
)
def test_recorder_reads_reasoning_tokens_where_either_server_puts_them(
    usage: dict, expected: int | None
) -> None:
    body = json.dumps(
        {
            "id": "rid-1",
            "choices": [
                {"message": {"content": "42", "reasoning_content": "think"}, "finish_reason": "stop"}
            ],
            "usage": usage,
        }
    ).encode()
    request = json.dumps({"model": "m", "messages": [], "chat_template_kwargs": {"enable_thinking": True}})
    meta = [
        "a1",
        0,
        0.0,
        1.0,
        1.0,
        "POST",
        "/v1/chat/completions",
        200,
        "application/json",
        None,
        False,
        None,
        False,
    ]
    attempt = build_attempt(meta, request.encode(), body)
    assert attempt.usage is not None and attempt.usage.reasoning_tokens == expected
    assert attempt.chat_template_kwargs == {"enable_thinking": True}


# ---------------------------------------------------------------- audit and report


def _thinking_run(tmp_path: Path, *, thinking: str, kwargs: dict | None) -> RunDirBuilder:
    b = RunDirBuilder(tmp_path / "run")
    assert b.config is not None
    b.config["model"].update({"reasoning_parser": "glm45", "thinking": thinking})
    a = dict(chat_template_kwargs=kwargs)
    b.add(
        Sample("gsm8k", "g1", attempts=[Attempt(**a)], reasoning_chars=900, reasoning_tokens=4096),
        Sample("gsm8k", "g2", attempts=[Attempt(**a)], reasoning_chars=300, reasoning_tokens=1024),
        Sample("gsm8k", "g3", attempts=[Attempt(**a)], reasoning_chars=0, reasoning_tokens=0),
        Sample(
            "ceval",
            "c1",
            stratum="law",
            score=0.0,
            failure_class="budget_exhausted_in_reasoning",
            attempts=[Attempt(**a, finish_reason="length")],
            reasoning_chars=99000,
            reasoning_tokens=32768,
        ),
    )
    return b


def test_audit_names_the_sample_and_report_shows_reasoning_lengths(tmp_path: Path) -> None:
    s = audit_run(_thinking_run(tmp_path, thinking="enabled", kwargs={"enable_thinking": True}).write().root,
                  write=False)  # fmt: skip
    found = [(f.severity, f.code, f.sample_ids) for f in s.findings if f.code.startswith("budget")]
    assert found == [("info", "budget_exhausted_in_reasoning", ["c1"])]
    assert not [f for f in s.findings if f.code == "thinking_setting_mismatch"]
    ceval = next(b for b in s.benchmarks if b.benchmark == "ceval")
    assert ceval.correct == 0 and ceval.reasoning is not None
    assert ceval.reasoning.share_of_budget is not None and ceval.reasoning.share_of_budget.max == 1.0
    gsm = next(b for b in s.benchmarks if b.benchmark == "gsm8k")
    assert gsm.reasoning is not None and (gsm.reasoning.with_reasoning, gsm.reasoning.responses) == (2, 3)
    assert reasoning_line(gsm) == (
        "GSM8K reasoning length: median 2,560 / p95 4,096 / max 4,096 tokens = 15.6 % / 25.0 % / 25.0 % of the "
        "16384-token budget (2 of 3 responses reasoned; tokens reported for 2)."
    )
    assert failure_paragraph(s).startswith(
        "One C-Eval response exhausted its 32768-token output budget without a final answer; it counts as "
        "incorrect."
    )
    md = render_markdown(s)
    assert "C-Eval reasoning length: median 32,768 / p95 32,768 / max 32,768 tokens = 100.0 %" in md


def test_reasoning_without_reported_tokens_is_not_estimated(tmp_path: Path) -> None:
    b = RunDirBuilder(tmp_path / "run")
    b.add(Sample("gsm8k", "g1", reasoning_chars=500), Sample("gsm8k", "g2", reasoning_chars=100))
    gsm = audit_run(b.write().root, write=False).benchmarks[0]
    assert (
        gsm.reasoning is not None and gsm.reasoning.tokens is None and gsm.reasoning.share_of_budget is None
    )
    assert "reported no reasoning-token counts" in reasoning_line(
        gsm
    ) and "median 300 / p95 500" in reasoning_line(gsm)


@pytest.mark.parametrize(
    ("thinking", "kwargs"),
    [("enabled", None), ("enabled", {"enable_thinking": False}), ("disabled", {"thinking": False}),
     ("model_default", {"enable_thinking": True})],
)  # fmt: skip
def test_audit_flags_requests_without_the_configured_thinking_setting(
    tmp_path: Path, thinking: str, kwargs: dict | None
) -> None:
    s = audit_run(_thinking_run(tmp_path, thinking=thinking, kwargs=kwargs).write().root, write=False)
    bad = [f for f in s.findings if f.code == "thinking_setting_mismatch"]
    assert len(bad) == 1 and bad[0].severity == "error" and len(bad[0].attempt_ids) == 4
    assert s.verdict == "audit_error"


@pytest.mark.parametrize(
    "wire",
    [
        "<think>add 40 and 2</think>\n\nThe answer is 42.\n",  # EvalScope cuts the block and strips the rest
        "add 40 and 2</think>The answer is 42.",  # GLM form: EvalScope leaves it as it is
        "<think>add 40 and 2, then",  # budget ran out while thinking
        "The answer is 42.\n",  # no reasoning: the text as it is
    ],
)
def test_proxy_and_bridge_hash_the_same_answer(wire: str) -> None:
    """The proxy hashes the wire content, the bridge EvalScope's parsed message: they must agree, or every
    inline-thinking response would be a response_content_mismatch."""
    from evalscope.api.messages import ChatMessageAssistant

    from evalpipe.hashing import message_text
    from evalpipe.recording.reasoning import answer_text

    parsed = ChatMessageAssistant(content=wire).model_dump()["content"]
    assert answer_text(message_text(parsed)) == answer_text(wire)
