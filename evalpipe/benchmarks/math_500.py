"""MATH-500 (EvalScope ``math_500``): 500 competition problems, scored by Math-Verify on the boxed answer.

Canonical record ``{problem, solution, answer, subject, level:int, unique_id}``; id = ``unique_id``
(``test/<subject>/<n>.json``); strata = ``level`` (1–5).  Mirror layout: ``math_500/test`` (the
prm800k ``math_splits/test.jsonl``, see ``../shared/datasets/math_500/SOURCES.md``).

The adapter is unlike a one-config-per-subset benchmark: it loads only the ``default`` config, then
regroups rows into ``Level 1`` … ``Level 5`` and renumbers each level from 0 in file order
(``reformat_subset``).  So a record's subset is ``Level <level>`` and the materialised dataset is one
``default`` config holding every level (``regrouped``).  Scoring is Math-Verify equivalence of the
answer extracted from the response (``\\boxed{}`` first) with ``answer``: the answer key replies with
the reference answer boxed after a line of reasoning.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalpipe.artifacts.schema.outcomes import FailureClass
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
from evalpipe.sources.base import BenchmarkData, SourceRecord, Split, canonical_scalar, find_file, require

NAME = "math_500"
FIELDS = ("problem", "solution", "answer", "subject", "level", "unique_id")


def record(raw: dict[str, Any], *, file: str, line: int, row: int) -> SourceRecord:
    require(raw, FIELDS, file, line)
    level = canonical_scalar(raw["level"])
    if isinstance(level, str) and level.strip().isdigit():  # a CSV copy
        level = int(level.strip())
    if not isinstance(level, int) or isinstance(level, bool) or not 1 <= level <= 5:
        raise DataError(f"{file}:{line}: field 'level' must be an integer 1-5, got {raw['level']!r}")
    canonical: dict[str, Any] = {f: text_field(raw[f], file, line, f) for f in FIELDS if f != "level"}
    canonical["level"] = level
    if not canonical["answer"].strip():
        raise DataError(f"{file}:{line}: field 'answer' is empty")
    return SourceRecord(
        benchmark=NAME,
        subset=f"Level {level}",  # the adapter's subset_key
        stratum_fields={"level": level},
        source_id=canonical["unique_id"],
        file=file,
        row=row,
        raw=raw,
        canonical=canonical,
    )


def response(answer: str) -> str:
    """The reference answer in the form Math-Verify extracts first: ``\\boxed{…}`` in inline math."""
    return f"Working through the problem step by step gives the result.\nThe final answer is $\\boxed{{{answer}}}$."


class Math500(Benchmark):
    """Levels are the adapter's regrouped subsets; scoring is Math-Verify on the extracted answer."""

    def load_local(self, directory: Path, subset: str | None) -> BenchmarkData:
        recs, info = read_records(find_file(directory, "test"), record)
        return local_data(NAME, directory, Split("test", recs, [info]))

    def load_hub(self, rows: HubRows, where: str, subset: str | None, subsets: list[str]) -> HubSplits:
        return HubSplits(Split("test", hub_records(rows(subset or "default", "test"), where, record)))

    def classify_wrong(self, score: ReviewScore) -> tuple[FailureClass, str | None]:
        extracted = score.get("extracted_prediction")
        if not isinstance(extracted, str) or not extracted.strip():
            return "unparsable_answer", "no mathematical answer could be extracted (\\boxed{} or expression)"
        return "wrong", None

    def key_items(self, data: BenchmarkData, solutions: Mapping[str, Any], sol_path: Path) -> list[KeyItem]:
        return [
            KeyItem(
                NAME,
                rec.source_id,
                rec.canonical["problem"],
                rec.canonical["answer"],
                response(rec.canonical["answer"]),
            )
            for rec in data.eval.records
        ]

    def truncated_text(self, item: KeyItem) -> str:
        # no digits, no boxed expression: nothing for Math-Verify to extract
        return "Let me work through this problem step by step. First I need to rewrite the expression as"


BENCHMARK = Math500(
    BenchmarkMeta(
        name=NAME,
        version="1",
        display_name="MATH-500",
        population=500,
        primary_metric="acc",
        mirror_dir="math_500",
        id_rule="unique_id",
        local_layout="math_500/test.{jsonl,csv,parquet}: problem, solution, answer, subject, level, unique_id",
        eval_split="test",
        fewshot_split=None,
        question_field="problem",
        default_subset="default",
        max_few_shot=0,
        stratifications=("level",),
        regrouped=True,
    )
)
