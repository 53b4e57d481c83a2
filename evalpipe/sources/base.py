"""Record and dataset containers, and format readers that name file and line on bad input."""

from __future__ import annotations

import csv
import hashlib
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from evalpipe.errors import DataError
from evalpipe.hashing import fingerprint, sha256_json
from evalpipe.schema.sources import SourceFile


@dataclass(slots=True)
class SourceRecord:
    """One benchmark record.

    ``raw`` holds the values exactly as read (text untouched, e.g. CRLF kept) and is what gets
    materialized for EvalScope; ``canonical`` is the format-independent form that is hashed.
    """

    benchmark: str
    subset: str
    stratum_fields: dict[str, Any]
    source_id: str
    file: str
    row: int
    raw: dict[str, Any]
    canonical: dict[str, Any]
    record_sha256: str = ""

    def __post_init__(self) -> None:
        if not self.record_sha256:
            self.record_sha256 = sha256_json(self.canonical)


@dataclass(slots=True)
class Split:
    name: str
    records: list[SourceRecord]
    files: list[SourceFile] = field(default_factory=list)

    @property
    def fingerprint(self) -> str:
        return fingerprint(r.record_sha256 for r in self.records)


@dataclass(slots=True)
class BenchmarkData:
    """A benchmark's full evaluation split (and few-shot split where the benchmark uses one)."""

    benchmark: str
    kind: str  # local | hub
    location: str
    eval: Split
    fewshot: Split | None = None
    hub_id: str | None = None
    revision: str | None = None

    def check_unique_ids(self) -> None:
        for split in (self.eval, self.fewshot):
            if split is None:
                continue
            seen: dict[str, SourceRecord] = {}
            for rec in split.records:
                prev = seen.get(rec.source_id)
                if prev is not None:
                    raise DataError(
                        f"{rec.file}:{rec.row + 1}: duplicate source id {rec.source_id!r} "
                        f"(first at {prev.file}, row {prev.row + 1})"
                    )
                seen[rec.source_id] = rec


# ---------------------------------------------------------------- value canonicalisation helpers


def canonical_scalar(value: Any) -> Any:
    """Normalise scalar types that differ between CSV, JSON and parquet copies of the same data."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if value.is_integer():
            return int(value)
        return value
    if hasattr(value, "item") and not isinstance(value, str | bytes):  # numpy scalar
        return canonical_scalar(value.item())
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%S")
    if isinstance(value, date):
        return value.isoformat()
    return value


def canonical_value(value: Any) -> Any:
    """Recursive canonicalisation: numpy arrays → lists, NaN → None, integral floats → int."""
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        value = value.tolist()
    if isinstance(value, dict):
        return {str(k): canonical_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [canonical_value(v) for v in value]
    return canonical_scalar(value)


def require(rec: dict[str, Any], fields: tuple[str, ...], file: str, line: int) -> None:
    missing = [f for f in fields if f not in rec or rec[f] is None]
    if missing:
        raise DataError(f"{file}:{line}: missing required field(s): {', '.join(missing)}")


# ---------------------------------------------------------------- format readers


def file_info(path: Path, data: bytes | None = None) -> SourceFile:
    if data is None:
        data = path.read_bytes()
    return SourceFile(path=str(path), bytes=len(data), sha256=hashlib.sha256(data).hexdigest())


def read_rows(path: Path) -> tuple[Iterator[tuple[int, dict[str, Any]]], SourceFile]:
    """Rows of a .jsonl, .csv or .parquet file as ``(line_number, dict)``; line 1-based in the file."""
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        data = path.read_bytes()
        return _jsonl_rows(path, data), file_info(path, data)
    if suffix == ".csv":
        data = path.read_bytes()
        return _csv_rows(path, data), file_info(path, data)
    if suffix == ".parquet":
        return _parquet_rows(path), file_info(path)
    raise DataError(f"{path}: unsupported file type (expected .jsonl, .csv or .parquet)")


def _jsonl_rows(path: Path, data: bytes) -> Iterator[tuple[int, dict[str, Any]]]:
    for lineno, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DataError(f"{path}:{lineno}: malformed JSON line ({exc})") from None
        if not isinstance(obj, dict):
            raise DataError(f"{path}:{lineno}: expected a JSON object")
        yield lineno, obj


def _csv_rows(path: Path, data: bytes) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 ({exc})") from None
    import io

    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise DataError(f"{path}: empty CSV file") from None
    except csv.Error as exc:
        raise DataError(f"{path}:1: malformed CSV header ({exc})") from None
    start = reader.line_num + 1
    while True:
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise DataError(f"{path}:{start}: malformed CSV row ({exc})") from None
        line = start
        start = reader.line_num + 1
        if not values or values == [""]:
            continue
        if len(values) != len(header):
            raise DataError(f"{path}:{line}: expected {len(header)} columns ({','.join(header)}), got {len(values)}")
        yield line, dict(zip(header, values, strict=True))


def _parquet_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    import pandas as pd

    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many types
        raise DataError(f"{path}: unreadable parquet ({exc})") from None
    for i, rec in enumerate(df.to_dict(orient="records")):
        yield i + 1, {k: canonical_value(v) for k, v in rec.items()}


def find_file(directory: Path, stem: str) -> Path:
    """``directory/stem`` with the first existing extension of .jsonl, .csv, .parquet."""
    for ext in (".jsonl", ".csv", ".parquet"):
        p = directory / f"{stem}{ext}"
        if p.is_file():
            return p
    raise DataError(f"{directory}/{stem}.{{jsonl,csv,parquet}}: file not found")
