"""GSM8K (EvalScope ``gsm8k``): grade-school maths word problems, scored on the final number.

Canonical record ``{question, answer}``; id = first 16 hex of sha256(question with LF newlines).
Mirror layout: ``gsm8k/test`` (evaluation) and ``gsm8k/train`` (few-shot), any of .jsonl/.csv/.parquet.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalpipe.benchmarks.base import (
    Benchmark,
    BenchmarkMeta,
    HubRows,
    HubSplits,
    KeyItem,
    hub_records,
    local_data,
    read_records,
    text_field,
)
from evalpipe.hashing import normalize_newlines
from evalpipe.sources.base import BenchmarkData, SourceRecord, Split, find_file, require

NAME = "gsm8k"


def gsm8k_id(question: str) -> str:
    return hashlib.sha256(normalize_newlines(question).encode("utf-8")).hexdigest()[:16]


def record(raw: dict[str, Any], *, file: str, line: int, row: int) -> SourceRecord:
    require(raw, ("question", "answer"), file, line)
    q = text_field(raw["question"], file, line, "question")
    a = text_field(raw["answer"], file, line, "answer")
    return SourceRecord(
        benchmark=NAME,
        subset="main",
        stratum_fields={},
        source_id=gsm8k_id(q),
        file=file,
        row=row,
        raw=raw,
        canonical={"question": q, "answer": a},
    )


def response(raw_answer: str) -> str:
    """The reference reasoning without calculator annotations, then the boxed final number."""
    reasoning, _, final = raw_answer.rpartition("####")
    steps = re.sub(r"<<[^>]*>>", "", reasoning).strip()
    return f"{steps}\nThe final answer is \\boxed{{{final.strip()}}}."


def gold(raw_answer: str) -> str:
    return raw_answer.rpartition("####")[2].strip()


class GSM8K(Benchmark):
    """Default failure classes (the adapter extracts the last number); the answer key boxes the gold."""

    def load_local(self, directory: Path, subset: str | None) -> BenchmarkData:
        test, tinfo = read_records(find_file(directory, "test"), record)
        train, rinfo = read_records(find_file(directory, "train"), record)
        return local_data(NAME, directory, Split("test", test, [tinfo]), Split("train", train, [rinfo]))

    def load_hub(self, rows: HubRows, where: str, subset: str | None, subsets: list[str]) -> HubSplits:
        test = hub_records(rows("main", "test"), where, record)
        train = hub_records(rows("main", "train"), where, record)
        return HubSplits(Split("test", test), Split("train", train))

    def key_items(self, data: BenchmarkData, solutions: Mapping[str, Any], sol_path: Path) -> list[KeyItem]:
        out = []
        for rec in data.eval.records:
            answer = str(rec.raw["answer"])
            out.append(KeyItem(NAME, rec.source_id, rec.raw["question"], gold(answer), response(answer)))
        return out

    def truncated_text(self, item: KeyItem) -> str:
        # no digits: GSM8K's extractor falls back to the last number
        return "Let me work through this problem step by step. First I need to figure out how many"


BENCHMARK = GSM8K(
    BenchmarkMeta(
        name=NAME,
        version="1",
        display_name="GSM8K",
        population=1319,  # the test split
        primary_metric="acc",
        mirror_dir="gsm8k",
        id_rule="first 16 hex of sha256(question) (GSM8K has no id)",
        local_layout="gsm8k/{test,train}.{jsonl,csv,parquet}: question, answer",
        eval_split="test",
        fewshot_split="train",
        question_field="question",
        default_subset="main",
        default_faults=("truncate",),
    )
)
