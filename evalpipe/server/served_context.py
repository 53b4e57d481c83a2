"""The context one request may use, as a server resolved it in ``/server_info``.

evalpipe's llama.cpp launcher reports the per-slot context (``n_ctx_per_slot``); SGLang its
``context_length`` or, once a model is loaded, the longest prompt it accepts (``max_req_input_len``, in its
first ``internal_states`` entry).  Keys are tried in that order of trust; the first positive integer wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

#: What a context value bounds: prompt + output ("total") or the prompt alone ("input").
ContextScope = Literal["total", "input"]

#: ``/server_info`` keys that bound one request's tokens, in the order they are trusted.
CONTEXT_KEYS: tuple[tuple[str, ContextScope], ...] = (
    ("n_ctx_per_slot", "total"),
    ("context_length", "total"),
    ("max_req_input_len", "input"),
)


def served_context(info: Mapping[str, Any]) -> tuple[int, ContextScope, str] | None:
    """``(tokens, scope, source)`` from a ``/server_info`` payload, or None when it names no context."""
    states = info.get("internal_states")
    candidates: list[Mapping[str, Any]] = [info]
    if isinstance(states, list) and states and isinstance(states[0], dict):
        candidates.append(states[0])
    for key, scope in CONTEXT_KEYS:
        for source in candidates:
            value = source.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value, scope, f"{key} from /server_info"
    return None
