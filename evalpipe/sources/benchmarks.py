"""Per-benchmark record canonicalisation: source ids, subsets, strata fields, hashed content.

Each ``*_record`` function takes one raw row (as read from JSONL, CSV or parquet) and returns a
``SourceRecord``.  Canonical forms are chosen so the same record hashes the same from any copy:

* GSM8K: ``{question, answer}``; id = first 16 hex of sha256(question).
* IFEval: ``{key:int, prompt, instruction_id_list, kwargs}`` with null kwargs keys dropped
  (the HF copy fills every key with null; upstream JSONL holds only the used keys).
* C-Eval: ``{subject, id:int, question, A, B, C, D, answer, explanation}``; empty explanation dropped
  (val CSVs have no such column, the HF loader fills ``''``); id = ``"<subject>/<id>"``.
* LiveCodeBench: every field, dates as ``YYYY-MM-DDTHH:MM:SS`` strings; id = ``question_id``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from evalpipe.errors import DataError
from evalpipe.sources.base import SourceRecord, canonical_scalar, canonical_value, require


def _text(value: Any, file: str, line: int, field: str) -> str:
    if not isinstance(value, str):
        raise DataError(f"{file}:{line}: field {field!r} must be text, got {type(value).__name__}")
    return value


def gsm8k_id(question: str) -> str:
    from evalpipe.hashing import normalize_newlines

    return hashlib.sha256(normalize_newlines(question).encode("utf-8")).hexdigest()[:16]


def gsm8k_record(raw: dict[str, Any], *, file: str, line: int, row: int) -> SourceRecord:
    require(raw, ("question", "answer"), file, line)
    q = _text(raw["question"], file, line, "question")
    a = _text(raw["answer"], file, line, "answer")
    return SourceRecord(
        benchmark="gsm8k",
        subset="main",
        stratum_fields={},
        source_id=gsm8k_id(q),
        file=file,
        row=row,
        raw=raw,
        canonical={"question": q, "answer": a},
    )


def _ifeval_kwargs(value: Any, file: str, line: int) -> list[dict[str, Any]]:
    value = canonical_value(value)
    if isinstance(value, str):  # some exports store kwargs as a JSON string
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise DataError(f"{file}:{line}: field 'kwargs' is not JSON") from None
    if not isinstance(value, list) or not all(isinstance(k, dict) for k in value):
        raise DataError(f"{file}:{line}: field 'kwargs' must be a list of objects")
    return [{k: canonical_value(v) for k, v in kw.items() if canonical_value(v) is not None} for kw in value]


def ifeval_record(raw: dict[str, Any], *, file: str, line: int, row: int) -> SourceRecord:
    require(raw, ("key", "prompt", "instruction_id_list", "kwargs"), file, line)
    key = canonical_scalar(raw["key"])
    if isinstance(key, str) and key.strip().lstrip("-").isdigit():
        key = int(key)
    if not isinstance(key, int):
        raise DataError(f"{file}:{line}: field 'key' must be an integer")
    ids = canonical_value(raw["instruction_id_list"])
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise DataError(f"{file}:{line}: field 'instruction_id_list' must be a non-empty list of strings")
    kwargs = _ifeval_kwargs(raw["kwargs"], file, line)
    if len(kwargs) != len(ids):
        raise DataError(f"{file}:{line}: kwargs has {len(kwargs)} entries for {len(ids)} instructions")
    prompt = _text(raw["prompt"], file, line, "prompt")
    return SourceRecord(
        benchmark="ifeval",
        subset="default",
        stratum_fields={"instruction_count": len(ids)},
        source_id=str(key),
        file=file,
        row=row,
        raw=raw,
        canonical={"key": key, "prompt": prompt, "instruction_id_list": ids, "kwargs": kwargs},
    )


CEVAL_FIELDS = ("id", "question", "A", "B", "C", "D", "answer")


def ceval_record(raw: dict[str, Any], *, subject: str, file: str, line: int, row: int) -> SourceRecord:
    require(raw, CEVAL_FIELDS, file, line)
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
        benchmark="ceval",
        subset=subject,
        stratum_fields={"subject": subject},
        source_id=f"{subject}/{rid}",
        file=file,
        row=row,
        raw=raw,
        canonical=canonical,
    )


LCB_REQUIRED = ("question_id", "question_content", "difficulty", "public_test_cases")


def lcb_record(raw: dict[str, Any], *, subset: str, file: str, line: int, row: int) -> SourceRecord:
    require(raw, LCB_REQUIRED, file, line)
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
        benchmark="live_code_bench",
        subset=subset,
        stratum_fields={"difficulty": difficulty},
        source_id=qid,
        file=file,
        row=row,
        raw=raw,
        canonical=canonical,
    )
