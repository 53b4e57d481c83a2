"""C-Eval (EvalScope ``ceval``): Chinese multiple choice over 52 subjects, scored on the option letter.

Canonical record ``{subject, id:int, question, A, B, C, D, answer, explanation}`` with an empty
explanation dropped (val CSVs have no such column, the HF loader fills ``''``); id = ``"<subject>/<id>"``.
Mirror layout: ``ceval/val/<subject>_val`` (evaluation) and ``ceval/dev/<subject>_dev`` (few-shot).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalpipe.artifacts.schema.sources import SourceFile
from evalpipe.benchmarks.base import (
    Benchmark,
    BenchmarkMeta,
    HubRows,
    HubSplits,
    KeyItem,
    RecordBuilder,
    hub_records,
    local_data,
    read_records,
)
from evalpipe.errors import DataError
from evalpipe.sources.base import BenchmarkData, SourceRecord, Split, canonical_scalar, require

NAME = "ceval"
FIELDS = ("id", "question", "A", "B", "C", "D", "answer")


def record(raw: dict[str, Any], *, subject: str, file: str, line: int, row: int) -> SourceRecord:
    require(raw, FIELDS, file, line)
    rid = canonical_scalar(raw["id"])
    if isinstance(rid, str) and rid.strip().isdigit():
        rid = int(rid.strip())
    if not isinstance(rid, int):
        raise DataError(f"{file}:{line}: field 'id' must be an integer, got {raw['id']!r}")
    canonical: dict[str, Any] = {"subject": subject, "id": rid}
    for f in ("question", "A", "B", "C", "D", "answer"):
        canonical[f] = str(canonical_scalar(raw[f]))
    if canonical["answer"] not in ("A", "B", "C", "D"):
        raise DataError(f"{file}:{line}: field 'answer' must be one of A/B/C/D, got {canonical['answer']!r}")
    explanation = raw.get("explanation")
    if explanation not in (None, ""):
        canonical["explanation"] = str(explanation)
    return SourceRecord(
        benchmark=NAME,
        subset=subject,
        stratum_fields={"subject": subject},
        source_id=f"{subject}/{rid}",
        file=file,
        row=row,
        raw=raw,
        canonical=canonical,
    )


def _builder(subject: str) -> RecordBuilder:
    def build(raw: dict[str, Any], *, file: str, line: int, row: int) -> SourceRecord:
        return record(raw, subject=subject, file=file, line=line, row=row)

    return build


def _split(directory: Path, split: str) -> tuple[list[SourceRecord], list[SourceFile]]:
    split_dir = directory / split
    if not split_dir.is_dir():
        raise DataError(f"{split_dir}: C-Eval {split} directory not found")
    files = sorted(p for p in split_dir.iterdir() if p.suffix in (".csv", ".jsonl", ".parquet"))
    if not files:
        raise DataError(f"{split_dir}: no <subject>_{split}.csv files")
    records: list[SourceRecord] = []
    infos = []
    suffix = f"_{split}"
    for path in files:
        if not path.stem.endswith(suffix):
            raise DataError(f"{path}: expected a file named <subject>{suffix}{path.suffix}")
        recs, info = read_records(path, _builder(path.stem[: -len(suffix)]))
        records.extend(recs)
        infos.append(info)
    return records, infos


def response(letter: str) -> str:
    return f"答案：{letter}"


class CEval(Benchmark):
    """One subset per subject, few-shot rows from the subject's own dev split; default failure classes."""

    def load_local(self, directory: Path, subset: str | None) -> BenchmarkData:
        val, vinfo = _split(directory, "val")
        dev, dinfo = _split(directory, "dev")
        return local_data(NAME, directory, Split("val", val, vinfo), Split("dev", dev, dinfo))

    def load_hub(self, rows: HubRows, where: str, subset: str | None, subsets: list[str]) -> HubSplits:
        val: list[SourceRecord] = []
        dev: list[SourceRecord] = []
        for subject in subsets:
            val += hub_records(rows(subject, "val"), f"{where}/{subject}", _builder(subject))
            dev += hub_records(rows(subject, "dev"), f"{where}/{subject}", _builder(subject))
        return HubSplits(Split("val", val), Split("dev", dev))

    def key_items(self, data: BenchmarkData, solutions: Mapping[str, Any], sol_path: Path) -> list[KeyItem]:
        out = []
        for rec in data.eval.records:
            letter = rec.canonical["answer"]
            out.append(KeyItem(NAME, rec.source_id, rec.canonical["question"], letter, response(letter)))
        return out

    def truncated_text(self, item: KeyItem) -> str:
        # no option letter: C-Eval's parser falls back to letters
        return "让我们逐一分析每个选项。首先看第一个选项，它描述的是"


BENCHMARK = CEval(
    BenchmarkMeta(
        name=NAME,
        version="1",
        display_name="C-Eval",
        primary_metric="acc",
        mirror_dir="ceval",
        id_rule='"<subject>/<id>"',
        local_layout="ceval/{val,dev}/<subject>_{val,dev}.csv: id, question, A-D, answer[, explanation]",
        eval_split="val",
        fewshot_split="dev",
        question_field="question",
        default_subset=None,
        stratifications=("subject",),
        fewshot_per_subset=True,
        default_faults=("http_500_once", "reasoning_budget"),
    )
)
