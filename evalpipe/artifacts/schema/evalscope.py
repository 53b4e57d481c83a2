"""Artifacts of the EvalScope stage: the index map, prompt hashes, per-sample errors, task records.

EvalScope addresses a sample only by its positional ``index`` inside (benchmark, subset).  These files
are what ties that index back to a manifest entry and lets a later stage (resume, audit) prove that a
prediction belongs to the question it claims to answer:

* ``index_map.json`` — (benchmark, subset, index) → source_id, record hash and the question text the
  rendered prompt must contain;
* ``prompt_hashes.jsonl`` — the rendered-prompt hash of each entry, recorded when it was *first*
  rendered (append-only: a resume adds entries it has not seen, never rewrites one);
* ``evalscope_errors.jsonl`` — samples whose request or review raised inside EvalScope (EvalScope
  itself only counts them);
* ``evalscope_tasks.json`` — the EvalScope task configs the run used (no secrets), so a resume can
  refuse to mix answers produced under different settings.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from evalpipe.artifacts.schema.base import Artifact, Row


class IndexMapEntry(Row):
    benchmark: str
    subset: str
    index: int = Field(description="EvalScope's positional index within (benchmark, subset).")
    source_id: str
    record_sha256: str
    stratum: str
    question: str = Field(description="The benchmark's question field, as materialized (identity check).")
    instruction_ids: list[str] | None = Field(
        default=None, description="IFEval: the entry's instruction_id_list."
    )
    choice_order: list[str] | None = Field(
        default=None,
        description="The record fields the adapter rendered as options A, B, C, … in that order, where the "
        "adapter reorders them (GPQA-Diamond: see evalpipe/benchmarks/gpqa_diamond.py for the rule).",
    )


class MaterializedDataset(Row):
    """One benchmark's local HF ``datasets`` directory handed to EvalScope."""

    benchmark: str
    path: str = Field(description="Directory relative to the run directory.")
    eval_split: str
    fewshot_split: str | None = None
    subsets: list[str]
    files: dict[str, str] = Field(description="File (relative to the dataset dir) → sha256 of its bytes.")
    fewshot_rows: dict[str, int] = Field(
        default_factory=dict, description="Subset → rows in its few-shot split."
    )


class IndexMap(Artifact):
    schema_version: int = 1
    datasets: list[MaterializedDataset]
    entries: list[IndexMapEntry]

    def for_benchmark(self, benchmark: str) -> list[IndexMapEntry]:
        return [e for e in self.entries if e.benchmark == benchmark]

    def dataset(self, benchmark: str) -> MaterializedDataset:
        for d in self.datasets:
            if d.benchmark == benchmark:
                return d
        raise KeyError(benchmark)


class PromptHashRecord(Row):
    """The rendered prompt of an entry, as EvalScope's adapter built it before any request."""

    schema_version: int = 1
    benchmark: str
    subset: str
    index: int
    source_id: str
    prompt_sha256: str = Field(description="evalpipe.hashing.prompt_sha256 of the rendered input messages.")
    n_messages: int
    recorded_at: str = Field(description="UTC ISO-8601")
    evalscope_version: str


#: Where inside EvalScope a sample failed: asking the model, or scoring its answer.
ErrorPhase = Literal["predict", "review"]


class EvalscopeErrorRecord(Row):
    """A sample whose prediction or review raised inside EvalScope (``ignore_errors`` kept going)."""

    schema_version: int = 1
    benchmark: str
    subset: str
    index: int
    phase: ErrorPhase
    error_type: str
    message: str
    at: str = Field(description="UTC ISO-8601")


class EvalscopeTask(Row):
    """The EvalScope ``TaskConfig`` arguments used for one benchmark (api key never included)."""

    benchmark: str
    work_dir: str = Field(description="Relative to the run directory.")
    model_id: str
    task: dict[str, Any] = Field(description="TaskConfig keyword arguments as passed (api_url included).")
    started_at: str
    resumed: bool = False
    rerun_review: bool = False
    worker_pid: int | None = Field(
        None,
        description="Process id of the EvalScope worker that rendered and ran the benchmark (one worker "
        "serves every benchmark of a stage); absent in runs recorded before it was kept.",
    )


class EvalscopeTasks(Artifact):
    schema_version: int = 1
    evalscope_version: str
    nltk_punkt_tab: bool = Field(description="NLTK punkt_tab was installed when the stage ran.")
    tasks: list[EvalscopeTask]

    def task_for(self, benchmark: str) -> EvalscopeTask | None:
        for t in self.tasks:
            if t.benchmark == benchmark:
                return t
        return None
