"""LiveCodeBench (EvalScope ``live_code_bench``): code generation checked by executing test cases.

Canonical record: every field, dates as ``YYYY-MM-DDTHH:MM:SS`` strings; id = ``question_id``.
Mirror layout: ``livecodebench/*`` (every .jsonl/.parquet file; ids unique across files).  Materialised
with every column a string: the adapter parses dates and test cases from text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any

from evalpipe.benchmarks.base import (
    Benchmark,
    HubRows,
    HubSplits,
    KeyItem,
    fenced,
    hub_records,
    local_data,
    read_records,
)
from evalpipe.errors import DataError
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


def load_local(directory: Path, subset: str | None) -> BenchmarkData:
    subset = subset or DEFAULT_SUBSET
    files = sorted(p for p in directory.iterdir() if p.suffix in (".jsonl", ".parquet"))
    if not files:
        raise DataError(f"{directory}: no LiveCodeBench .jsonl/.parquet files")
    records: list[SourceRecord] = []
    infos = []
    for path in files:

        def build(raw, *, file, line, row):
            return record(raw, subset=subset, file=file, line=line, row=row)

        recs, info = read_records(path, build)
        records.extend(recs)
        infos.append(info)
    return local_data(NAME, directory, Split("test", records, infos))


def load_hub(rows: HubRows, where: str, subset: str | None, subsets: list[str]) -> HubSplits:
    subset = subset or DEFAULT_SUBSET

    def build(raw, *, file, line, row):
        return record(raw, subset=subset, file=file, line=line, row=row)

    return HubSplits(Split("test", hub_records(rows(subset, "test"), where, build)))


def filter_records(records: list[SourceRecord], flt: Any) -> list[SourceRecord]:
    """Release/date windows: keep records by ``_version`` and ``contest_date``."""
    if flt is None:
        return records
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


def lcb_row(raw: Mapping[str, Any], *, pinned: bool, where: str) -> dict[str, str | None]:
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


def materialize_row(rec: SourceRecord, pinned: bool, where: str) -> dict[str, Any]:
    return lcb_row(rec.raw, pinned=pinned, where=where)


def classify_wrong(score: Mapping[str, Any]) -> tuple[str, str | None]:
    from evalpipe.evalscope_bridge.outcomes import classify_code

    return classify_code(dict(score))


# ---------------------------------------------------------------- answer key


def func_name(raw: Mapping[str, Any]) -> str | None:
    meta = raw.get("metadata")
    if isinstance(meta, str):
        try:
            meta = json.loads(meta) if meta.strip() else {}
        except json.JSONDecodeError:
            meta = {}
    return meta.get("func_name") if isinstance(meta, dict) else None


def key_items(data: BenchmarkData, solutions: Mapping[str, Any], sol_path: Path) -> list[KeyItem]:
    out = []
    for rec in data.eval.records:
        code = solutions.get(NAME, {}).get(rec.source_id)
        if not isinstance(code, str) or not code.strip():
            raise DataError(f"{sol_path}: live_code_bench: no solution for question_id {rec.source_id}")
        out.append(
            KeyItem(
                NAME, rec.source_id, str(rec.raw["question_content"]), code, fenced(code), func_name(rec.raw)
            )
        )
    return out


def truncated_text(item: KeyItem) -> str:
    lines = item.gold.rstrip().split("\n")
    return "```python\n" + "\n".join(lines[: max(1, len(lines) // 2)])  # no closing fence


BENCHMARK = Benchmark(
    name=NAME,
    display_name="LiveCodeBench",
    primary_metric="pass@1",
    mirror_dir="livecodebench",
    load_local=load_local,
    load_hub=load_hub,
    eval_split="test",
    fewshot_split=None,
    question_field="question_content",
    default_subset=DEFAULT_SUBSET,
    max_few_shot=0,
    stratifications=("difficulty",),
    filter_records=filter_records,
    all_strings=True,
    materialize_row=materialize_row,
    forbidden_extra_params=FILTER_PARAMS,
    classify_wrong=classify_wrong,
    executes_code=True,
    key_items=key_items,
    truncated_text=truncated_text,
    default_faults=("index_error",),
)
