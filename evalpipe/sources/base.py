"""Record and dataset containers, and format readers that name file and line on bad input."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import mmap
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal

import orjson

from evalpipe.artifacts.schema.sources import SourceFile
from evalpipe.errors import DataError
from evalpipe.hashing import canonical_json, fingerprint, sha256_json


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
    _sha256: str = ""

    @property
    def record_sha256(self) -> str:
        """sha256 of the canonical JSON; computed on first use unless a ``RecordHasher`` filled it."""
        if not self._sha256:
            self._sha256 = sha256_json(self.canonical)
        return self._sha256

    @record_sha256.setter
    def record_sha256(self, value: str) -> None:
        self._sha256 = value


class RecordHasher:
    """Hashes records' canonical JSON on a worker thread while the caller parses the next rows.

    ``hashlib`` releases the GIL for large buffers, so on LiveCodeBench-sized records (MBs of test
    cases) hashing overlaps with parsing instead of following it.  A record under ``INLINE_BYTES`` is
    hashed where it is read: a round trip through the pool (a future, two lock hand-offs) costs more than
    hashing a few KB, and C-Eval's and GSM8K's 11,000 records are all short; the thread is started only
    when a large record first needs it.  Either way the digest is the same.
    """

    INLINE_BYTES = 1 << 16

    def __init__(self) -> None:
        self._pool: Any = None
        self._pending: list[tuple[SourceRecord, Any]] = []

    @staticmethod
    def _digest(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    def add(self, record: SourceRecord) -> SourceRecord:
        data = canonical_json(record.canonical)
        if len(data) < self.INLINE_BYTES:
            record.record_sha256 = self._digest(data)
            return record
        if self._pool is None:
            # import cost: concurrent.futures (6 modules) stays out of the answer-key engine's and resolve's import
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="record-hash")
        self._pending.append((record, self._pool.submit(self._digest, data)))
        return record

    def finish(self) -> None:
        for record, future in self._pending:
            record.record_sha256 = future.result()
        self._pending.clear()
        if self._pool is not None:
            self._pool.shutdown()


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
    kind: Literal["local", "hub"]
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


class _BackgroundFileHash:
    """sha256 of a file's bytes computed on another core while its rows are parsed.

    hashlib releases the GIL for large buffers, so this overlaps with JSON parsing.
    """

    def __init__(self, path: Path, data: bytes | mmap.mmap) -> None:
        self.path, self.size = path, len(data)
        self._digest: str | None = None
        self._thread = threading.Thread(target=self._run, args=(data,), daemon=True)
        self._thread.start()

    def _run(self, data: bytes | mmap.mmap) -> None:
        self._digest = hashlib.sha256(data).hexdigest()

    def result(self) -> SourceFile:
        self._thread.join()
        assert self._digest is not None
        return SourceFile(path=str(self.path), bytes=self.size, sha256=self._digest)


def read_rows(path: Path) -> tuple[Iterator[tuple[int, dict[str, Any]]], _BackgroundFileHash]:
    """Rows of a .jsonl, .csv or .parquet file as ``(line_number, dict)``; line 1-based in the file.

    Returns the row iterator and a handle whose ``result()`` is the file's ``SourceFile`` (size, sha256).
    """
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        mapped = _map_file(path)
        return _jsonl_rows(path, mapped), _BackgroundFileHash(path, mapped)
    if suffix in (".csv", ".parquet"):
        data = path.read_bytes()
        info = _BackgroundFileHash(path, data)
    if suffix == ".csv":
        return _csv_rows(path, data), info
    if suffix == ".parquet":
        return _parquet_rows(path), info
    raise DataError(f"{path}: unsupported file type (expected .jsonl, .csv or .parquet)")


def _map_file(path: Path) -> bytes | mmap.mmap:
    """The file's bytes without copying them into the heap (a read-only map; empty files as b"")."""
    with open(path, "rb") as fh:
        try:
            return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # empty file
            return b""


def _jsonl_rows(path: Path, data: bytes | mmap.mmap) -> Iterator[tuple[int, dict[str, Any]]]:
    """Parse line by line from zero-copy slices (LiveCodeBench lines are megabytes each)."""
    view = memoryview(data)
    size, pos, lineno = len(data), 0, 0
    while pos < size:
        nl = data.find(b"\n", pos)
        end = size if nl == -1 else nl
        line = view[pos:end]
        pos, lineno = end + 1, lineno + 1
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            raw = bytes(line)
            if not raw.strip():
                continue
            try:  # orjson is stricter than the stdlib on a few inputs (e.g. NaN): defer to it
                obj = json.loads(raw)
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
            raise DataError(
                f"{path}:{line}: expected {len(header)} columns ({','.join(header)}), got {len(values)}"
            )
        yield line, dict(zip(header, values, strict=True))


def _parquet_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    # import cost: pandas, only on this path
    import pandas as pd

    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many types
        raise DataError(f"{path}: unreadable parquet ({exc})") from None
    for i, rec in enumerate(df.to_dict(orient="records")):
        yield i + 1, {str(k): canonical_value(v) for k, v in rec.items()}  # parquet column names are str


def find_file(directory: Path, stem: str) -> Path:
    """``directory/stem`` with the first existing extension of .jsonl, .csv, .parquet."""
    for ext in (".jsonl", ".csv", ".parquet"):
        p = directory / f"{stem}{ext}"
        if p.is_file():
            return p
    raise DataError(f"{directory}/{stem}.{{jsonl,csv,parquet}}: file not found")
