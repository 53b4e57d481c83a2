"""Your own open-ended set (EvalScope ``general_qa``): a question and a reference answer per row, scored by
EvalScope's Rouge (main score ``Rouge-L-R``, the recall of the reference's longest common subsequence).

Native schema (EvalScope's custom-QA format): ``question`` (or ``query``), ``answer`` (or ``response``),
optional ``system``, any other columns; the adapter takes ``question`` when it is non-empty, else
``query`` (likewise ``answer``/``response``).  Evaluation split ``test``: ``<subset>_test.jsonl`` or
``<subset>.jsonl`` (.csv / .parquet too).  Files, ids, strata and bad-row messages:
``evalpipe/benchmarks/own_files.py``.

A row is refused (one line naming file, line, row, column) when it has no question, no answer, or is in
the chat format (``messages``: evalpipe checks each prompt against its question text, which a message list
does not single out).

**Correct** in the summary means ``Rouge-L-R = 1`` (every token of the reference appears in the response,
in order) — the summary's one rule for every benchmark; EvalScope's own figure, the mean ``Rouge-L-R``, is
reported next to it as a secondary metric.  EvalScope also computes BLEU when NLTK's ``punkt_tab`` is
installed (without it BLEU scores 0 and the review notes the error; ``Rouge-L-R`` does not need it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalpipe.artifacts.schema.metrics import MetricResult
from evalpipe.artifacts.schema.outcomes import OutcomeRow, counts_scored
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
    read_file,
)
from evalpipe.errors import ConfigError
from evalpipe.sources.base import BenchmarkData, SourceRecord, Split

NAME = "general_qa"
MAIN_SCORE = "Rouge-L-R"


def question_of(row: Mapping[str, Any]) -> Any:
    """The adapter's question: ``question`` if it is non-empty, else ``query``."""
    return row.get("question") or row.get("query")


def answer_of(row: Mapping[str, Any]) -> Any:
    """The adapter's target: ``answer`` if it is non-empty, else ``response``."""
    return row.get("answer") or row.get("response")


def build(raw: dict[str, Any], subset: str, at: Where, columns: UserColumns) -> SourceRecord:
    if raw.get("messages") is not None:
        raise at.fail(
            "messages",
            "chat-format rows are not supported (evalpipe checks each prompt against its question): "
            "use question/answer (or query/response) columns",
        )
    question = question_of(raw)
    if not isinstance(question, str) or not question.strip():
        raise at.fail("question" if "query" not in raw else "query", "empty question (question or query)")
    answer = answer_of(raw)
    if answer is None or cell({"a": answer}, "a") is None:
        raise at.fail(
            "answer" if "response" not in raw else "response", "missing answer (answer or response)"
        )
    return identify(NAME, subset, raw, canonical_row(raw), at, columns)


class GeneralQA(Benchmark):
    """Reads your files in EvalScope's layout with the configured columns; reports the mean Rouge-L-R too."""

    def __init__(self, meta: BenchmarkMeta, columns: UserColumns | None = None) -> None:
        super().__init__(meta)
        self.columns = columns or UserColumns()

    def with_columns(self, columns: UserColumns) -> Benchmark:
        return type(self)(self.meta, columns)

    def load_local(self, directory: Path, subset: str | None) -> BenchmarkData:
        sub = subset or "default"
        recs, info = read_file(eval_file(directory, sub, "test", NAME), sub, build, self.columns)
        return local_data(NAME, directory, Split("test", recs, [info]))

    def load_hub(self, rows: HubRows, where: str, subset: str | None, subsets: list[str]) -> HubSplits:
        raise ConfigError(f"{NAME} reads your own files: set benchmarks[{NAME}].source.local")

    def materialize_row(self, record: SourceRecord, pinned: bool, where: str) -> dict[str, Any]:
        return as_evalscope_reads(record)

    def question_text(self, row: Mapping[str, Any]) -> object:
        return question_of(row)

    def prompt_text(self, row: Mapping[str, Any]) -> str:
        return "\n".join(str(v) for v in (row.get("system"), question_of(row)) if v)

    def secondary_metrics(self, rows: Sequence[OutcomeRow | None]) -> list[MetricResult]:
        """EvalScope's figure for this adapter: the mean Rouge-L-R over every manifest entry (a row without
        a score, or one whose budget ran out, counts 0 — as it counts incorrect in the primary metric)."""
        if not rows:
            return []
        values = [
            row.scores.get(MAIN_SCORE, 0.0) if row is not None and counts_scored(row) else 0.0 for row in rows
        ]
        return [
            MetricResult(
                name=f"{MAIN_SCORE} (mean)",
                numerator=None,
                denominator=len(rows),
                score=sum(values) / len(values),
                note="mean of a continuous score: no count, no interval",
            )
        ]

    def key_items(self, data: BenchmarkData, solutions: Mapping[str, Any], sol_path: Path) -> list[KeyItem]:
        out = []
        for rec in data.eval.records:
            row = as_evalscope_reads(rec)
            answer = str(answer_of(row))
            out.append(KeyItem(NAME, rec.source_id, str(question_of(row)), answer, answer))
        return out

    def truncated_text(self, item: KeyItem) -> str:
        return "让我想一想"  # shares no token with any bundled reference answer


BENCHMARK = GeneralQA(
    BenchmarkMeta(
        name=NAME,
        version="1",
        display_name="General-QA",
        primary_metric=MAIN_SCORE,
        mirror_dir=NAME,
        eval_split="test",
        fewshot_split=None,
        question_field="question",
        default_subset="default",
        max_few_shot=0,
        stratifications=("column",),
        layout="local_files",
        user_files=True,
        id_rule=ID_RULE,
        local_layout=(
            "source.local: a file, or a folder with <subset>_test.{jsonl,csv,parquet} (or <subset>.jsonl …): "
            "question (or query), answer (or response)[, system][, your id / stratum columns]"
        ),
    )
)
