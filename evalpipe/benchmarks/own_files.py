"""Your own dataset (``general_mcq``, ``general_qa``): which file EvalScope would read, and the rows' ids and
strata from the columns the config names.  Not a benchmark itself (not in ``_MODULES``).

**Files.**  ``source.local`` names one file, or a folder in the layout of EvalScope's ``LocalDataLoader``
(what ``general_mcq``/``general_qa`` read with ``dataset_id: <folder>``): for a split of subset ``s`` the
loader takes, format by format in the order .jsonl, .csv, .tsv, .parquet, the first of ``s_<split>.<ext>``
and ``s.<ext>`` that exists — evalpipe picks the same file (and refuses a .tsv, which it does not read).
The subset is the config's ``subset`` (default ``default``, EvalScope's).

**Canonical record** = every column of the row that is not null, values as read (a CSV gives text); its
hash is the record hash.  **Id** = the ``source.id_column`` value (text, non-empty, unique), or without one
the first 16 hex characters of the record's canonical sha256 — so two identical rows are one record twice,
which is refused.  **Stratum** ``column`` = the ``source.stratify_column`` value (non-empty); without a
configured column it is unknown and ``stratify_by: column`` stops with one line.  Few-shot rows (the
``dev`` file of ``general_mcq``) always take the sha256 id: they are never sampled.

**Bad rows** stop the load with one line naming file, line, row (1-based, header excluded) and column:
an empty question, a missing answer, an empty id, a duplicate id (with the line of its first occurrence).

**What EvalScope receives.**  The rows as read; a CSV row's text with line endings as EvalScope's own CSV
reader returns them (it opens the file in Python's universal-newline mode, so CRLF/CR inside a quoted
field arrive as LF), written as JSONL in the loader's layout (``BenchmarkMeta.layout = "local_files"``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalpipe.artifacts.schema.sources import SourceFile
from evalpipe.benchmarks.base import UserColumns
from evalpipe.errors import DataError
from evalpipe.hashing import normalize_newlines, sha256_json
from evalpipe.sources.base import SourceRecord, canonical_scalar, canonical_value, read_rows

#: EvalScope 1.14 ``LocalDataLoader`` formats, in its order (evalpipe reads all but .tsv)
LOADER_EXTENSIONS = (".jsonl", ".csv", ".tsv", ".parquet")
ID_RULE = "source.id_column if the config names one, else first 16 hex of the record's canonical sha256"


def loader_file(location: Path, subset: str, split: str) -> Path | None:
    """The file EvalScope's ``LocalDataLoader`` reads for ``(subset, split)`` in folder ``location``."""
    for ext in LOADER_EXTENSIONS:
        for stem in (f"{subset}_{split}", subset):
            path = location / f"{stem}{ext}"
            if path.is_file():
                if ext == ".tsv":
                    raise DataError(
                        f"{path}: evalpipe reads .jsonl, .csv or .parquet; convert this .tsv file"
                    )
                return path
    return None


def eval_file(location: Path, subset: str, split: str, name: str) -> Path:
    """The evaluation file: ``location`` itself, or the loader's file for the split in that folder."""
    if location.is_file():
        return location
    path = loader_file(location, subset, split)
    if path is None:
        raise DataError(
            f"{location}/{subset}_{split}.{{jsonl,csv,parquet}}: file not found ({name} reads "
            f"<subset>_{split}.<ext> or <subset>.<ext>; subset {subset!r})"
        )
    return path


def cell(raw: dict[str, Any], column: str) -> Any:
    """A cell's value; an empty or whitespace-only text counts as absent (None)."""
    value = canonical_scalar(raw.get(column))
    if isinstance(value, str) and not value.strip():
        return None
    return value


@dataclass(frozen=True)
class Where:
    """A row's address in error messages: ``file:line: row N``."""

    file: str
    line: int
    row: int

    def fail(self, column: str | None, problem: str) -> DataError:
        col = f", column {column!r}" if column else ""
        return DataError(f"{self.file}:{self.line}: row {self.row + 1}{col}: {problem}")


def canonical_row(raw: dict[str, Any]) -> dict[str, Any]:
    return {str(k): v for k, v in ((k, canonical_value(v)) for k, v in raw.items()) if v is not None}


def identify(
    benchmark: str,
    subset: str,
    raw: dict[str, Any],
    canonical: dict[str, Any],
    at: Where,
    columns: UserColumns,
) -> SourceRecord:
    """The record with its id and ``column`` stratum (see the module docstring)."""
    sha = sha256_json(canonical)
    if columns.id_column is not None:
        value = cell(raw, columns.id_column)
        if value is None:
            raise at.fail(columns.id_column, "empty id (source.id_column)")
        source_id = str(value)
    else:
        source_id = sha[:16]
    stratum = None
    if columns.stratify_column is not None:
        stratum = cell(raw, columns.stratify_column)
        if stratum is None:
            raise at.fail(columns.stratify_column, "empty stratum (source.stratify_column)")
    rec = SourceRecord(
        benchmark=benchmark,
        subset=subset,
        stratum_fields={"column": None if stratum is None else str(stratum)},
        source_id=source_id,
        file=at.file,
        row=at.row,
        raw=raw,
        canonical=canonical,
    )
    rec.record_sha256 = sha
    return rec


#: builds one record from a raw row (validating it) for a subset
RowBuilder = Callable[[dict[str, Any], str, Where, UserColumns], SourceRecord]


def read_file(
    path: Path, subset: str, build: RowBuilder, columns: UserColumns
) -> tuple[list[SourceRecord], SourceFile]:
    """Every row of ``path`` as a record, refusing duplicate ids with both places named."""
    rows, info = read_rows(path)
    out: list[SourceRecord] = []
    first: dict[str, Where] = {}
    try:
        for row_index, (line, raw) in enumerate(rows):
            at = Where(str(path), line, row_index)
            rec = build(raw, subset, at, columns)
            seen = first.get(rec.source_id)
            if seen is not None:
                if columns.id_column is not None:
                    raise at.fail(
                        columns.id_column, f"duplicate id {rec.source_id!r} (first at line {seen.line})"
                    )
                raise at.fail(
                    None,
                    f"the same record as line {seen.line} (duplicate id {rec.source_id}: without "
                    "source.id_column a row's id is its content's sha256)",
                )
            first[rec.source_id] = at
            out.append(rec)
    finally:
        file_info = info.result()
    return out, file_info


def as_evalscope_reads(rec: SourceRecord) -> dict[str, Any]:
    """The row as EvalScope's own reader hands it to the adapter: a CSV file's text with LF line endings."""
    if not rec.file.lower().endswith(".csv"):
        return dict(rec.raw)
    return {k: normalize_newlines(v) if isinstance(v, str) else v for k, v in rec.raw.items()}
