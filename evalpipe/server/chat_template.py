"""What a request must carry for the configured thinking mode: chat-template knowledge, not server flags.

A thinking model's chat template switches reasoning on or off through a ``chat_template_kwargs`` entry whose
name depends on the model family.  SGLang picks it per reasoning parser, so the parser name
(``model.reasoning_parser``) identifies the family; the same toggle applies to any server that renders
the model's template (it is sent in the request, never on a server's command line).  The bridge sends it
(``evalscope_bridge.task``), the audit checks every recorded request carried it (``audit.checks``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalpipe.errors import ConfigError

if TYPE_CHECKING:
    from evalpipe.config.models import RunConfig

#: ``model.reasoning_parser`` value for a model without reasoning (no parser, no toggle).
NO_REASONING_PARSER = "none"

# The chat-template kwarg that switches thinking on/off, per reasoning parser.  SGLang 0.5.23 derives it
# from each detector's ``reasoning_default`` (``serving_chat.py::_get_reasoning_toggle_param``: the mode
# with any ``explicit_`` prefix removed); values read from ``srt/parser/reasoning_parser.py``.  Parsers not
# listed (always-on ones such as deepseek-r1, or effort-controlled ones) have no boolean toggle.
THINKING_TOGGLE: dict[str, str] = {
    "glm45": "enable_thinking",  # Glm45Detector: reasoning_default="enable_thinking"
    "ling3": "enable_thinking",
    "qwen3": "enable_thinking",  # Qwen3Detector, also behind dots/minimax/nanbeige/interns1
    "qwen3-thinking": "enable_thinking",
    "dots": "enable_thinking",
    "minimax": "enable_thinking",
    "nanbeige": "enable_thinking",
    "interns1": "enable_thinking",
    "nemotron_3": "enable_thinking",
    "granite_thinking_parser": "enable_thinking",
    "gemma4": "enable_thinking",  # explicit_enable_thinking
    "deepseek-v3": "thinking",  # _DeepSeekV3Detector: explicit_thinking (not enable_thinking)
    "deepseek-v4": "thinking",
    "deepseek-v41": "thinking",
    "kimi_k2": "thinking",
    "kimi_k3": "thinking",
}


def thinking_kwargs(cfg: RunConfig) -> dict[str, bool] | None:
    """``chat_template_kwargs`` every request must carry for ``model.thinking`` (None: send none).

    ConfigError (naming the field) when thinking is switched on or off for a model whose reasoning parser
    has no boolean toggle, or without a reasoning parser at all.
    """
    mode = cfg.model.thinking
    if mode == "model_default":
        return None
    parser = cfg.model.reasoning_parser
    if parser == NO_REASONING_PARSER:
        raise ConfigError(
            f"model.thinking: {mode} needs model.reasoning_parser (the toggle depends on the model family); "
            "use thinking: model_default for a model without reasoning"
        )
    toggle = THINKING_TOGGLE.get(parser)
    if toggle is None:
        raise ConfigError(
            f"model.thinking: {mode}: reasoning parser {parser!r} has no chat-template thinking toggle "
            f"(known: {', '.join(sorted(THINKING_TOGGLE))}); use thinking: model_default"
        )
    return {toggle: mode == "enabled"}
