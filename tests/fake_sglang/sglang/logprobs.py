"""Log-probabilities in the shape live SGLang 0.5.17 answers them (``../shared/sglang-live/logprobs/``): chat
``logprobs.content[i] = {token, bytes, logprob, top_logprobs}`` and ``/generate``'s ``meta_info``
``input_token_logprobs`` / ``input_top_logprobs`` (from ``logprob_start_len``, the first entry's log-probability
null) and ``output_*``, entries ``[logprob, token_id, null]``.

The numbers are a deterministic function of the context and the position, so two launches answer bit for bit
alike (the live A/A); an ``fp8_*`` KV cache adds a small seeded perturbation to every position past the first
prefill chunk of 256 tokens, as the live FP8 server moved long prompts and left one-chunk prompts untouched.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

VOCAB = 49152
CHUNK = 256


def _unit(*parts: object) -> float:
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _top(context: int, position: int, k: int, fp8: bool) -> list[tuple[float, int]]:
    """``k`` (logprob, token id) pairs, best first, normalised over the k plus a tail of 5 %."""
    raw = [3.0 * _unit(context, position, j) - 0.4 * j for j in range(k)]
    if fp8 and position >= CHUNK:
        raw = [r + 0.05 * (_unit("fp8", context, position, j) - 0.5) for j, r in enumerate(raw)]
    norm = math.log(sum(math.exp(r) for r in raw) / 0.95)
    ids = [(context * 31 + position * 7 + j * 13) % VOCAB for j in range(k)]
    return sorted(((r - norm, t) for r, t in zip(raw, ids, strict=True)), reverse=True)


def generate_answer(body: dict[str, Any], kv_cache_dtype: str, rid: str) -> dict[str, Any]:
    ids = [int(t) for t in body.get("input_ids") or []]
    start = int(body.get("logprob_start_len", len(ids) - 1))
    k = int(body.get("top_logprobs_num") or 0)
    fp8 = kv_cache_dtype.startswith("fp8")
    context = int.from_bytes(hashlib.sha256(repr(ids[:16]).encode()).digest()[:4], "big")
    token_logprobs: list[list[Any]] = [[None, ids[start], None]]
    tops: list[Any] = [None]
    for pos in range(start + 1, len(ids)):
        top = _top(context, pos, k, fp8)
        own = dict((t, lp) for lp, t in top).get(ids[pos], top[-1][0] - 1.0)
        token_logprobs.append([own, ids[pos], None])
        tops.append([[lp, t, None] for lp, t in top])
    out_top = _top(context, len(ids), k, fp8)
    return {
        "text": "",
        "output_ids": [out_top[0][1]],
        "meta_info": {
            "id": rid,
            "finish_reason": {"type": "length", "length": 1},
            "prompt_tokens": len(ids),
            "input_token_logprobs": token_logprobs,
            "input_top_logprobs": tops,
            "output_token_logprobs": [[out_top[0][0], out_top[0][1], None]],
            "output_top_logprobs": [[[lp, t, None] for lp, t in out_top]],
            "completion_tokens": 1,
            "cached_tokens": 0,
        },
    }


def chat_logprobs(text: str, prompt_tokens: int, k: int, kv_cache_dtype: str) -> dict[str, Any]:
    """``choices[0].logprobs`` for the words of ``text`` (each a step), the chosen word first in each top-k."""
    fp8 = kv_cache_dtype.startswith("fp8")
    words = text.split(" ")
    content = []
    for i, word in enumerate(words):
        top = _top(len(text), prompt_tokens + i, max(k, 1), fp8)
        names = [word] + [f"w{t}" for _, t in top[1:]]
        entries = [
            {"token": n, "bytes": list(n.encode()), "logprob": lp}
            for n, (lp, _) in zip(names, top, strict=True)
        ]
        content.append({**entries[0], "top_logprobs": entries[:k]})
    return {"content": content}
