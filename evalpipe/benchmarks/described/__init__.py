"""Benchmarks described in YAML, with no Python: a folder holding ``benchmark.yaml`` and its question/answer
rows, scored by exact match through EvalScope (lm-eval adds most of its tasks as data the same way).

**The description** (``benchmark.yaml``, ``Description``: unknown keys refused)::

    schema_version: 1
    name: unit_facts              # the benchmark's name (config, reports, EvalScope adapter)
    display_name: Unit facts
    version: "1"                  # bump when the questions, answers or scoring change (BenchmarkMeta.version)
    description: …                # one paragraph, shown by `evalpipe benchmarks`
    scoring: exact_match          # EvalScope's exact_match metric: whole response, stripped, lower-cased
    id_field: id                  # optional: the column holding each row's id (else first 16 hex of sha256)
    strata: [topic]               # optional: columns to stratify by (each one a stratification)

**The data** sits beside it in EvalScope's ``general_qa`` layout: ``default_test.jsonl`` (or ``default.jsonl``,
``.csv``, ``.parquet``), one row per item with ``question`` and ``answer`` (text), optional ``system``, and the
columns the description names.  ``source.local`` in a run config may point at another folder or file in the
same schema; without one a run reads ``<dataset root>/<name>``, and the answer-key self-test reads the
description's own folder.

**Scoring** is EvalScope's, never evalpipe's: ``general_qa``'s adapter reads the rows (question → the user
message, ``system`` → the system message, answer → the target) and EvalScope's ``exact_match`` metric scores the
response (``adapter.py`` registers that pair under the benchmark's name in the EvalScope worker).

**Where descriptions are found**: each folder under ``evalpipe/benchmarks/described/`` holding a
``benchmark.yaml`` (built in, registered after the Python built-ins, by folder name), and the files or folders
that ``EVALPIPE_BENCHMARK_DESCRIPTIONS`` lists (comma-separated), registered last — read once, when the registry
is first built, and inherited by child processes (the EvalScope worker, the answer-key server).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalpipe.benchmarks.base import (
    Benchmark,
    BenchmarkMeta,
    HubRows,
    HubSplits,
    KeyItem,
    UserColumns,
    local_data,
)
from evalpipe.benchmarks.own_files import Where, canonical_row, cell, eval_file, read_file
from evalpipe.errors import ConfigError
from evalpipe.hashing import sha256_json
from evalpipe.sources.base import BenchmarkData, SourceRecord, Split

#: The file a described benchmark's folder holds.
DESCRIPTION_FILE = "benchmark.yaml"
#: Environment variable listing extra descriptions (comma-separated ``benchmark.yaml`` files or their folders).
DESCRIPTIONS_ENV = "EVALPIPE_BENCHMARK_DESCRIPTIONS"
#: The built-in descriptions' folder.
BUILTIN_DIR = Path(__file__).resolve().parent
SUBSET = "default"
SPLIT = "test"


class Description(BaseModel):
    """``benchmark.yaml``: everything a simple question/answer benchmark is, as data."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="The benchmark's name (and its adapter's).")
    display_name: str = Field(min_length=1)
    version: str = Field(min_length=1, description="Bumped when the items or the scoring change.")
    description: str = ""
    scoring: Literal["exact_match"] = Field(
        description="EvalScope's metric: exact_match compares the stripped, lower-cased response and answer."
    )
    id_field: str | None = Field(default=None, description="Column of each row's id; None: sha256 of the row.")
    strata: tuple[str, ...] = Field(default=(), description="Columns to stratify by, one stratification each.")


def read_description(path: Path) -> Description:
    """The description in ``path`` (a ``benchmark.yaml`` or its folder); ConfigError in one line naming it."""
    path = path / DESCRIPTION_FILE if path.is_dir() else path
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        return Description.model_validate(raw)
    except OSError as exc:
        raise ConfigError(f"{path}: unreadable benchmark description ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not YAML ({exc})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise ConfigError(f"{path}: {where}: {first['msg']}") from None


class DescribedQA(Benchmark):
    """A benchmark from its ``Description``: question/answer rows read as ``general_qa`` reads them, the answer
    key from the rows themselves, the EvalScope adapter registered under its name (``adapter.py``)."""

    def __init__(self, description: Description, folder: Path) -> None:
        self.description, self.folder = description, folder
        d = description
        super().__init__(
            BenchmarkMeta(
                name=d.name,
                version=d.version,
                display_name=d.display_name,
                primary_metric=d.scoring,
                mirror_dir=d.name,
                eval_split=SPLIT,
                fewshot_split=None,
                question_field="question",
                default_subset=SUBSET,
                max_few_shot=0,
                stratifications=d.strata,
                file_format="jsonl",
                layout="local_files",
                bundled_data=folder,
                id_rule=f"the {d.id_field!r} column" if d.id_field else "first 16 hex of the row's canonical sha256",
                local_layout=(
                    f"{SUBSET}_{SPLIT}.{{jsonl,csv,parquet}} (or {SUBSET}.<ext>): question, answer"
                    + "".join(f", {c}" for c in (d.id_field, *d.strata) if c)
                    + "[, system]"
                    + f"; described by {folder.name}/{DESCRIPTION_FILE}"
                ),
            )
        )

    def _build(self, raw: dict[str, Any], subset: str, at: Where, columns: UserColumns) -> SourceRecord:
        for column in ("question", "answer"):
            if not isinstance(raw.get(column), str) or not raw[column].strip():
                raise at.fail(column, f"{column} must be non-empty text")
        canonical = canonical_row(raw)
        sha = sha256_json(canonical)
        source_id = sha[:16]
        if self.description.id_field is not None:
            value = cell(raw, self.description.id_field)
            if value is None:
                raise at.fail(self.description.id_field, "empty id")
            source_id = str(value)
        strata = {}
        for column in self.description.strata:
            value = cell(raw, column)
            if value is None:
                raise at.fail(column, "empty stratum")
            strata[column] = str(value)
        rec = SourceRecord(
            benchmark=self.meta.name,
            subset=subset,
            stratum_fields=strata,
            source_id=source_id,
            file=at.file,
            row=at.row,
            raw=raw,
            canonical=canonical,
        )
        rec.record_sha256 = sha
        return rec

    def load_local(self, directory: Path, subset: str | None) -> BenchmarkData:
        sub = subset or SUBSET
        path = eval_file(directory, sub, SPLIT, self.meta.name)
        records, info = read_file(path, sub, self._build, UserColumns(id_column=self.description.id_field))
        return local_data(self.meta.name, directory, Split(SPLIT, records, [info]))

    def load_hub(self, rows: HubRows, where: str, subset: str | None, subsets: list[str]) -> HubSplits:
        raise ConfigError(
            f"{self.meta.name} is described by {self.folder / DESCRIPTION_FILE}: its data is a local folder "
            f"(set benchmarks[{self.meta.name}].source.local or put it under the dataset root)"
        )

    def register_evalscope_adapter(self) -> None:
        # import cost: EvalScope takes seconds to import, and only the worker about to run it needs it
        from evalpipe.benchmarks.described.adapter import register

        register(self.meta.name, self.meta.display_name, self.description.description)

    def truncated_text(self, item: KeyItem) -> str:
        return "Let me think"  # a response cut before its answer: no bundled answer is this text

    def key_items(self, data: BenchmarkData, solutions: Mapping[str, Any], sol_path: Path) -> list[KeyItem]:
        return [
            KeyItem(self.meta.name, r.source_id, r.raw["question"], r.raw["answer"], r.raw["answer"])
            for r in data.eval.records
        ]


def _described(path: Path) -> DescribedQA:
    folder = path if path.is_dir() else path.parent
    return DescribedQA(read_description(path), folder)


def builtin() -> list[DescribedQA]:
    """Every built-in description, by folder name."""
    return [_described(p.parent) for p in sorted(BUILTIN_DIR.glob(f"*/{DESCRIPTION_FILE}"))]


def from_environment() -> list[DescribedQA]:
    """The descriptions ``EVALPIPE_BENCHMARK_DESCRIPTIONS`` lists, in its order."""
    listed = [p.strip() for p in os.environ.get(DESCRIPTIONS_ENV, "").split(",") if p.strip()]
    out = []
    for item in listed:
        path = Path(item).expanduser()
        if not (path / DESCRIPTION_FILE if path.is_dir() else path).is_file():
            raise ConfigError(f"{DESCRIPTIONS_ENV}: {path}: no {DESCRIPTION_FILE} there")
        out.append(_described(path))
    return out
