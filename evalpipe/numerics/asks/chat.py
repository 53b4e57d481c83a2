"""OpenAI chat completions with ``logprobs``/``top_logprobs``: every engine here answers them (llama.cpp,
SGLang, vLLM).  Greedy (temperature 0) for ``generated_tokens`` steps; each step's entry is
``{token, logprob, top_logprobs: [{token, logprob}, …]}`` keyed by decoded text, as SGLang 0.5.17 and
llama.cpp answer (``../shared/sglang-live/logprobs/raw``).  The prompt's own log-probabilities are not
available this way (llama.cpp has no echo), so the steps compared are the generated ones up to the first
differing token."""

from __future__ import annotations

from typing import Any

from evalpipe.artifacts.schema.numerics import DivergenceName, NumericsStep
from evalpipe.config.numerics import NumericsAsk, NumericsConfig
from evalpipe.numerics.asks.base import AnswerError, ReadAnswer
from evalpipe.numerics.prompts import ProbePrompt
from evalpipe.stats.divergence import merge_duplicates


class ChatAsk:
    name: NumericsAsk = "chat"
    path = "/v1/chat/completions"
    primary: DivergenceName = "kl_pre"

    def body(self, prompt: ProbePrompt, cfg: NumericsConfig, model: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model,
            "messages": prompt.messages,
            "max_tokens": cfg.generated_tokens,
            "temperature": 0,
            "logprobs": True,
            "top_logprobs": cfg.top_k,
            "stream": False,
        }
        body.update(cfg.extra_request_body)
        return body

    def read(self, prompt: ProbePrompt, answer: dict[str, Any]) -> ReadAnswer:
        try:
            choice = answer["choices"][0]
            content = (choice.get("logprobs") or {}).get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            raise AnswerError("the answer has no choices[0]") from None
        if not isinstance(content, list) or not content:
            raise AnswerError("the answer has no logprobs.content (does the server return logprobs?)")
        steps = []
        for i, entry in enumerate(content):
            try:
                top = merge_duplicates([(t["token"], float(t["logprob"])) for t in entry["top_logprobs"]])
                steps.append(NumericsStep(token=entry["token"], logprob=float(entry["logprob"]), top=top))
            except (KeyError, TypeError, ValueError):
                raise AnswerError(f"logprobs.content[{i}] is not {{token, logprob, top_logprobs}}") from None
        usage = answer.get("usage") or {}
        prompt_tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        message = choice.get("message") or {}
        return ReadAnswer(
            generated=steps,
            text=message.get("content") if isinstance(message, dict) else None,
            server_prompt_tokens=prompt_tokens if isinstance(prompt_tokens, int) else None,
        )
