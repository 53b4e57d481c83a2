"""The numerics comparison on what live SGLang 0.5.17 servers answered (../shared/sglang-live/logprobs/: SmolLM2-135M
on one H100, BF16 KV, a fresh BF16 relaunch and fp8_e4m3 KV, the same 60 prompts in the same order).

The asks' readers parse the live answers of both APIs (chat ``logprobs`` and ``/generate``'s prompt
log-probabilities), and the comparison reproduces the figures an independent analysis of the same answers
published beside them (``logprobs/results.md``, ``logprobs/generate/results.md``: numpy + scipy): A/A exactly
zero, the medians of the A/B divergences, and in each 12-prompt bucket the smallest p-value a signed-rank test
of 12 pairs can give.
"""

from __future__ import annotations

import json
import lzma
from pathlib import Path
from typing import Any

import pytest

from evalpipe.artifacts.schema.numerics import NumericsAnswer, NumericsComparison, NumericsProbe
from evalpipe.config.numerics import NumericsConfig
from evalpipe.numerics.asks.base import Ask
from evalpipe.numerics.asks.chat import ChatAsk
from evalpipe.numerics.asks.teacher_forced import TeacherForcedAsk
from evalpipe.numerics.compare import compare_numerics
from evalpipe.numerics.prompts import ProbePrompt

LIVE = Path(__file__).resolve().parents[2].parent / "shared" / "sglang-live" / "logprobs"
BUCKETS = {"short": 256, "1024": 1024, "2048": 2048, "4096": 4096, "7168": 7168}


def _items() -> dict[int, dict[str, Any]]:
    return {it["id"]: it for it in json.loads((LIVE / "prompts.json").read_text())["items"]}


def _probe(raw: Path, api: str, ask: Ask, cfg: NumericsConfig) -> NumericsProbe:
    items = _items()
    answers = []
    with lzma.open(raw, "rt") as lines:
        for line in lines:
            rec = json.loads(line)
            if rec["api"] != api:
                continue
            item = items[rec["item"]]
            prompt = ProbePrompt(
                id=str(item["id"]),
                length=BUCKETS[item["bucket"]],
                placement="interior",
                user_text=item["user"],
                token_ids=None,
                prompt_tokens=item.get("prompt_tokens_local"),
                continuation_tokens=64,
            )
            read = ask.read(prompt, rec["response"])
            answers.append(
                NumericsAnswer(
                    id=prompt.id,
                    length=prompt.length,
                    placement=prompt.placement,
                    prompt_sha256=prompt.sha256,
                    prompt_tokens=prompt.prompt_tokens,
                    server_prompt_tokens=read.server_prompt_tokens,
                    attempt_id=None,
                    status=rec["status"],
                    text=read.text,
                    generated=read.generated,
                    forced=read.forced,
                )
            )
    return NumericsProbe(
        config=cfg, ask=cfg.ask, edges={}, edges_from="none", tokenizer="words", seconds=0.0,
        prompt_tokens_sent=sum(a.server_prompt_tokens or 0 for a in answers), answers=answers,
    )  # fmt: skip


def _median(block: NumericsComparison, by: str, name: str, arm: str, stat: str) -> float | None:
    group = next(g for g in block.groups if g.by == by and g.name == name)
    spread = (group.ab if arm == "ab" else group.aa)[stat]
    return spread.median


@pytest.fixture(scope="module")
def chat() -> NumericsComparison:
    cfg = NumericsConfig(generated_tokens=16, lengths=list(BUCKETS.values()))
    bf16, again, fp8 = (
        _probe(LIVE / "raw" / f"{arm}_pass1.jsonl.xz", "chat", ChatAsk(), cfg)
        for arm in ("auto1", "auto2", "fp8")
    )
    return compare_numerics(fp8, bf16, again, labels=("fp8_e4m3", "bf16", "bf16 again"))


@pytest.fixture(scope="module")
def forced() -> NumericsComparison:
    cfg = NumericsConfig(ask="teacher_forced", tokenizer="gguf:smollm2", lengths=[256, 1024])
    gen = LIVE / "generate" / "raw"
    bf16, again, fp8 = (
        _probe(gen / f"{arm}_gen.jsonl.xz", "generate", TeacherForcedAsk(), cfg)
        for arm in ("auto", "auto2", "fp8")
    )
    return compare_numerics(fp8, bf16, again, labels=("fp8_e4m3", "bf16", "bf16 again"))


def test_chat_answers_reproduce_the_published_figures(chat: NumericsComparison) -> None:
    assert chat.prompts == 60 and not chat.missing and not chat.mismatched
    overall = chat.groups[0]
    assert overall.identical_aa == 60 and overall.identical_ab == 0  # A/A bit-identical, A/B never
    assert _median(chat, "all", "all", "aa", "kl0") == 0.0
    assert _median(chat, "all", "all", "ab", "kl0") == pytest.approx(0.00307, abs=5e-5)  # results.md: 0.00307
    assert _median(chat, "all", "all", "ab", "kl_pre") == pytest.approx(
        0.0071, abs=1e-4
    )  # results.md: 0.0071
    assert _median(chat, "length", "4096", "ab", "kl0") == pytest.approx(0.00487, abs=5e-5)
    for group in chat.groups[1:6]:
        assert group.shift is not None and group.shift.n == 12
        assert group.shift.p_value == pytest.approx(2.0**-12)  # results.md: 0.000244 in every bucket
        assert group.shift.lower is not None and group.shift.lower > 0
        assert group.shift.verdict == "above the A/A floor"
    assert chat.primary == "kl_pre"


def test_generate_answers_reproduce_the_published_figures(forced: NumericsComparison) -> None:
    overall = forced.groups[0]
    assert forced.prompts == 60 and overall.identical_aa == 60
    assert overall.identical_ab == 12  # the short prompts: one BF16 chunk, nothing read from the FP8 pool
    assert _median(forced, "all", "all", "ab", "kl_forced") == pytest.approx(0.00704, abs=5e-5)
    assert _median(forced, "length", "1024", "ab", "kl_forced") == pytest.approx(0.00477, abs=5e-5)
    assert _median(forced, "length", "7168", "ab", "kl_forced") == pytest.approx(0.00952, abs=5e-5)
    short = next(g for g in forced.groups if g.by == "length" and g.name == "256")
    assert (
        short.shift is not None and short.shift.nonzero == 0 and short.shift.verdict == "not enough prompts"
    )
    assert forced.primary == "kl_forced"
    assert overall.shift is not None and overall.shift.positive == 48 and overall.shift.above


def test_a_relaunch_against_itself_is_within_the_floor(chat: NumericsComparison) -> None:
    cfg = NumericsConfig(generated_tokens=16)
    bf16, again = (
        _probe(LIVE / "raw" / f"{a}_pass1.jsonl.xz", "chat", ChatAsk(), cfg) for a in ("auto1", "auto2")
    )
    noise = compare_numerics(again, bf16, bf16, labels=("bf16 again", "bf16", "bf16"), fail_above=0.0)
    assert noise.groups[0].shift is not None and noise.groups[0].shift.verdict == "not enough prompts"
    assert noise.gate is not None and noise.gate.passed
    gated = compare_numerics(
        _probe(LIVE / "raw" / "fp8_pass1.jsonl.xz", "chat", ChatAsk(), cfg), bf16, again,
        labels=("fp8", "bf16", "bf16 again"), fail_above=0.0,
    )  # fmt: skip
    assert gated.gate is not None and not gated.gate.passed
    assert gated.gate.lower == gated.groups[0].shift.lower  # type: ignore[union-attr]
