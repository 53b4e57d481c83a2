"""LiveCodeBench (EvalScope ``live_code_bench``): code generation checked by executing test cases.

Canonical record: every field, dates as ``YYYY-MM-DDTHH:MM:SS`` strings; id = ``question_id``.
Mirror layout: ``livecodebench/*`` (every .jsonl/.parquet file; ids unique across files).  Materialised
with every column a string: the adapter parses dates and test cases from text.

The benchmark owns how its answers are executed and judged.  Every program runs in the run's sandbox,
in ``test_process`` (``python -m evalpipe.benchmarks.live_code_bench.test_process FD``: EvalScope's own
test code): ``review`` makes EvalScope's review start it there (``prepare_review``), ``recheck`` re-runs
a program the review timed out, alone and on its own CPU clock (``post_review``), and ``result_codes``
turns the test results — and what the sandbox denied — into failure classes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any

from evalpipe.artifacts.schema.outcomes import FailureClass, OutcomeRow
from evalpipe.benchmarks.base import (
    Benchmark,
    BenchmarkMeta,
    HubRows,
    HubSplits,
    KeyItem,
    RecordBuilder,
    RecordFilter,
    ReviewContext,
    ReviewScore,
    fenced,
    hub_records,
    local_data,
    read_records,
)
from evalpipe.benchmarks.live_code_bench import recheck, review
from evalpipe.benchmarks.live_code_bench.policy import (
    policy_text as policy_text,  # the face offers the wording
)
from evalpipe.benchmarks.live_code_bench.result_codes import classify_code
from evalpipe.errors import DataError
from evalpipe.sandbox.launcher import ProgramLauncher
from evalpipe.sources.base import BenchmarkData, SourceRecord, Split, canonical_value, require

NAME = "live_code_bench"
REQUIRED = ("question_id", "question_content", "difficulty", "public_test_cases")
DEFAULT_SUBSET = "release_v6"
# extra_params that make EvalScope drop rows, which would shift every positional index.
FILTER_PARAMS = frozenset({"start_date", "end_date"})


def record(raw: dict[str, Any], *, subset: str, file: str, line: int, row: int) -> SourceRecord:
    require(raw, REQUIRED, file, line)
    canonical = {k: canonical_value(v) for k, v in raw.items()}
    qid = canonical["question_id"]
    if isinstance(qid, int):
        qid = str(qid)
    if not isinstance(qid, str) or not qid:
        raise DataError(f"{file}:{line}: field 'question_id' must be a non-empty string")
    canonical["question_id"] = qid
    difficulty = str(canonical["difficulty"]).lower()
    if difficulty not in ("easy", "medium", "hard"):
        raise DataError(
            f"{file}:{line}: field 'difficulty' must be easy/medium/hard, got {canonical['difficulty']!r}"
        )
    return SourceRecord(
        benchmark=NAME,
        subset=subset,
        stratum_fields={"difficulty": difficulty},
        source_id=qid,
        file=file,
        row=row,
        raw=raw,
        canonical=canonical,
    )


def _builder(subset: str) -> RecordBuilder:
    def build(raw: dict[str, Any], *, file: str, line: int, row: int) -> SourceRecord:
        return record(raw, subset=subset, file=file, line=line, row=row)

    return build


def filter_records(records: list[SourceRecord], flt: RecordFilter) -> list[SourceRecord]:
    """Release/date windows: keep records by ``_version`` and ``contest_date``."""
    out = []
    for rec in records:
        c = rec.canonical
        if flt.versions is not None and c.get("_version") not in flt.versions:
            continue
        day = str(c.get("contest_date") or "")[:10]
        if flt.start_date is not None and (not day or day < flt.start_date[:10]):
            continue
        if flt.end_date is not None and (not day or day > flt.end_date[:10]):
            continue
        out.append(rec)
    return out


# ---------------------------------------------------------------- materialisation


def _text(value: Any) -> str | None:
    """A LiveCodeBench value as the string column EvalScope's adapter expects."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%S")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def adapter_row(raw: Mapping[str, Any], *, pinned: bool, where: str) -> dict[str, str | None]:
    """String columns; missing ``private_test_cases`` → ``"[]"``; a non-JSON value is refused unpinned.

    EvalScope's ``transform`` falls back to ``pickle.loads(zlib.decompress(b64decode(...)))`` when the
    field is not JSON: executing a pickle from an unverified dataset is arbitrary code execution, so
    it is only allowed when the dataset's fingerprint is pinned in the config.
    """
    row = {str(k): _text(v) for k, v in raw.items()}
    ptc = row.get("private_test_cases")
    if ptc is None or ptc == "":
        row["private_test_cases"] = "[]"
        return row
    try:
        parsed = json.loads(ptc)
    except ValueError:
        if not pinned:
            raise DataError(
                f"{where}: private_test_cases is not JSON (EvalScope would unpickle it); "
                "refused because the benchmark's dataset fingerprint is not pinned in the config"
            ) from None
        return row
    if not isinstance(parsed, list):
        raise DataError(f"{where}: private_test_cases must be a JSON list, got {type(parsed).__name__}")
    return row


# ---------------------------------------------------------------- answer key


def func_name(raw: Mapping[str, Any]) -> str | None:
    meta = raw.get("metadata")
    if isinstance(meta, str):
        try:
            meta = json.loads(meta) if meta.strip() else {}
        except json.JSONDecodeError:
            meta = {}
    return meta.get("func_name") if isinstance(meta, dict) else None


class LiveCodeBench(Benchmark):
    """Answers are programs run against the problem's tests; every reviewed sample records how its program
    ran, and one the review timed out is re-checked alone before it is classified (``recheck``)."""

    def load_local(self, directory: Path, subset: str | None) -> BenchmarkData:
        files = sorted(p for p in directory.iterdir() if p.suffix in (".jsonl", ".parquet"))
        if not files:
            raise DataError(f"{directory}: no LiveCodeBench .jsonl/.parquet files")
        build = _builder(subset or DEFAULT_SUBSET)
        records: list[SourceRecord] = []
        infos = []
        for path in files:
            recs, info = read_records(path, build)
            records.extend(recs)
            infos.append(info)
        return local_data(NAME, directory, Split("test", records, infos))

    def load_hub(self, rows: HubRows, where: str, subset: str | None, subsets: list[str]) -> HubSplits:
        subset = subset or DEFAULT_SUBSET
        return HubSplits(Split("test", hub_records(rows(subset, "test"), where, _builder(subset))))

    def filter_records(self, records: list[SourceRecord], flt: RecordFilter) -> list[SourceRecord]:
        return filter_records(records, flt)

    def materialize_row(self, record: SourceRecord, pinned: bool, where: str) -> dict[str, Any]:
        return adapter_row(record.raw, pinned=pinned, where=where)

    def classify_wrong(self, score: ReviewScore) -> tuple[FailureClass, str | None]:
        return classify_code(score)

    def prepare_review(self, launcher: ProgramLauncher) -> None:
        # imported here: only the EvalScope worker needs it (it imports EvalScope's evaluate_utils)

        review.install(launcher)

    def post_review(self, row: OutcomeRow, score: ReviewScore, context: ReviewContext) -> OutcomeRow:

        return recheck.reviewed_row(row, score, context)

    def key_items(self, data: BenchmarkData, solutions: Mapping[str, Any], sol_path: Path) -> list[KeyItem]:
        out = []
        for rec in data.eval.records:
            code = solutions.get(NAME, {}).get(rec.source_id)
            if not isinstance(code, str) or not code.strip():
                raise DataError(f"{sol_path}: live_code_bench: no solution for question_id {rec.source_id}")
            out.append(
                KeyItem(
                    NAME,
                    rec.source_id,
                    str(rec.raw["question_content"]),
                    code,
                    fenced(code),
                    func_name(rec.raw),
                )
            )
        return out

    def truncated_text(self, item: KeyItem) -> str:
        lines = item.gold.rstrip().split("\n")
        return "```python\n" + "\n".join(lines[: max(1, len(lines) // 2)])  # no closing fence


BENCHMARK = LiveCodeBench(
    BenchmarkMeta(
        name=NAME,
        version="1",
        display_name="LiveCodeBench",
        primary_metric="pass@1",
        mirror_dir="livecodebench",
        id_rule="question_id",
        local_layout="livecodebench/*.{jsonl,parquet} (code_generation_lite release files): question_id, question_content, public/private test cases, …",
        eval_split="test",
        fewshot_split=None,
        question_field="question_content",
        default_subset=DEFAULT_SUBSET,
        max_few_shot=0,
        stratifications=("difficulty",),
        record_filter=True,
        all_strings=True,
        forbidden_extra_params=FILTER_PARAMS,
        executes_code=True,
        default_faults=("index_error",),
    )
)
