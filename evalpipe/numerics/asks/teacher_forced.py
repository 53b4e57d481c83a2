"""SGLang's native ``/generate`` with ``return_logprob``: the log-probabilities of a fixed continuation inside
the prompt (teacher forcing), on identical contexts in every arm, however the greedy tokens would go.

The body sends the prompt's token ids with ``logprob_start_len = L − c − 1`` for a continuation of ``c``
tokens ending at ``L``: SGLang 0.5.17 answers ``meta_info.input_token_logprobs`` from that position on as
``[logprob, token_id, text]`` with the first entry's log-probability null (it prepends None and drops the
sampling position), so entries 1 … c are the continuation's; ``input_top_logprobs`` likewise (its first entry
null), ``output_token_logprobs``/``output_top_logprobs`` the one generated token (seen live,
``../shared/sglang-live/logprobs/generate/``).  Token texts are not asked for
(``return_text_in_logprobs`` off), so the top-k is keyed by token id."""

from __future__ import annotations

from typing import Any

from evalpipe.artifacts.schema.numerics import DivergenceName, NumericsStep
from evalpipe.config.numerics import NumericsAsk, NumericsConfig
from evalpipe.numerics.asks.base import AnswerError, ReadAnswer
from evalpipe.numerics.prompts import ProbePrompt
from evalpipe.stats.divergence import merge_duplicates


def _step(token: Any, top: Any, where: str) -> NumericsStep:
    try:
        logprob, token_id = token[0], token[1]
        entries = [(str(t[1]), float(t[0])) for t in top if t is not None and t[0] is not None]
        return NumericsStep(
            token=str(token_id),
            logprob=None if logprob is None else float(logprob),
            top=merge_duplicates(entries),
        )
    except (IndexError, TypeError, ValueError):
        raise AnswerError(f"{where} is not [logprob, token_id, text]") from None


class TeacherForcedAsk:
    name: NumericsAsk = "teacher_forced"
    path = "/generate"
    primary: DivergenceName = "kl_forced"

    def body(self, prompt: ProbePrompt, cfg: NumericsConfig, model: str) -> dict[str, Any]:
        if prompt.token_ids is None:
            raise ValueError("teacher_forced prompts are token ids")
        body: dict[str, Any] = {
            "input_ids": list(prompt.token_ids),
            "sampling_params": {"temperature": 0, "max_new_tokens": 1},
            "return_logprob": True,
            "logprob_start_len": len(prompt.token_ids) - prompt.continuation_tokens - 1,
            "top_logprobs_num": cfg.top_k,
        }
        body.update(cfg.extra_request_body)
        return body

    def read(self, prompt: ProbePrompt, answer: dict[str, Any]) -> ReadAnswer:
        meta = answer.get("meta_info") if isinstance(answer, dict) else None
        if not isinstance(meta, dict):
            raise AnswerError("the answer has no meta_info (is this SGLang's /generate?)")
        tokens, tops = meta.get("input_token_logprobs"), meta.get("input_top_logprobs")
        c = prompt.continuation_tokens
        if (
            not isinstance(tokens, list)
            or not isinstance(tops, list)
            or len(tokens) != c + 1
            or len(tops) != c + 1
        ):
            raise AnswerError(
                f"meta_info.input_token_logprobs/input_top_logprobs: expected {c + 1} entries (the first null), "
                f"got {len(tokens) if isinstance(tokens, list) else 'none'}"
            )
        forced = [_step(tokens[i], tops[i] or [], f"input_token_logprobs[{i}]") for i in range(1, c + 1)]
        generated = []
        out_tokens, out_tops = meta.get("output_token_logprobs"), meta.get("output_top_logprobs")
        if isinstance(out_tokens, list) and isinstance(out_tops, list) and out_tokens and out_tops:
            generated = [_step(out_tokens[0], out_tops[0] or [], "output_token_logprobs[0]")]
        prompt_tokens = meta.get("prompt_tokens")
        text = answer.get("text")
        return ReadAnswer(
            generated=generated,
            forced=forced,
            text=text if isinstance(text, str) else None,
            server_prompt_tokens=prompt_tokens if isinstance(prompt_tokens, int) else None,
        )
