"""The numerics probe's prompts: seeded text of exact served lengths, ending before, on and after the KV page
and prefill-chunk edges.

A kernel or KV-layout change shows where a page or a prefill chunk ends (the seed PR's own tests check
"masking, page-boundary coverage"), so each configured length is asked as an interior prompt and, per edge
``E`` that the server reports (``page_size``, ``chunked_prefill_size``) or the config names, as prompts of
``kE − 1``, ``kE`` and ``kE + 1`` tokens with ``k = round(length / E)``: the first generated token is computed
one position before, exactly at, and one after a multiple of ``E``.  An interior prompt is ``length`` plus half
the smallest edge (mid-page), or ``length`` itself without edges.

Lengths count the *served* prompt — chat template included — with the model's own ``tokenizer.json`` and
``chat_template.jinja`` (the ones ``evalpipe.tokenizer`` resolves).  ``chat`` prompts are text, cut so the
rendered prompt has exactly the target (checked by tokenising it; the server's own ``usage.prompt_tokens`` is
recorded beside it); ``teacher_forced`` prompts are token ids (exact by construction): template head, filler,
the instruction and the template's assistant turn, then a fixed continuation whose last
``continuation_tokens`` positions are read.  The text is the KV-cache probe's haystack (plain sentences from
small word lists, ``evalpipe.benchmarks.kv_probe.filler``), drawn per prompt id from ``seed``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from evalpipe.benchmarks.kv_probe import Draw, FileTokenizer, chat_frame, sentences, tokenizer_directory
from evalpipe.config.numerics import NumericsConfig
from evalpipe.errors import DataError
from evalpipe.hashing import sha256_hex

#: The user turn ends with this after the filler (chat), so the model is asked something.
INSTRUCTION = "Continue the story above with one more sentence."
WORDS = "words"


@dataclass(frozen=True)
class ProbePrompt:
    """One prompt: ``messages`` (chat) or ``token_ids`` (teacher_forced), and what it was built as."""

    id: str
    length: int
    placement: str
    user_text: str
    token_ids: tuple[int, ...] | None
    prompt_tokens: int | None
    continuation_tokens: int

    @property
    def messages(self) -> list[dict[str, str]]:
        return [{"role": "user", "content": self.user_text}]

    @property
    def sha256(self) -> str:
        if self.token_ids is not None:
            return sha256_hex(json.dumps(list(self.token_ids)).encode())
        return sha256_hex(json.dumps(self.messages, ensure_ascii=False, sort_keys=True).encode())


@dataclass(frozen=True)
class ServedTokens:
    """The served model's tokenizer and the chat template around one user message (the KV-cache probe's
    tokenizer and template reading, ``evalpipe.benchmarks.kv_probe``)."""

    tokenizer: FileTokenizer
    head: str  # the template's text before the user message
    tail: str  # the template's text after it (the assistant turn's opening)

    @property
    def name(self) -> str:
        return self.tokenizer.name  # sha256 of tokenizer.json

    def ids(self, text: str) -> list[int]:
        return self.tokenizer.ids(text)

    def count(self, text: str) -> int:
        return len(self.tokenizer.ids(text))

    def offsets(self, text: str) -> list[int]:
        return self.tokenizer.starts(text)


def resolve_served_tokens(value: str | None, base: Path) -> ServedTokens | None:
    """The tokenizer ``numerics.tokenizer`` names (None: count words)."""
    if value is None:
        return None
    directory = tokenizer_directory(value, base, field="numerics.tokenizer")
    head, tail = chat_frame(directory)
    return ServedTokens(FileTokenizer(directory / "tokenizer.json"), head, tail)


def placements(length: int, edges: dict[str, int]) -> list[tuple[str, int]]:
    """``(placement, served length)`` for one configured length (module docstring)."""
    usable = {name: e for name, e in sorted(edges.items()) if 1 < e <= length}
    interior = length + (min(usable.values()) // 2 if usable else 0)
    out = [("interior", interior)]
    for name, edge in usable.items():
        k = max(1, round(length / edge))
        out += [(f"{name}-1", k * edge - 1), (f"{name}+0", k * edge), (f"{name}+1", k * edge + 1)]
    return out


def _filler(draw: Draw, words: int) -> str:
    text: list[str] = []
    while sum(len(s.split()) for s in text) < words:
        text += sentences(draw, max(4, words // 9 + 4))
    return " ".join(text)


def _chat_text(draw: Draw, target: int, served: ServedTokens | None) -> tuple[str, int | None]:
    """A user message whose rendered prompt has ``target`` tokens (words without a tokenizer)."""
    ask = f"\n\n{INSTRUCTION}"
    if served is None:
        words = _filler(draw, target).split()
        keep = max(1, target - len(INSTRUCTION.split()))
        return " ".join(words[:keep]) + ask, None
    frame = served.count(served.head + ask + served.tail)
    filler = _filler(draw, target * 2)
    starts = served.offsets(filler)
    keep = max(1, target - frame)
    for _ in range(8):  # a cut at a token boundary re-tokenises the same way but across the seams
        text = filler[: starts[keep]].rstrip() if keep < len(starts) else filler
        got = served.count(served.head + text + ask + served.tail)
        if got == target:
            return text + ask, got
        keep += target - got
        keep = max(1, min(keep, len(starts) - 1))
    return text + ask, got


def _forced_ids(
    draw: Draw, target: int, continuation: int, served: ServedTokens
) -> tuple[tuple[int, ...], str]:
    head = served.ids(served.head)
    ask = served.ids(f"\n\n{INSTRUCTION}{served.tail}")
    cont = served.ids(_filler(draw, continuation * 2))[:continuation]
    room = target - len(head) - len(ask) - len(cont)
    if room < 8:
        raise DataError(
            f"numerics: a prompt of {target} tokens cannot hold the template and the continuation"
        )
    body_text = _filler(draw, room * 2)
    body = served.ids(body_text)[:room]
    return tuple(head + body + ask + cont), body_text


def build_prompts(cfg: NumericsConfig, edges: dict[str, int], served: ServedTokens | None, *,
                  max_prompt_tokens: int | None = None) -> tuple[list[ProbePrompt], list[int]]:  # fmt: skip
    """Every prompt of the probe, in the order every arm sends them, and the configured lengths left out
    because a prompt of theirs would not fit ``max_prompt_tokens`` (the served context less the generated
    tokens)."""
    prompts: list[ProbePrompt] = []
    dropped: list[int] = []
    use_edges = edges if served is not None else {}
    for length in cfg.lengths:
        cells = placements(length, use_edges)
        if max_prompt_tokens is not None and max(n for _, n in cells) > max_prompt_tokens:
            dropped.append(length)
            continue
        for placement, served_length in cells:
            for i in range(cfg.prompts_per_cell):
                pid = f"{length}-{placement}-{i}"
                draw = Draw(cfg.seed, pid)
                if cfg.ask == "teacher_forced":
                    assert served is not None  # the config refuses teacher_forced without a tokenizer
                    ids, text = _forced_ids(draw, served_length, cfg.continuation_tokens, served)
                    prompts.append(
                        ProbePrompt(pid, length, placement, text, ids, len(ids), cfg.continuation_tokens)
                    )
                else:
                    text, count = _chat_text(draw, served_length, served)
                    prompts.append(ProbePrompt(pid, length, placement, text, None, count, 0))
    return prompts, dropped
