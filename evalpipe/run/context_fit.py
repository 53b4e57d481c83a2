"""Preflight: each sampled prompt's estimated tokens against the model's context length.

The estimate uses the model's own tokenizer when a ``tokenizer.json`` is available locally
(``model.tokenizer_path`` or ``model.path``); otherwise a deliberately high heuristic — one token per
CJK character and one per three other characters (English averages about four characters a token), so
the heuristic refuses a prompt rather than letting one through.  The text estimated is what the
benchmark module says the prompt is built from (``prompt_text``; default its question field) plus a
fixed margin for the adapter's template and the chat template.  The context length is
``model.context_length`` or, for a local model, ``max_position_embeddings`` of its ``config.json``;
when neither is known the check is skipped and says so.  Once the server is up, a benchmark built to
context lengths (kv_probe) is capped at the context the server resolved in ``/server_info``
(``cap_to_served_context``): its longer lengths are dropped before anything is sent, with one line each.

Overlong prompts abort the run (exit 2) unless the benchmark consents with ``drop_overlong: true``:
then they are dropped before materialisation, listed in ``context_fit.json`` and scored
``context_overflow`` (incorrect) — never sent to be truncated silently by the server.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from evalpipe.artifacts.schema.context_fit import BenchmarkFit, ContextFit, Estimator, PromptFit
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.benchmarks import Benchmark
from evalpipe.benchmarks.parts import EvalScopePart
from evalpipe.config.models import RunConfig
from evalpipe.errors import PreflightError
from evalpipe.server.served_context import served_context
from evalpipe.sources.base import BenchmarkData

TEMPLATE_MARGIN_TOKENS = 512
_CJK = re.compile(r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef]")


def heuristic_tokens(text: str) -> int:
    cjk = len(_CJK.findall(text))
    return cjk + -(-(len(text) - cjk) // 3)


def _local_dir(cfg: RunConfig, value: str | None) -> Path | None:
    if not value:
        return None
    path = cfg.resolve_path(value)
    return path if path.is_dir() else None


def estimator(cfg: RunConfig) -> tuple[Callable[[str], int], Estimator, str]:
    """(count function, "tokenizer" | "heuristic", detail)."""
    for value in (cfg.model.tokenizer_path, cfg.model.path):
        directory = _local_dir(cfg, value)
        if directory is not None and (directory / "tokenizer.json").is_file():
            # import cost: tokenizers, only on this path
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(directory / "tokenizer.json"))

            def count(text: str, tok: Tokenizer = tok) -> int:
                return len(tok.encode(text, add_special_tokens=False).ids)

            return count, "tokenizer", str(directory / "tokenizer.json")
    return (
        heuristic_tokens,
        "heuristic",
        "1 token per CJK character + 1 per 3 other characters (no local tokenizer)",
    )


def context_length(cfg: RunConfig) -> tuple[int | None, str]:
    if cfg.model.context_length is not None:
        return cfg.model.context_length, "model.context_length"
    directory = _local_dir(cfg, cfg.model.path)
    if directory is not None and (directory / "config.json").is_file():
        try:
            data = json.loads((directory / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        for key in ("max_position_embeddings", "max_sequence_length", "seq_length"):
            if isinstance(data.get(key), int):
                return data[key], f"{directory / 'config.json'}: {key}"
    return None, "unknown (set model.context_length)"


def check_context_fit(
    cfg: RunConfig,
    manifest: Manifest,
    datasets: Mapping[str, BenchmarkData],
    benchmarks: Mapping[str, Benchmark],
) -> ContextFit:
    """Estimate every sampled prompt (its text as its plugin in ``benchmarks`` builds it); raise
    PreflightError on overlong prompts without consent."""
    count, kind, detail = estimator(cfg)
    limit, source = context_length(cfg)
    blocks: list[BenchmarkFit] = []
    overlong: list[PromptFit] = []
    refused: list[str] = []
    for block in manifest.benchmarks:
        name = block.benchmark
        spec: EvalScopePart = benchmarks[name]
        bench = cfg.benchmark(name)
        budget = cfg.max_tokens_for(name)
        records = {r.source_id: r for r in datasets[name].eval.records}
        largest, bad = 0, []
        entries = manifest.entries_for(name)
        for e in entries:
            raw = records[e.source_id].raw
            text = spec.prompt_text(raw)
            tokens = count(text) + TEMPLATE_MARGIN_TOKENS
            largest = max(largest, tokens)
            if limit is not None and tokens + budget > limit:
                bad.append(PromptFit(benchmark=name, source_id=e.source_id, stratum=e.stratum,
                                     prompt_tokens=tokens, max_tokens=budget, fits=False))  # fmt: skip
        overlong += bad
        if bad and not bench.drop_overlong:
            refused += [f"{p.benchmark} {p.source_id}: ~{p.prompt_tokens:,} prompt + {p.max_tokens:,} output tokens"
                        for p in bad]  # fmt: skip
        blocks.append(BenchmarkFit(benchmark=name, checked=len(entries), largest_prompt_tokens=largest,
                                   overlong=len(bad), dropped=len(bad) if bench.drop_overlong else 0))  # fmt: skip
    report = ContextFit(
        context_length=limit,
        context_length_source=source,
        estimator=kind,
        estimator_detail=detail,
        template_margin_tokens=TEMPLATE_MARGIN_TOKENS,
        benchmarks=blocks,
        overlong=overlong,
    )
    if refused:
        raise PreflightError(
            f"{len(refused)} sampled prompt(s) do not fit the context length {limit:,} ({source}; estimated with "
            f"the {kind}): the server would truncate or reject them; set drop_overlong: true on the benchmark "
            "to drop and report them",
            details=refused[:20],
        )
    return report


def dropped_entries(report: ContextFit, cfg: RunConfig) -> set[tuple[str, str]]:
    """Entries left out of materialisation: overlong with the benchmark's consent, or beyond the served
    context of a benchmark built to lengths (``reason`` set)."""
    return {
        (p.benchmark, p.source_id)
        for p in report.overlong
        if p.reason is not None or cfg.benchmark(p.benchmark).drop_overlong
    }


def cap_to_served_context(
    fit: ContextFit,
    manifest: Manifest,
    datasets: Mapping[str, BenchmarkData],
    info: Mapping[str, Any] | None,
    max_tokens: Callable[[str], int],
    benchmarks: Mapping[str, Benchmark],
) -> ContextFit | None:
    """``fit`` with the entries a benchmark built to lengths (``Benchmark.beyond_context``) dropped for the
    context the server resolved in ``info`` (its ``/server_info``), each with its benchmark's line; None when
    the server names no context or nothing more is dropped.  The manifest is untouched: the entries stay,
    and materialisation skips them (``dropped_entries``) as it skips every consented drop."""
    resolved = served_context(info) if info is not None else None
    if resolved is None:
        return None
    tokens, _, source = resolved
    already = {(p.benchmark, p.source_id) for p in fit.overlong}
    added: list[PromptFit] = []
    lines: list[str] = []
    blocks = list(fit.benchmarks)
    for i, block in enumerate(blocks):
        name = block.benchmark
        records = {r.source_id: r for r in datasets[name].eval.records}
        entries = {e.source_id: e for e in manifest.entries_for(name)}
        sampled = [records[sid] for sid in entries if sid in records]
        ids, line = benchmarks[name].beyond_context(sampled, tokens, source)
        new = [sid for sid in ids if (name, sid) not in already]
        if not new or line is None:
            continue
        lines.append(line)
        budget = max_tokens(name)
        for sid in new:
            probe = records[sid].raw.get("probe") or {}
            prompt = int(probe.get("context_start", 0)) + int(probe.get("context_tokens", 0))
            added.append(PromptFit(benchmark=name, source_id=sid, stratum=entries[sid].stratum,
                                   prompt_tokens=prompt, max_tokens=budget, fits=False, reason=line))  # fmt: skip
        blocks[i] = block.model_copy(
            update={"overlong": block.overlong + len(new), "dropped": block.dropped + len(new)}
        )
    if not added:
        return None
    return fit.model_copy(
        update={
            "benchmarks": blocks,
            "overlong": [*fit.overlong, *added],
            "served_context_length": tokens,
            "served_context_source": source,
            "served_drops": [*fit.served_drops, *lines],
        }
    )
