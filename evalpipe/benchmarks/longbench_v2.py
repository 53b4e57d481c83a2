"""LongBench-v2 (EvalScope ``longbench_v2``): multiple choice over long contexts (8k to 2M words).

Native schema (hub ``ZhipuAI/LongBench-v2`` / ``zai-org/LongBench-v2``, split ``train``): ``_id, domain,
sub_domain, difficulty (easy/hard), length (short/medium/long), question, choice_A…choice_D, answer
(a letter), context``.  Canonical record: those fields as text; id = ``_id``.  Mirror layout:
``longbench_v2/data`` (.jsonl/.parquet/.json-lines).

Like MATH-500 the adapter regroups one ``default`` config into subsets — here by ``length`` — and
renumbers each from 0 in file order.  Strata: ``length``, ``difficulty`` or ``length_difficulty``
(``short/easy`` …); every stratification keeps the length bucket, so the report can show accuracy by
context length (the KV-cache view).  Prompts are long: the run preflight estimates each prompt's tokens
from ``prompt_text`` (context + question + choices) against the model's context length.
"""

from __future__ import annotations

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
from evalpipe.errors import DataError
from evalpipe.sources.base import BenchmarkData, SourceRecord, Split, find_file, require

NAME = "longbench_v2"
CHOICES = ("choice_A", "choice_B", "choice_C", "choice_D")
FIELDS = ("_id", "domain", "sub_domain", "difficulty", "length", "question", *CHOICES, "answer", "context")
LENGTHS = ("short", "medium", "long")
DIFFICULTIES = ("easy", "hard")


def record(raw: dict[str, Any], *, file: str, line: int, row: int) -> SourceRecord:
    require(raw, FIELDS, file, line)
    canonical = {f: text_field(raw[f], file, line, f) for f in FIELDS}
    if canonical["length"] not in LENGTHS:
        raise DataError(
            f"{file}:{line}: field 'length' must be short/medium/long, got {canonical['length']!r}"
        )
    if canonical["difficulty"] not in DIFFICULTIES:
        raise DataError(
            f"{file}:{line}: field 'difficulty' must be easy/hard, got {canonical['difficulty']!r}"
        )
    if canonical["answer"] not in ("A", "B", "C", "D"):
        raise DataError(f"{file}:{line}: field 'answer' must be one of A/B/C/D, got {canonical['answer']!r}")
    if not canonical["_id"]:
        raise DataError(f"{file}:{line}: field '_id' is empty")
    length, difficulty = canonical["length"], canonical["difficulty"]
    return SourceRecord(
        benchmark=NAME,
        subset=length,  # the adapter's subset_key
        stratum_fields={
            "length": length,
            "difficulty": difficulty,
            "length_difficulty": f"{length}/{difficulty}",
        },
        source_id=canonical["_id"],
        file=file,
        row=row,
        raw=raw,
        canonical=canonical,
    )


def response(letter: str) -> str:
    """The form MultiChoiceAdapter parses: the last line ``ANSWER: X``."""
    return f"The passage settles it.\nANSWER: {letter}"


class LongBenchV2(Benchmark):
    """Length buckets are the adapter's regrouped subsets and the KV-cache view; prompts are long, so
    the context-fit preflight estimates context + question + choices."""

    def load_local(self, directory: Path, subset: str | None) -> BenchmarkData:
        recs, info = read_records(find_file(directory, "data"), record)
        return local_data(NAME, directory, Split("train", recs, [info]))

    def load_hub(self, rows: HubRows, where: str, subset: str | None, subsets: list[str]) -> HubSplits:
        return HubSplits(Split("train", hub_records(rows(None, "train"), where, record)))

    def prompt_text(self, row: Mapping[str, Any]) -> str:
        """What the adapter's template puts in the prompt besides its own fixed text."""
        return "\n".join(str(row.get(f) or "") for f in ("context", "question", *CHOICES))

    def length_bucket(self, stratify_by: str, stratum: str) -> str | None:
        if stratify_by == "length":
            return stratum
        if stratify_by == "length_difficulty":
            return stratum.split("/", 1)[0]
        return None

    def key_items(self, data: BenchmarkData, solutions: Mapping[str, Any], sol_path: Path) -> list[KeyItem]:
        out = []
        for rec in data.eval.records:
            letter = rec.canonical["answer"]
            # the question alone may repeat across items; the context's tail is what makes the prompt unique
            needle = f"{rec.canonical['context'][-200:]}\n</text>"
            out.append(KeyItem(NAME, rec.source_id, needle, letter, response(letter)))
        return out

    def truncated_text(self, item: KeyItem) -> str:
        return "reading the text carefully, the relevant passage is in the middle where the record says"


BENCHMARK = LongBenchV2(
    BenchmarkMeta(
        name=NAME,
        version="1",
        display_name="LongBench-v2",
        primary_metric="acc",
        mirror_dir="longbench_v2",
        id_rule="_id",
        local_layout="longbench_v2/data.{jsonl,csv,parquet}: _id, domain, sub_domain, difficulty, length, question, choice_A-D, answer, context",
        eval_split="train",
        fewshot_split=None,
        question_field="question",
        default_subset="default",
        max_few_shot=0,
        stratifications=("length", "difficulty", "length_difficulty"),
        regrouped=True,
        length_order=LENGTHS,
    )
)
