"""IFEval (EvalScope ``ifeval``): verifiable instructions, scored by EvalScope's instruction checkers.

Canonical record ``{key:int, prompt, instruction_id_list, kwargs}`` with null kwargs keys dropped (the
HF copy fills every key with null; upstream JSONL holds only the used keys); id = ``key``.
Mirror layout: ``ifeval/input_data``.  Materialised as JSONL: ``kwargs`` are lists of dicts with
different keys per instruction — often all empty, which parquet cannot store at all.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalpipe.artifacts.schema.evalscope import IndexMapEntry
from evalpipe.artifacts.schema.metrics import MetricResult, wilson_ci
from evalpipe.artifacts.schema.outcomes import FailureClass, OutcomeRow, counts_scored
from evalpipe.benchmarks.base import (
    Benchmark,
    BenchmarkMeta,
    HubRows,
    HubSplits,
    KeyItem,
    ReviewScore,
    hub_records,
    local_data,
    read_records,
    text_field,
)
from evalpipe.errors import DataError
from evalpipe.sources.base import (
    BenchmarkData,
    SourceRecord,
    Split,
    canonical_scalar,
    canonical_value,
    find_file,
    require,
)

NAME = "ifeval"

# Instructions whose checker needs NLTK's punkt_tab tokenizer (count_sentences, word_tokenize).
PUNKT_INSTRUCTIONS = frozenset({"length_constraints:number_sentences", "change_case:capital_word_frequency"})
# Review metrics (evalscope/benchmarks/ifeval/ifeval_adapter.py metric_list).
PROMPT_METRICS = ("prompt_level_strict", "prompt_level_loose")
INSTRUCTION_METRICS = ("inst_level_strict", "inst_level_loose")


def _kwargs(value: Any, file: str, line: int) -> list[dict[str, Any]]:
    value = canonical_value(value)
    if isinstance(value, str):  # some exports store kwargs as a JSON string
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise DataError(f"{file}:{line}: field 'kwargs' is not JSON") from None
    if not isinstance(value, list) or not all(isinstance(k, dict) for k in value):
        raise DataError(f"{file}:{line}: field 'kwargs' must be a list of objects")
    return [{k: canonical_value(v) for k, v in kw.items() if canonical_value(v) is not None} for kw in value]


def record(raw: dict[str, Any], *, file: str, line: int, row: int) -> SourceRecord:
    require(raw, ("key", "prompt", "instruction_id_list", "kwargs"), file, line)
    key = canonical_scalar(raw["key"])
    if isinstance(key, str) and key.strip().lstrip("-").isdigit():
        key = int(key)
    if not isinstance(key, int):
        raise DataError(f"{file}:{line}: field 'key' must be an integer")
    ids = canonical_value(raw["instruction_id_list"])
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise DataError(f"{file}:{line}: field 'instruction_id_list' must be a non-empty list of strings")
    kwargs = _kwargs(raw["kwargs"], file, line)
    if len(kwargs) != len(ids):
        raise DataError(f"{file}:{line}: kwargs has {len(kwargs)} entries for {len(ids)} instructions")
    prompt = text_field(raw["prompt"], file, line, "prompt")
    return SourceRecord(
        benchmark=NAME,
        subset="default",
        stratum_fields={"instruction_count": len(ids)},
        source_id=str(key),
        file=file,
        row=row,
        raw=raw,
        canonical={"key": key, "prompt": prompt, "instruction_id_list": ids, "kwargs": kwargs},
    )


def secondary_metrics(found: Sequence[OutcomeRow | None]) -> list[MetricResult]:
    """Prompt-level (per prompt) and instruction-level (per instruction) IFEval metrics."""
    out: list[MetricResult] = []
    n = len(found)
    for metric in PROMPT_METRICS:
        k = 0
        unknown = 0
        for row in found:
            if not counts_scored(row):
                continue  # not scored or budget exhausted: counts as not followed
            assert row is not None
            if metric not in row.scores:
                unknown += 1
            elif row.scores[metric] == 1.0:
                k += 1
        if unknown:
            out.append(
                MetricResult(
                    name=metric,
                    numerator=None,
                    denominator=n,
                    score=None,
                    note=f"{unknown} scored row(s) lack {metric}",
                )
            )
        else:
            out.append(
                MetricResult(
                    name=metric,
                    numerator=k,
                    denominator=n,
                    score=k / n if n else None,
                    interval=wilson_ci(k, n),
                )
            )
    for metric in INSTRUCTION_METRICS:
        kind = metric.rsplit("_", 1)[1]  # strict | loose
        followed = 0
        total = 0
        missing = 0
        for row in found:
            if row is None or row.instructions_total is None:
                missing += 1
                continue
            total += row.instructions_total
            if not counts_scored(row):
                continue
            explicit = getattr(row, f"instructions_followed_{kind}")
            if explicit is not None:
                followed += explicit
            elif metric in row.scores:
                # EvalScope stores the per-prompt fraction followed/total: the count is exact.
                followed += round(row.scores[metric] * row.instructions_total)
            else:
                missing += 1
        if missing:
            out.append(
                MetricResult(
                    name=metric,
                    numerator=None,
                    denominator=None,
                    score=None,
                    note=f"{missing} row(s) lack instruction counts (OutcomeRow.instructions_*)",
                )
            )
        else:
            out.append(
                MetricResult(
                    name=metric,
                    numerator=followed,
                    denominator=total,
                    score=followed / total if total else None,
                    note="instructions cluster within prompts, so no independent-trials interval is given",
                )
            )
    return out


class IFEval(Benchmark):
    """Scored by EvalScope's instruction checkers on the whole response: nothing is extracted, so a response
    that fails is ``wrong`` (never unparsable); some checkers need NLTK's punkt_tab."""

    def load_local(self, directory: Path, subset: str | None) -> BenchmarkData:
        recs, info = read_records(find_file(directory, "input_data"), record)
        return local_data(NAME, directory, Split("train", recs, [info]))

    def load_hub(self, rows: HubRows, where: str, subset: str | None, subsets: list[str]) -> HubSplits:
        return HubSplits(Split("train", hub_records(rows(None, "train"), where, record)))

    def instruction_ids(self, row: Mapping[str, Any]) -> list[str] | None:
        ids = row.get("instruction_id_list")
        return [str(x) for x in ids] if ids is not None else None

    def classify_wrong(self, score: ReviewScore) -> tuple[FailureClass, str | None]:
        return "wrong", None

    def needs_punkt(self, entry: IndexMapEntry) -> bool:
        return bool(PUNKT_INSTRUCTIONS & set(entry.instruction_ids or []))

    def scoring_error_hint(self, entry: IndexMapEntry, score: ReviewScore, punkt_tab: bool) -> str | None:
        if not punkt_tab:
            needs = sorted(PUNKT_INSTRUCTIONS & set(entry.instruction_ids or []))
            if needs:
                return f"NLTK punkt_tab is not installed; needed by {', '.join(needs)}"
        return None

    def secondary_metrics(self, rows: Sequence[OutcomeRow | None]) -> list[MetricResult]:
        return secondary_metrics(rows)

    def key_items(self, data: BenchmarkData, solutions: Mapping[str, Any], sol_path: Path) -> list[KeyItem]:
        out = []
        for rec in data.eval.records:
            response = solutions.get(NAME, {}).get(rec.source_id)
            if not isinstance(response, str) or not response.strip():
                raise DataError(f"{sol_path}: ifeval: no response for key {rec.source_id}")
            out.append(KeyItem(NAME, rec.source_id, rec.canonical["prompt"], response, response))
        return out


BENCHMARK = IFEval(
    BenchmarkMeta(
        name=NAME,
        version="1",
        display_name="IFEval",
        population=541,
        primary_metric="prompt_level_strict",
        mirror_dir="ifeval",
        id_rule="str(key)",
        local_layout="ifeval/input_data.{jsonl,csv,parquet}: key, prompt, instruction_id_list, kwargs",
        eval_split="train",
        fewshot_split=None,
        question_field="prompt",
        default_subset="default",
        max_few_shot=0,
        stratifications=("instruction_count",),
        file_format="jsonl",
        nltk_module="evalscope.benchmarks.ifeval.instructions_util",
        default_faults=("duplicate_request",),
    )
)
