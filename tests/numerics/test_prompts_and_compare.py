"""The probe's prompts (exact served lengths at the edges, the same every time) and the paired comparison on
answers built by hand (first divergence, identical answers, missing and mismatched prompts, the gate)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from evalpipe.artifacts.schema.numerics import NumericsAnswer, NumericsProbe, NumericsStep
from evalpipe.config.numerics import NumericsConfig
from evalpipe.numerics.asks.chat import ChatAsk
from evalpipe.numerics.asks.teacher_forced import TeacherForcedAsk
from evalpipe.numerics.compare import compare_numerics, divergence
from evalpipe.numerics.cost import cost_line, probe_cost
from evalpipe.numerics.prompts import build_prompts, placements, resolve_served_tokens

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def served():  # type: ignore[no-untyped-def]
    tokens = resolve_served_tokens("gguf:smollm2", REPO)
    assert tokens is not None
    return tokens


def test_placements_end_before_on_and_after_each_edge() -> None:
    assert placements(1024, {"page": 64, "chunk": 256}) == [
        ("interior", 1056),
        ("chunk-1", 1023), ("chunk+0", 1024), ("chunk+1", 1025),
        ("page-1", 1023), ("page+0", 1024), ("page+1", 1025),
    ]  # fmt: skip
    assert placements(128, {"chunk": 512, "page": 1}) == [("interior", 128)]  # an edge above or of 1: none


def test_chat_prompts_have_the_exact_served_length(served) -> None:  # type: ignore[no-untyped-def]
    cfg = NumericsConfig(lengths=[100, 600], prompts_per_cell=2, tokenizer="gguf:smollm2")
    prompts, dropped = build_prompts(cfg, {"chunk": 256}, served)
    assert not dropped and len(prompts) == 2 * (1 + 3) + 2  # 100: interior only (edge above it); 600: 4 cells
    for p in prompts:
        rendered = served.head + p.user_text + served.tail
        assert (
            p.prompt_tokens
            == served.count(rendered)
            == dict(placements(p.length, {"chunk": 256}))[p.placement]
        )
    again, _ = build_prompts(cfg, {"chunk": 256}, served)
    assert [p.sha256 for p in again] == [p.sha256 for p in prompts]  # seeded: the same in every arm
    assert len({p.sha256 for p in prompts}) == len(prompts)


def test_teacher_forced_prompts_end_with_the_continuation(served) -> None:  # type: ignore[no-untyped-def]
    cfg = NumericsConfig(ask="teacher_forced", lengths=[300], prompts_per_cell=1, tokenizer="gguf:smollm2",
                         continuation_tokens=32)  # fmt: skip
    prompts, _ = build_prompts(cfg, {"page": 64}, served)
    for p in prompts:
        assert (
            p.token_ids is not None and len(p.token_ids) == dict(placements(300, {"page": 64}))[p.placement]
        )
        body = TeacherForcedAsk().body(p, cfg, "m")
        assert body["logprob_start_len"] == len(p.token_ids) - 33
        assert body["sampling_params"] == {"temperature": 0, "max_new_tokens": 1}


def test_lengths_beyond_the_served_context_are_dropped(served) -> None:  # type: ignore[no-untyped-def]
    cfg = NumericsConfig(lengths=[64, 4096], tokenizer="gguf:smollm2", prompts_per_cell=1)
    prompts, dropped = build_prompts(cfg, {}, served, max_prompt_tokens=2040)
    assert dropped == [4096] and {p.length for p in prompts} == {64}


def test_bad_configs_are_refused() -> None:
    with pytest.raises(ValidationError, match="teacher_forced sends token ids"):
        NumericsConfig(ask="teacher_forced")
    with pytest.raises(ValidationError):
        NumericsConfig(top_k=21)
    with pytest.raises(ValidationError, match="stream"):
        NumericsConfig(extra_request_body={"stream": True})


def _step(token: str, top: dict[str, float]) -> NumericsStep:
    return NumericsStep(token=token, logprob=top.get(token), top=top)


def _answer(pid: str, steps: list[NumericsStep], *, sha: str = "s", text: str = "t") -> NumericsAnswer:
    return NumericsAnswer(id=pid, length=128, placement="interior", prompt_sha256=sha, prompt_tokens=128,
                          server_prompt_tokens=128, attempt_id="a", status=200, text=text, generated=steps)  # fmt: skip


def _probe(answers: list[NumericsAnswer], **cfg: object) -> NumericsProbe:
    return NumericsProbe(config=NumericsConfig(**cfg), ask="chat", edges={}, edges_from="none",  # type: ignore[arg-type]
                         tokenizer="words", seconds=1.0, prompt_tokens_sent=128 * len(answers), answers=answers)  # fmt: skip


def test_divergence_runs_over_the_steps_up_to_the_first_differing_token() -> None:
    a = {"x": math.log(0.6), "y": math.log(0.3)}
    b = {"x": math.log(0.5), "y": math.log(0.4)}
    ref = _answer("p", [_step("x", a), _step("x", a), _step("y", a)])
    other = _answer("p", [_step("x", a), _step("y", b), _step("x", b)])
    d = divergence(ref, other)
    assert d.first_divergence == 1 and d.steps_compared == 2 and not d.identical
    assert d.kl0 == 0.0 and d.dlp0 == 0.0
    assert (
        d.kl_pre is not None
        and d.kl_pre > 0
        and d.dlp_pre == pytest.approx(abs(math.log(0.6) - math.log(0.5)) / 2)
    )
    assert divergence(ref, ref).identical and divergence(ref, ref).first_divergence is None


def test_comparison_leaves_out_missing_and_mismatched_prompts_and_gates_on_the_bound() -> None:
    a = {"x": math.log(0.6), "y": math.log(0.3)}
    ref = [_answer(f"p{i}", [_step("x", a)]) for i in range(8)]
    moved = [
        _answer(f"p{i}", [_step("x", {"x": math.log(0.6 - 0.02 * (i + 1)), "y": math.log(0.3)})])
        for i in range(8)
    ]
    moved[7] = moved[7].model_copy(update={"prompt_sha256": "other"})
    aa = ref[:6]  # p6 and p7 missing in the A/A arm
    block = compare_numerics(
        _probe(moved), _probe(ref), _probe(aa), labels=("t", "c", "c again"), fail_above=0.0
    )
    assert block.prompts == 6 and block.missing == ["p6", "p7"] and block.mismatched == []
    overall = block.groups[0]
    assert overall.identical_aa == 6 and overall.shift is not None and overall.shift.above
    assert block.gate is not None and not block.gate.passed and block.gate.lower == overall.shift.lower
    lenient = compare_numerics(
        _probe(moved), _probe(ref), _probe(aa), labels=("t", "c", None), fail_above=1.0
    )
    assert lenient.gate is not None and lenient.gate.passed
    no_aa = compare_numerics(_probe(moved), _probe(ref), None, labels=("t", "c", None), fail_above=0.0)
    assert no_aa.groups[0].shift is None and no_aa.gate is not None and not no_aa.gate.passed


def test_chat_answers_without_logprobs_are_an_error_naming_why() -> None:
    from evalpipe.numerics.asks.base import AnswerError
    from evalpipe.numerics.prompts import ProbePrompt

    prompt = ProbePrompt("p", 128, "interior", "hi", None, None, 0)
    with pytest.raises(AnswerError, match=r"no logprobs\.content"):
        ChatAsk().read(prompt, {"choices": [{"message": {"content": "x"}}]})


def test_the_plan_prices_the_probe() -> None:
    cfg = NumericsConfig(lengths=[128, 512], prompts_per_cell=2, edges={"chunk": 512}, generated_tokens=4)
    cost = probe_cost(cfg)
    assert (
        cost.requests == 10
        and cost.prompt_tokens == 2 * (128 + 768 + 511 + 512 + 513)
        and cost.generated_tokens == 40
    )
    assert "10 requests per arm × 3 arm(s)" in cost_line(cfg, 3)
    assert "not counted" in cost_line(NumericsConfig(), 3)
