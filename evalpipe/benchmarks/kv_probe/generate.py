"""Items from a ``ProbeSpec``: filler cut to the length, evidence inserted at the token position each
placement asks for, and the position it actually got, measured in the served prompt.

A target is an absolute token index in the served prompt (chat template + EvalScope's prompt template +
context).  Evidence goes in at the word boundary whose token position is closest to the target (exact for
the filler's one-token words, so page-boundary items land on the boundary); the offsets recorded are then
measured by tokenizing the finished prompt.  Targets and measured offsets are both recorded: a reviewer sees where evidence was meant to be
and where it is.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from evalpipe.benchmarks.kv_probe.filler import sentences
from evalpipe.benchmarks.kv_probe.spec import ProbeSpec, TaskName
from evalpipe.benchmarks.kv_probe.tasks import Draw, build
from evalpipe.benchmarks.kv_probe.tokens import TokenCounter, token_at
from evalpipe.hashing import sha256_hex

#: The text EvalScope's TriviaQA template puts before the content (``trivia_qa_adapter.PROMPT_TEMPLATE``;
#: tests/benchmarks/test_kv_probe.py fails if the installed template differs).
HEAD = "Read the content and answer the following question.\n\nContent: "


@dataclass(frozen=True)
class Measure:
    """How positions are counted: the token counter and the chat template's text before the user turn."""

    counter: TokenCounter
    chat_prefix: str

    @property
    def base(self) -> str:
        return self.chat_prefix + HEAD


def placements(spec: ProbeSpec, length: int) -> list[tuple[str, float | None]]:
    """``(placement name, depth)`` for one length: every depth, then page edges and beyond-top-k."""
    out: list[tuple[str, float | None]] = []
    for d in spec.depths:
        name = f"d{round(d * 100):02d}"
        if name not in [n for n, _ in out]:
            out.append((name, d))
    if spec.page_size is not None:
        out += [("page_before", None), ("page_after", None)]
    if spec.sparse_top_k is not None and length > spec.sparse_top_k + 64:
        out.append(("beyond_top_k", None))
    return out


def _filler(draw: Draw, counter: TokenCounter, budget: int) -> str:
    """Whole filler sentences holding at most ``budget`` tokens (and at most one sentence fewer)."""
    sents = sentences(draw, budget // 8 + 8)
    while True:
        text = " ".join(sents)
        starts = counter.starts(text)
        if len(starts) > budget:
            break
        sents += sentences(draw, budget // 8 + 8)
    ends, pos = [], 0
    for s in sents:
        pos += len(s)
        ends.append(pos)
        pos += 1
    keep = 0
    for k, end in enumerate(ends):
        if bisect.bisect_left(starts, end) > budget:
            break
        keep = k + 1
    return " ".join(sents[:keep])


def _insert(context: str, sentence: str, target: int, m: Measure) -> tuple[str, int]:
    """``context`` with `` sentence`` at the word boundary nearest ``target`` (a token index of the served
    prompt), and the character index where it went.  The tokenizer splits words before merging (byte-level
    BPE, like whitespace counting), so the tokens before a boundary are the same before and after the
    insertion: one tokenization per evidence sentence finds its position."""
    base = m.base
    starts = m.counter.starts(base + context)
    spaces = [i for i, ch in enumerate(context) if ch == " "]
    if not spaces:
        return f"{sentence} {context}", 0
    best = min(spaces, key=lambda i: (abs(bisect.bisect_left(starts, len(base) + i) - target), i))
    return f"{context[:best]} {sentence}{context[best:]}", best + 1


def _targets(
    placement: str, depth: float | None, start: int, tokens: int, n: int, spec: ProbeSpec
) -> list[int]:
    if depth is not None:
        first = start + round(depth * tokens)
    elif placement == "beyond_top_k":
        first = start + 8
    else:  # a page edge near the middle of the context: one token before it, or exactly on it
        assert spec.page_size is not None
        mid = start + tokens // 2
        boundary = -(-mid // spec.page_size) * spec.page_size
        first = boundary - 1 if placement == "page_before" else boundary
    gap = max(16, tokens // (4 * n))
    out = [first]
    for k in range(1, n):
        after = first + k * gap
        out.append(after if after < start + tokens - 4 else max(start, first - k * gap))
    return out


def generate_item(
    spec: ProbeSpec, m: Measure, task: TaskName, length: int, placement: str, depth: float | None, index: int
) -> dict[str, Any]:
    """One item as the TriviaQA adapter reads it (``question_id``, ``question``, ``answer``,
    ``entity_pages.wiki_context``), with its generation record under ``probe``."""
    item_id = f"{task}-{length}-{placement}-{index}"
    draw = Draw(spec.seed, item_id)
    item = build(task, draw)
    evidence_tokens = sum(len(m.counter.starts(f" {e}")) for e in item.evidence)
    context = _filler(draw, m.counter, max(16, length - evidence_tokens))
    base = m.base
    first = m.counter.starts(base + context)
    start = token_at(first, len(base))
    filler_tokens = len(first) - start
    targets = _targets(placement, depth, start, filler_tokens, len(item.evidence), spec)
    placed: dict[int, int] = {}  # evidence index -> its first character in the context
    for i in sorted(range(len(targets)), key=lambda i: (targets[i], i)):
        context, at = _insert(context, item.evidence[i], targets[i], m)
        shift = len(item.evidence[i]) + 1
        placed = {j: c + shift if c >= at - 1 else c for j, c in placed.items()}
        placed[i] = at
    final = m.counter.starts(base + context)
    offsets = [token_at(final, len(base) + placed[i]) for i in range(len(targets))]
    total = len(final)
    probe = {
        "seed": spec.seed,
        "task": task,
        "length": length,
        "placement": placement,
        "depth": depth,
        "index": index,
        "targets": targets,
        "offsets": offsets,
        "context_start": start,
        "context_tokens": total - start,
        "page_size": spec.page_size,
        "tokenizer": m.counter.name,
        "context_sha256": sha256_hex(context),
    }
    return {
        "question_id": item_id,
        "question": item.question,
        "answer": {"aliases": list(item.answers), "normalized_aliases": list(item.answers)},
        "entity_pages": {"wiki_context": context},
        "probe": probe,
    }


def generate(spec: ProbeSpec, m: Measure, lengths: list[int]) -> Iterator[dict[str, Any]]:
    """Every item of the spec at ``lengths``, in (length, task, placement, index) order."""
    for length in lengths:
        for task in spec.tasks:
            for placement, depth in placements(spec, length):
                for index in range(spec.items_per_cell):
                    yield generate_item(spec, m, task, length, placement, depth, index)
