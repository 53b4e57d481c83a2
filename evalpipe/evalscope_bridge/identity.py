"""Is a cached EvalScope row really the answer to the manifest entry at its index?

EvalScope's ``use_cache`` restores predictions and reviews by positional ``index`` alone: after the
materialized rows move (a different sample, a re-materialization in another order, a stale dataset
cache) it attaches old answers to new questions and scores them against the new targets.  Before a
resume reuses any cached row, evalpipe checks, for each row:

1. its final user message contains the manifest entry's question text (line endings normalised);
2. its rendered-prompt hash equals the one recorded in ``prompt_hashes.jsonl`` when the entry was
   first rendered;
3. (reviews) its messages equal those of the prediction kept for the same index.

Rows that fail are dropped from the cache files — EvalScope then re-requests those samples — and every
drop is recorded as a ``CacheRepair`` for the audit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalpipe.artifacts import atomic_write_bytes
from evalpipe.artifacts.schema.outcomes import CachedArtifact, CacheRepair, CacheRepairReason
from evalpipe.evalscope_bridge.layout import (
    CachedLine,
    final_user_content,
    prompt_part,
    read_lines,
    row_messages,
)
from evalpipe.hashing import message_text, normalize_newlines, prompt_sha256, sha256_hex


@dataclass(frozen=True)
class Expected:
    """What the row at an index must be: the manifest entry's identity."""

    source_id: str
    question: str
    prompt_sha256: str | None


def contains_question(user_text: str | None, question: str) -> bool:
    if user_text is None:
        return False
    return normalize_newlines(question) in normalize_newlines(user_text)


def user_text(row: Mapping[str, Any]) -> str | None:
    content = final_user_content(row_messages(dict(row)))
    return None if content is None else message_text(content)


def row_prompt_sha256(row: Mapping[str, Any]) -> str | None:
    msgs = prompt_part(row_messages(dict(row)))
    return prompt_sha256(msgs) if msgs else None


def conversation_sha256(row: Mapping[str, Any]) -> str | None:
    """Hash of the whole conversation (prompt + reply): equal for a prediction and its review."""
    msgs = row_messages(dict(row))
    return prompt_sha256(msgs) if msgs else None


def content_sha256(text: str | None) -> str | None:
    return None if text is None else sha256_hex(normalize_newlines(text))


@dataclass
class Verdict:
    ok: bool
    reason: CacheRepairReason | None = None  # set when not ok
    found_prompt_sha256: str | None = None
    found_content_sha256: str | None = None


def check_row(row: Mapping[str, Any] | None, expected: Expected | None) -> Verdict:
    """Identity checks 1 and 2 for one cached row."""
    if row is None:
        return Verdict(False, "unreadable")
    text = user_text(row)
    found_hash = row_prompt_sha256(row)
    found_content = content_sha256(text)
    if expected is None:
        return Verdict(False, "unknown_index", found_hash, found_content)
    if not contains_question(text, expected.question):
        return Verdict(False, "question_mismatch", found_hash, found_content)
    if expected.prompt_sha256 is None:
        return Verdict(False, "no_recorded_hash", found_hash, found_content)
    if found_hash != expected.prompt_sha256:
        return Verdict(False, "prompt_hash_mismatch", found_hash, found_content)
    return Verdict(True, None, found_hash, found_content)


@dataclass
class SubsetCacheCheck:
    """Outcome of verifying one (benchmark, subset)'s prediction and review caches."""

    kept_predictions: list[CachedLine] = field(default_factory=list)
    kept_reviews: list[CachedLine] = field(default_factory=list)
    repairs: list[CacheRepair] = field(default_factory=list)
    superseded: int = 0  # earlier valid duplicates of a kept row (EvalScope itself keeps the last)

    @property
    def changed(self) -> bool:
        return bool(self.repairs) or self.superseded > 0


def _repair(
    benchmark: str,
    subset: str,
    line: CachedLine,
    expected: Mapping[int, Expected],
    v: Verdict,
    artifact: CachedArtifact,
) -> CacheRepair:
    idx = line.index
    exp = expected.get(idx) if idx is not None else None
    assert v.reason is not None, "only a failed verdict is repaired"
    return CacheRepair(
        benchmark=benchmark,
        subset=subset,
        index=idx if idx is not None else -1,
        expected_source_id=exp.source_id if exp else "",
        expected_prompt_sha256=exp.prompt_sha256 if exp else None,
        found_prompt_sha256=v.found_prompt_sha256,
        found_content_sha256=v.found_content_sha256,
        reason=v.reason,
        artifact=artifact,
    )


def _last_valid(
    lines: Iterable[CachedLine],
    benchmark: str,
    subset: str,
    expected: Mapping[int, Expected],
    artifact: CachedArtifact,
    out: SubsetCacheCheck,
) -> dict[int, CachedLine]:
    kept: dict[int, CachedLine] = {}
    for line in lines:
        v = check_row(line.data, expected.get(line.index) if line.index is not None else None)
        if not v.ok:
            out.repairs.append(_repair(benchmark, subset, line, expected, v, artifact))
            continue
        assert line.index is not None
        if line.index in kept:
            out.superseded += 1
        kept[line.index] = line
    return kept


def check_subset_cache(
    benchmark: str,
    subset: str,
    predictions: list[CachedLine],
    reviews: list[CachedLine],
    expected: Mapping[int, Expected],
) -> SubsetCacheCheck:
    """Decide which cached rows of one subset may be reused."""
    out = SubsetCacheCheck()
    preds = _last_valid(predictions, benchmark, subset, expected, "prediction", out)
    revs_candidates = _last_valid(reviews, benchmark, subset, expected, "review", out)
    revs: dict[int, CachedLine] = {}
    for idx, line in revs_candidates.items():
        pred = preds.get(idx)
        assert line.data is not None
        if (
            pred is None
            or pred.data is None
            or conversation_sha256(pred.data) != conversation_sha256(line.data)
        ):
            v = Verdict(
                False,
                "prediction_mismatch",
                row_prompt_sha256(line.data),
                content_sha256(user_text(line.data)),
            )
            out.repairs.append(_repair(benchmark, subset, line, expected, v, "review"))
            continue
        revs[idx] = line
    # keep original file order of the surviving lines
    keep_p = {id(v) for v in preds.values()}
    keep_r = {id(v) for v in revs.values()}
    out.kept_predictions = [ln for ln in predictions if id(ln) in keep_p]
    out.kept_reviews = [ln for ln in reviews if id(ln) in keep_r]
    return out


def rewrite_cache(path: Path, kept: list[CachedLine]) -> None:
    """Atomically replace an EvalScope cache file with the kept lines (bytes unchanged)."""
    data = b"".join(line.raw + b"\n" for line in kept)
    atomic_write_bytes(path, data)


def verify_and_repair(
    benchmark: str,
    subset: str,
    predictions_path: Path,
    reviews_path: Path,
    expected: Mapping[int, Expected],
) -> SubsetCacheCheck:
    """Check one subset's caches and rewrite them without the rows that fail; returns the check."""
    preds = read_lines(predictions_path)
    revs = read_lines(reviews_path)
    result = check_subset_cache(benchmark, subset, preds, revs, expected)
    if len(result.kept_predictions) != len(preds) and predictions_path.exists():
        rewrite_cache(predictions_path, result.kept_predictions)
    if len(result.kept_reviews) != len(revs) and reviews_path.exists():
        rewrite_cache(reviews_path, result.kept_reviews)
    return result
