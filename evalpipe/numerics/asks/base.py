"""What a way of asking provides: the route, the request body for one prompt, and the steps read back from
the server's answer (``NumericsStep``: the token, its log-probability, the top-k by decoded text)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from evalpipe.artifacts.schema.numerics import DivergenceName, NumericsStep
from evalpipe.config.numerics import NumericsAsk, NumericsConfig
from evalpipe.numerics.prompts import ProbePrompt


class AnswerError(ValueError):
    """The server's answer holds no log-probabilities where the ask expects them (one line: why)."""


@dataclass
class ReadAnswer:
    """What one answer said: generated steps, teacher-forced steps, the text and the server's prompt count."""

    generated: list[NumericsStep] = field(default_factory=list)
    forced: list[NumericsStep] = field(default_factory=list)
    text: str | None = None
    server_prompt_tokens: int | None = None


class Ask(Protocol):
    """One way of asking (``numerics.ask``)."""

    name: NumericsAsk
    path: str
    #: The divergence the paired test and the gate read for this ask.
    primary: DivergenceName

    def body(self, prompt: ProbePrompt, cfg: NumericsConfig, model: str) -> dict[str, Any]:
        """The JSON request body for ``prompt``."""
        ...

    def read(self, prompt: ProbePrompt, answer: dict[str, Any]) -> ReadAnswer:
        """The steps of the server's JSON answer; raises :class:`AnswerError` when it holds none."""
        ...
