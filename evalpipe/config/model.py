"""``model:`` — the model under test."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from evalpipe.config.base import Strict


class ModelConfig(Strict):
    """The model under test."""

    path: str = Field(description="Model weights directory (or hub id) passed to the server as --model-path.")
    served_name: str = Field(
        description="Name the server serves the model under; the `model` field of requests."
    )
    chat_template: Literal["native"] | str = Field(
        default="native",
        description="'native' = the tokenizer's own chat template; otherwise a template path.",
    )
    thinking: Literal["model_default", "enabled", "disabled"] = Field(
        default="model_default",
        description="Reasoning mode; model_default sends no chat_template_kwargs. enabled/disabled send the "
        "toggle the reasoning parser's model family understands (glm45: enable_thinking; deepseek-v3: "
        "thinking).",
    )
    reasoning_parser: Annotated[str, Field(min_length=1)] = Field(
        default="none",
        description="SGLang --reasoning-parser (e.g. 'glm45'); 'none' = not a reasoning model (flag not passed). "
        "Checked against the installed SGLang's parser list at preflight and against /server_info.",
    )
    tool_call_parser: Annotated[str, Field(min_length=1)] | None = Field(
        default=None, description="SGLang --tool-call-parser (e.g. 'glm47'); unset = flag not passed."
    )
    tokenizer_path: str | None = None
    context_length: Annotated[int, Field(gt=0)] | None = Field(
        default=None,
        description="Tokens the server accepts (prompt + output) for the preflight's prompt-length check; "
        "default: max_position_embeddings of a local model's config.json.",
    )
