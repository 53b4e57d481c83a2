"""What a benchmark module declares: one ``Benchmark`` value holding everything benchmark-specific.

The pipeline asks the registry (``evalpipe.benchmarks``) for a ``Benchmark`` and never names one.  The
shape follows EvalScope's ``@register_benchmark(BenchmarkMeta(...))`` adapters and lm-eval's task
registry: identity, splits and prompts' needle field are data; loading, record canonicalisation,
materialisation quirks, failure-class hooks and answer-key behaviour are functions the module supplies.

Benchmark modules import only ``sources.base``, ``errors`` and ``hashing`` at module level (the config
models build their ``BenchmarkName`` literal from the registry, so a module importing the config would
be a cycle); anything heavier is imported inside the hook that needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from evalpipe.errors import DataError
from evalpipe.schema.sources import SourceFile
from evalpipe.sources.base import BenchmarkData, RecordHasher, SourceRecord, Split, read_rows

# (raw row, *, file, line, row) -> SourceRecord
RecordBuilder = Callable[..., SourceRecord]
# (subset or None, split) -> rows read from the hub (already value-canonicalised)
HubRows = Callable[[str | None, str], Iterable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class KeyItem:
    """One answer-key item with its gold answer and the positive response."""

    benchmark: str
    source_id: str
    needle: str  # the text that identifies the item inside a prompt
    gold: str  # comparable gold: GSM8K number, C-Eval letter, IFEval response, LCB solution code, …
    answer: str  # the response the positive control sends
    func_name: str | None = None  # LiveCodeBench functional (LeetCode-style) problems

    @property
    def label(self) -> str:
        return f"{self.benchmark}:{self.source_id}"


@dataclass(frozen=True, slots=True)
class HubSplits:
    """What a hub load yields: the evaluation split and the few-shot split (if any)."""

    eval: Split
    fewshot: Split | None = None


def fenced(code: str) -> str:
    """Code in a fenced ``python`` block (how code answers are written)."""
    return f"```python\n{code.rstrip()}\n```"


def text_field(value: Any, file: str, line: int, field_name: str) -> str:
    if not isinstance(value, str):
        raise DataError(f"{file}:{line}: field {field_name!r} must be text, got {type(value).__name__}")
    return value


def read_records(path: Path, build: RecordBuilder) -> tuple[list[SourceRecord], SourceFile]:
    """Every row of ``path`` through ``build``, hashed; and the file's provenance."""
    rows, info = read_rows(path)
    hasher = RecordHasher()
    out = []
    try:
        for row_index, (line, raw) in enumerate(rows):
            out.append(hasher.add(build(raw, file=str(path), line=line, row=row_index)))
    finally:
        hasher.finish()
    return out, info.result()


def hub_records(rows: Iterable[dict[str, Any]], where: str, build: RecordBuilder) -> list[SourceRecord]:
    return [build(raw, file=where, line=i + 1, row=i) for i, raw in enumerate(rows)]


def local_data(name: str, directory: Path, eval_split: Split, fewshot: Split | None = None) -> BenchmarkData:
    return BenchmarkData(
        benchmark=name, kind="local", location=str(directory), eval=eval_split, fewshot=fewshot
    )


def _no_scoring_hint(entry: Any, score: Mapping[str, Any], punkt_tab: bool) -> str | None:
    return None


@dataclass(frozen=True)
class Benchmark:
    """Everything evalpipe knows about one benchmark (see the module docstring)."""

    # -- identity: EvalScope adapter name (= evalpipe's name), report label and primary metric
    name: str
    display_name: str
    primary_metric: str  # the metric ``OutcomeRow.score`` holds (EvalScope's main metric for the adapter)
    # -- data: folder inside a mirror root, loaders
    mirror_dir: str
    load_local: Callable[[Path, str | None], BenchmarkData]  # (directory, configured subset)
    load_hub: Callable[[HubRows, str, str | None, list[str]], HubSplits]  # (rows, where, subset, subsets)
    # -- EvalScope adapter facts (read from evalscope/benchmarks/<name>; tests/test_evalscope_facts.py)
    eval_split: str
    fewshot_split: str | None
    question_field: str  # record field the adapter puts verbatim into the final user message
    default_subset: str | None
    max_few_shot: int | None = None  # None: unbounded (limited by the few-shot split)
    # -- sampling: stratifications besides "none", and the plan filter (if the benchmark has one)
    stratifications: tuple[str, ...] = ()
    filter_records: Callable[[list[SourceRecord], Any], list[SourceRecord]] | None = None
    # -- materialisation
    file_format: Literal["parquet", "jsonl"] = "parquet"
    all_strings: bool = False  # every column a string (values reach the adapter as text)
    materialize_row: Callable[[SourceRecord, bool, str], dict[str, Any]] | None = None  # (rec, pinned, where)
    fewshot_per_subset: bool = False  # the few-shot rows of a subset are the records of that subset
    # The adapter loads one ``default`` config and regroups its rows into subsets by a record field
    # (EvalScope ``reformat_subset``), renumbering each subset from 0 in file order.
    regrouped: bool = False
    forbidden_extra_params: frozenset[str] = frozenset()  # extra_params that make EvalScope drop rows
    instruction_ids: Callable[[dict[str, Any]], list[str] | None] | None = None  # index-map extra
    # -- outcomes: a scored-but-not-correct answer's failure class, a scoring error's explanation
    classify_wrong: Callable[[Mapping[str, Any]], tuple[str, str | None]] | None = None
    # answers are programs run against tests by EvalScope's LiveCodeBench harness: outcomes record how each
    # ran, and one that timed out is re-checked alone (evalscope_bridge.code_recheck)
    executes_code: bool = False
    scoring_error_hint: Callable[[Any, Mapping[str, Any], bool], str | None] = _no_scoring_hint
    needs_punkt: Callable[[Any], bool] | None = None  # index-map entry needs NLTK punkt_tab to score
    nltk_module: str | None = None  # EvalScope module whose ``check_nltk_data`` must not download
    secondary_metrics: Callable[..., list[Any]] | None = None  # (entries, rows) -> [MetricResult]
    # -- KV-cache view: the context-length bucket of a stratum under a stratification (None: no bucket)
    length_bucket: Callable[[str, str], str | None] | None = None
    length_order: tuple[str, ...] = ()
    # -- preflight: the record text a prompt is built from (default: the question field), for token estimates
    prompt_text: Callable[[Mapping[str, Any]], str] | None = None
    # -- answer key
    key_items: Callable[[BenchmarkData, Mapping[str, Any], Path], list[KeyItem]] | None = None
    truncated_text: Callable[[KeyItem], str] | None = None
    default_faults: tuple[str, ...] = ()  # faults whose default target is this benchmark's first item
    notes: dict[str, str] = field(default_factory=dict)

    def strata_choices(self) -> frozenset[str]:
        return frozenset(("none", *self.stratifications))
