"""Your own multiple-choice set (EvalScope ``general_mcq``): one question, options ``A``, ``B``, … and the
answer letter per row, scored by EvalScope's multiple-choice parser on the option letter.

Native schema (EvalScope's custom-MCQ format): ``question``, option columns ``A`` … ``J`` (the adapter
takes them from ``A`` up to the first missing one), ``answer`` (one letter), optional ``id`` and any other
columns.  Evaluation split ``val`` (``<subset>_val.csv`` …), few-shot split ``dev`` (``<subset>_dev.csv``,
only for ``few_shot > 0``).  Files, ids, strata and bad-row messages: ``evalpipe/benchmarks/own_files.py``.

A row is refused (one line naming file, line, row, column) when its question is empty, it has fewer than
two options or an empty option, its answer is missing or not one of its option letters, or its answer is a
list — multiple-correct sets (``extra_params.multiple_correct``) score with another metric and are not
supported here.  The default prompt is EvalScope's Chinese single-answer template (``答案：X``); the answer
key replies in that form.
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
    UserColumns,
    local_data,
)
from evalpipe.benchmarks.own_files import (
    ID_RULE,
    Where,
    as_evalscope_reads,
    canonical_row,
    cell,
    eval_file,
    identify,
    loader_file,
    read_file,
)
from evalpipe.errors import ConfigError
from evalpipe.sources.base import BenchmarkData, SourceRecord, Split

NAME = "general_mcq"
LETTERS = "ABCDEFGHIJ"  # the adapter's option columns


def option_letters(raw: Mapping[str, Any]) -> str:
    """The option columns the adapter takes: ``A`` up to the first column the row does not have (a column
    present with an empty or null value is an option — which ``build`` refuses as empty)."""
    n = 0
    while n < len(LETTERS) and LETTERS[n] in raw:
        n += 1
    return LETTERS[:n]


def build(raw: dict[str, Any], subset: str, at: Where, columns: UserColumns) -> SourceRecord:
    if cell(raw, "question") is None:
        raise at.fail("question", "empty question")
    if not isinstance(raw["question"], str):
        raise at.fail("question", f"the question must be text, got {raw['question']!r}")
    letters = option_letters(raw)
    if len(letters) < 2:
        missing = LETTERS[len(letters)]
        raise at.fail(missing, "a question needs at least two options (columns A, B, …)")
    for letter in letters:
        if cell(raw, letter) is None:
            raise at.fail(letter, "empty option")
    if isinstance(raw.get("answer"), list):
        raise at.fail("answer", "a list of answers (multiple_correct) is not supported: one letter per row")
    answer = cell(raw, "answer")
    if answer is None:
        raise at.fail("answer", "missing answer")
    if str(answer) not in letters:
        raise at.fail("answer", f"answer {answer!r} is not one of the option letters {', '.join(letters)}")
    return identify(NAME, subset, raw, canonical_row(raw), at, columns)


def response(letter: str) -> str:
    """The form of EvalScope's Chinese single-answer template, which its parser reads."""
    return f"答案：{letter}"


class GeneralMCQ(Benchmark):
    """Reads your files in EvalScope's layout with the configured columns (``with_columns``)."""

    def __init__(self, meta: BenchmarkMeta, columns: UserColumns | None = None) -> None:
        super().__init__(meta)
        self.columns = columns or UserColumns()

    def with_columns(self, columns: UserColumns) -> Benchmark:
        return type(self)(self.meta, columns)

    def load_local(self, directory: Path, subset: str | None) -> BenchmarkData:
        sub = subset or "default"
        path = eval_file(directory, sub, "val", NAME)
        val, vinfo = read_file(path, sub, build, self.columns)
        fewshot = None
        dev_path = None if directory.is_file() else loader_file(directory, sub, "dev")
        if dev_path is not None and dev_path != path:  # never the evaluated rows as few-shot examples
            dev, dinfo = read_file(dev_path, sub, build, UserColumns())
            fewshot = Split("dev", dev, [dinfo])
        return local_data(NAME, directory, Split("val", val, [vinfo]), fewshot)

    def load_hub(self, rows: HubRows, where: str, subset: str | None, subsets: list[str]) -> HubSplits:
        raise ConfigError(f"{NAME} reads your own files: set benchmarks[{NAME}].source.local")

    def materialize_row(self, record: SourceRecord, pinned: bool, where: str) -> dict[str, Any]:
        return as_evalscope_reads(record)

    def prompt_text(self, row: Mapping[str, Any]) -> str:
        return "\n".join(str(row.get(f) or "") for f in ("question", *option_letters(row)))

    def key_items(self, data: BenchmarkData, solutions: Mapping[str, Any], sol_path: Path) -> list[KeyItem]:
        out = []
        for rec in data.eval.records:
            letter = str(rec.canonical["answer"])
            question = str(as_evalscope_reads(rec)["question"])  # as the prompt shows it
            out.append(KeyItem(NAME, rec.source_id, question, letter, response(letter)))
        return out

    def truncated_text(self, item: KeyItem) -> str:
        return "让我们逐一分析每个选项。首先看第一个选项，它描述的是"


BENCHMARK = GeneralMCQ(
    BenchmarkMeta(
        name=NAME,
        version="1",
        display_name="General-MCQ",
        primary_metric="acc",
        mirror_dir=NAME,
        eval_split="val",
        fewshot_split="dev",
        question_field="question",
        default_subset="default",
        fewshot_per_subset=True,
        stratifications=("column",),
        layout="local_files",
        user_files=True,
        id_rule=ID_RULE,
        local_layout=(
            "source.local: a file, or a folder with <subset>_val.{jsonl,csv,parquet} [+ <subset>_dev.*]: "
            "question, A, B, … (up to J), answer (one letter)[, your id / stratum columns]"
        ),
    )
)
