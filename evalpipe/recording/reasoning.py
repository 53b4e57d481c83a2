"""Separate a thinking model's reasoning from its final answer, whichever way the server delivered it.

A server with a reasoning parser (SGLang ``--reasoning-parser glm45``) returns ``message.reasoning_content``
next to ``message.content``; EvalScope keeps it as a ``{"type": "reasoning"}`` part of the content list.
Without a parser the thinking stays in ``content``, inline:

* ``<think>…</think>answer`` — a closed block (EvalScope already splits this one off into a reasoning part);
* ``<think>…`` with no close — the budget ran out while thinking: everything after the tag is reasoning;
* ``…</think>answer`` with no open tag — the GLM form: the chat template opens ``<think>`` inside the prompt
  and the model only closes it, so everything before the close tag is reasoning.

All forms give the same :class:`SplitAnswer`, so outcomes and the failure taxonomy do not depend on
whether the server parsed the reasoning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
_OPEN = re.compile(r"<think(?:\s[^>]*)?>")

ReasoningForm = Literal["none", "field", "think_block", "unclosed_think", "close_only"]


@dataclass(frozen=True)
class SplitAnswer:
    reasoning: str  # "" when the response holds no reasoning
    answer: str
    form: ReasoningForm

    @property
    def final_answer_present(self) -> bool:
        return bool(self.answer.strip())


def split_text(text: str) -> SplitAnswer:
    """Split inline reasoning off plain ``content`` text (the three inline forms above)."""
    m = _OPEN.search(text)
    close = text.find(THINK_CLOSE)
    if m is not None and (close == -1 or close > m.start()):
        after = text[m.end() :]
        end = after.find(THINK_CLOSE)
        if end == -1:
            return SplitAnswer(reasoning=after, answer=text[: m.start()], form="unclosed_think")
        answer = text[: m.start()] + after[end + len(THINK_CLOSE) :]
        return SplitAnswer(reasoning=after[:end], answer=answer, form="think_block")
    if close != -1:
        return SplitAnswer(reasoning=text[:close], answer=text[close + len(THINK_CLOSE) :], form="close_only")
    return SplitAnswer(reasoning="", answer=text, form="none")


def split_message(content: Any, reasoning_content: Any = None) -> SplitAnswer:
    """Split a chat message: ``content`` is a string (OpenAI wire format) or a part list (EvalScope's
    ``[{"type": "reasoning", "reasoning": …}, {"type": "text", "text": …}]``); ``reasoning_content`` is
    the wire field a reasoning parser fills."""
    field_parts: list[str] = []
    if isinstance(reasoning_content, str) and reasoning_content:
        field_parts.append(reasoning_content)
    text_parts: list[str] = []
    if isinstance(content, str):
        text_parts.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                text_parts.append(part)
            elif isinstance(part, dict):
                if part.get("type") == "reasoning" and isinstance(part.get("reasoning"), str):
                    field_parts.append(part["reasoning"])
                elif isinstance(part.get("text"), str):
                    text_parts.append(part["text"])
    inline = split_text("".join(text_parts))
    if not field_parts:
        return inline
    reasoning = "".join(field_parts) + inline.reasoning
    return SplitAnswer(reasoning=reasoning, answer=inline.answer, form="field")


def answer_text(text: str) -> str:
    """The final-answer text of a response, as both the proxy (wire ``content``) and the EvalScope bridge
    (the prediction's text parts, from which EvalScope has already cut a closed ``<think>`` block and
    stripped the rest) see it, so that their hashes of one response agree: ``text`` unchanged when it holds
    no think tag, else the answer after the split, stripped."""
    if THINK_CLOSE not in text and _OPEN.search(text) is None:
        return text
    return split_text(text).answer.strip()
