"""The benchmark plugin contract: what a benchmark *is* (``BenchmarkMeta``, data) and what it *does*
(a ``Benchmark`` subclass: typed methods, with defaults where most benchmarks agree).

The pipeline asks the registry (``evalpipe.benchmarks``) for a ``Benchmark`` and never names one.  The
shape follows EvalScope's adapters (``@register_benchmark(BenchmarkMeta(...))`` on a ``DefaultDataAdapter``
subclass that overrides a default only where its benchmark differs) and lm-eval's task registry:
identity, splits, strata and materialisation switches are data; loading, record canonicalisation,
answer-key items, failure classes, post-review checks and extra metrics are methods.  Three methods
have no default (``load_local``, ``load_hub``, ``key_items``): every benchmark reads its own files and
brings the answer key that proves its scoring end to end.

A layer takes the benchmark as the one part it consumes (``evalpipe.benchmarks.parts``: ``DataPart`` for the
samplers and planner, ``EvalScopePart`` for the EvalScope bridge, ``ScoringPart`` for outcome rows and the audit,
``AnswerKeyPart`` for the self-test's answer key); ``Benchmark`` implements all four, and its methods below are
grouped by part.

Every registered benchmark passes one contract test (``tests/benchmarks/test_benchmark_contract.py``): ids unique
and stable, record hashes independent of file format and line endings, declared strata produced on its
bundled data, the materialised dataset loading back through EvalScope at the mapped indices, and the
answer key's positive (100 %) and negative (≤ 10 %) controls through the whole pipeline.

Import rule: a benchmark module (and this one) imports nothing that imports the registry
(``evalpipe.benchmarks``), which imports every benchmark module: the layers below the plugins (``errors``,
``hashing``, ``config``, ``artifacts``, ``sources``) and the plugins that do not ask for benchmarks
(``sandbox``, ``speed``) are free to use; ``tests/repo/test_import_graph.py`` and ``tests/repo/test_layers.py`` fail on a
cycle.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar, cast

from evalpipe.artifacts.schema.evalscope import IndexMap, IndexMapEntry, MaterializedDataset
from evalpipe.artifacts.schema.metrics import MetricResult
from evalpipe.artifacts.schema.outcomes import FailureClass, OutcomeRow
from evalpipe.artifacts.schema.sources import GeneratedItem, SourceFile
from evalpipe.benchmarks.faults import Fault
from evalpipe.errors import ConfigError, DataError
from evalpipe.sandbox.launcher import ProgramLauncher
from evalpipe.sources.base import BenchmarkData, RecordHasher, SourceRecord, Split, read_rows

T = TypeVar("T")


def bundled_data_dir() -> Path:
    """Root of the bundled miniature datasets, one directory per benchmark's ``mirror_dir`` (package data of
    ``evalpipe/selftest/data/``, read by path: the self-test package runs the answer key over this registry)."""
    return Path(__file__).resolve().parents[1] / "selftest" / "data"


class RecordBuilder(Protocol):
    """Builds one canonical record from one raw row (``file``/``line`` name it in errors)."""

    def __call__(self, raw: dict[str, Any], *, file: str, line: int, row: int) -> SourceRecord: ...


#: (subset or None, split) -> rows read from the hub (already value-canonicalised)
HubRows = Callable[[str | None, str], Iterable[dict[str, Any]]]
#: One review's ``sample_score.score`` as EvalScope writes it (``value``, ``extracted_prediction``,
#: ``main_score_name``, ``metadata``, …).
ReviewScore = Mapping[str, Any]


class RecordFilter(Protocol):
    """A sampling rule's ``filter`` (config ``SamplingFilter``) as a benchmark's ``filter_records`` reads it."""

    @property
    def versions(self) -> list[str] | None: ...
    @property
    def start_date(self) -> str | None: ...
    @property
    def end_date(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class KeyItem:
    """One answer-key item with its gold answer and the positive response."""

    benchmark: str
    source_id: str
    needle: str  # the text that identifies the item inside a prompt
    gold: str  # comparable gold: GSM8K number, C-Eval letter, IFEval response, solution code, …
    answer: str  # the response the positive control sends
    func_name: str | None = None  # code benchmarks: functional (LeetCode-style) problems

    @property
    def label(self) -> str:
        return f"{self.benchmark}:{self.source_id}"


@dataclass(frozen=True)
class PlannedItem:
    """One item a generator's spec would make, known without making it (``Benchmark.planned_items``): its
    strata and the prompt tokens it is built to (``evalpipe plan`` prices prefill from them)."""

    strata: Mapping[str, str]
    input_tokens: int
    #: Tokens the item needs beside its prompt (template, question and answer): a context shorter than
    #: ``input_tokens + reserve_tokens`` drops it before generation (``evalpipe plan`` models that drop).
    reserve_tokens: int = 0


@dataclass(frozen=True, slots=True)
class HubSplits:
    """What a hub load yields: the evaluation split and the few-shot split (if any)."""

    eval: Split
    fewshot: Split | None = None


@dataclass(frozen=True, slots=True)
class BenchmarkMeta:
    """Everything evalpipe needs to know about a benchmark that is a fact, not behaviour."""

    # -- identity: EvalScope adapter name (= evalpipe's name = the module's name), report label, metric
    name: str
    display_name: str
    primary_metric: str  # the metric ``OutcomeRow.score`` holds (EvalScope's main metric for the adapter)
    # -- data: the benchmark's folder inside a mirror root (``../shared/datasets`` layout)
    mirror_dir: str
    # -- EvalScope adapter facts, read from evalscope/benchmarks/<name> (tests/evalscope_bridge/test_evalscope_materialize.py
    #    test_adapter_facts_match_installed_evalscope fails when an EvalScope upgrade changes them)
    eval_split: str
    fewshot_split: str | None
    question_field: str  # record field the adapter puts verbatim into the final user message
    default_subset: str | None
    # -- the benchmark's own version, recorded per run (``run.json`` ``benchmark_versions``) and compared by
    #    ``evalpipe compare`` (two runs of different versions do not pair).  Bump it when what a run of it
    #    measures changes: its prompt (materialised row, template), its scoring (extraction, metric, failure
    #    classes, post-review checks) or its selection (record ids, canonical record, strata).  Loading
    #    the same records faster, or better wording in the report, keeps it.
    version: str
    max_few_shot: int | None = None  # None: unbounded (limited by the few-shot split)
    # A module that registers this benchmark's EvalScope adapter, imported by the EvalScope worker before
    # the adapter is looked up.  None: EvalScope ships the adapter (every built-in benchmark).
    evalscope_module: str | None = None
    # -- sampling: stratifications besides "none"; whether ``filter_records`` is implemented
    stratifications: tuple[str, ...] = ()
    record_filter: bool = False
    # -- materialisation
    file_format: Literal["parquet", "jsonl"] = "parquet"
    all_strings: bool = False  # every column a string (values reach the adapter as text)
    fewshot_per_subset: bool = False  # the few-shot rows of a subset are the records of that subset
    # The adapter loads one ``default`` config and regroups its rows into subsets by a record field
    # (EvalScope ``reformat_subset``), renumbering each subset from 0 in file order.
    regrouped: bool = False
    forbidden_extra_params: frozenset[str] = frozenset()  # extra_params that make EvalScope drop rows
    # -- scoring environment: the EvalScope module whose ``check_nltk_data`` must not download (the
    #    benchmark's scoring may need NLTK data; ``Benchmark.needs_punkt`` says for which entries)
    nltk_module: str | None = None
    # -- KV-cache view: the order of the length buckets ``Benchmark.length_bucket`` returns
    length_order: tuple[str, ...] = ()
    # -- execution: its review runs model-written code (programs), which evalpipe then runs only in the
    #    run's sandbox: the preflight resolves one and the EvalScope worker calls ``prepare_review``
    executes_code: bool = False
    # -- self-test: faults whose default target is this benchmark's first item; where its miniature lives
    default_faults: tuple[Fault, ...] = ()
    bundled_data: Path | None = None  # None: evalpipe/selftest/data/<mirror_dir>
    # -- how EvalScope reads the materialised dataset: ``configs`` = an HF ``datasets`` folder (README
    #    ``configs:`` block, ``<subset>/<split>.<format>``); ``local_files`` = the flat files of EvalScope's
    #    ``LocalDataLoader`` (``<subset>_<split>.<format>``: adapters whose ``load_from_disk`` passes
    #    ``use_local_loader=True``, e.g. ``general_mcq``/``general_qa``)
    layout: Literal["configs", "local_files"] = "configs"
    # -- the data is the user's own (``general_mcq``/``general_qa``): ``source.local`` names it (a folder in
    #    EvalScope's layout or one file), there is no hub copy, and the config may name the id column and a
    #    stratification column (``source.id_column``/``source.stratify_column``, see ``UserColumns``)
    user_files: bool = False
    # -- planning without the data: records in the evaluation split of the default subset(s) as published
    #    (``evalpipe plan`` uses it for an unfiltered, unstratified plan instead of loading the data; None:
    #    not fixed, e.g. a benchmark that grows by release, or the user's own files)
    population: int | None = None
    # -- what ``evalpipe benchmarks`` prints: how a record's id is made, what a local copy must look like
    id_rule: str = ""
    local_layout: str = ""


@dataclass(frozen=True, slots=True)
class UserColumns:
    """The columns of a user's own dataset the config names (``source.id_column``/``stratify_column``).

    Only benchmarks with ``BenchmarkMeta.user_files`` read them; without an id column a record's id is
    the first 16 hex characters of its canonical sha256, without a stratification column there is no
    ``column`` stratum to sample by.
    """

    id_column: str | None = None
    stratify_column: str | None = None

    @property
    def named(self) -> bool:
        return self.id_column is not None or self.stratify_column is not None


@dataclass
class ReviewContext:
    """What ``Benchmark.post_review`` may use besides the row: one per benchmark and run."""

    benchmark: str
    run_root: Path
    index_map: IndexMap
    #: The run's sandbox (``code_sandbox.json``); None in a run where no benchmark executes code.
    launcher: ProgramLauncher | None = None
    _loaded: dict[str, object] = field(default_factory=dict, repr=False)

    @property
    def dataset(self) -> MaterializedDataset:
        """The benchmark's materialised dataset (relative path, splits, subsets)."""
        return self.index_map.dataset(self.benchmark)

    def once(self, key: str, load: Callable[[], T]) -> T:
        """``load()`` the first time ``key`` is asked for in this run (e.g. the problems' tests), then
        the same object: rows that need nothing cost nothing."""
        if key not in self._loaded:
            self._loaded[key] = load()
        return cast(T, self._loaded[key])


# ---------------------------------------------------------------- helpers for benchmark modules


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


# ---------------------------------------------------------------- the contract


class Benchmark(ABC):
    """One benchmark's behaviour; its facts are ``self.meta``.  A module declares
    ``BENCHMARK = <Subclass>(BenchmarkMeta(...))`` and overrides a method only where it differs."""

    def __init__(self, meta: BenchmarkMeta) -> None:
        self.meta = meta

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.meta.name!r})"

    # -- DataPart: every benchmark reads its own files (canonical records, ids, hashes)

    @abstractmethod
    def load_local(self, directory: Path, subset: str | None) -> BenchmarkData:
        """The full evaluation split (and few-shot split) from a mirror folder (``configured subset``)."""

    @abstractmethod
    def load_hub(self, rows: HubRows, where: str, subset: str | None, subsets: list[str]) -> HubSplits:
        """The same from hub rows (``rows(subset, split)``); ``subsets`` = the adapter's subset list."""

    def with_columns(self, columns: UserColumns) -> Benchmark:
        """This benchmark reading a user's files with the columns the config names (``meta.user_files``);
        a benchmark with a fixed schema has no columns to choose."""
        if not columns.named:
            return self
        raise ConfigError(
            f"benchmark {self.meta.name}: source.id_column/stratify_column apply only to a benchmark that "
            "reads your own files (general_mcq, general_qa)"
        )

    def register_evalscope_adapter(self) -> None:
        """Import ``meta.evalscope_module`` (it registers the adapter with EvalScope); called in a process
        about to look the adapter up.  Nothing to do for an adapter EvalScope ships."""
        if self.meta.evalscope_module:
            import_module(self.meta.evalscope_module)

    def bundled_dir(self) -> Path:
        """The benchmark's miniature for the self-test, in its mirror layout."""
        return self.meta.bundled_data or bundled_data_dir() / self.meta.mirror_dir

    def prepare_review(self, launcher: ProgramLauncher) -> None:
        """Called in the EvalScope worker before the evaluation starts, for a benchmark whose review
        executes model-written code (``meta.executes_code``): route every such execution of the
        adapter through ``launcher`` (the run's sandbox).  A benchmark that declares ``executes_code``
        must override it; the others have nothing to do."""
        if self.meta.executes_code:
            raise NotImplementedError(
                f"{self.meta.name} executes model-written code but does not route it through the sandbox "
                "(override Benchmark.prepare_review)"
            )

    # -- DataPart: sampling

    def strata_choices(self) -> frozenset[str]:
        return frozenset(("none", *self.meta.stratifications))

    def filter_records(self, records: list[SourceRecord], flt: RecordFilter) -> list[SourceRecord]:
        """Records a sampling rule's ``filter`` keeps (only where ``meta.record_filter``)."""
        raise ConfigError(f"sampling rule for {self.meta.name}: this benchmark has no record filter")

    def length_bucket(self, stratify_by: str, stratum: str) -> str | None:
        """The context-length bucket of ``stratum`` under ``stratify_by`` (KV-cache view); None: none."""
        return None

    def generated_item(self, record: SourceRecord) -> GeneratedItem | None:
        """How a generated record was made, recorded in its manifest entry (and re-derived by ``verify``);
        None for a benchmark whose records are read from files."""
        return None

    def evidence(self, item: GeneratedItem, source_id: str) -> tuple[str, ...]:
        """The evidence sentences a generated item placed in its context, verbatim (the explorer highlights
        them and keeps a window around each when it cuts a long prompt); () for a read benchmark."""
        return ()

    def regenerate(self, item: GeneratedItem, source_id: str, spec_file: Path) -> SourceRecord:
        """The record a generated entry's recorded parameters give, made again from the generator's spec
        (``spec_file``, the records' ``file``); ``verify-sample`` compares it with the manifest's hash and
        the materialised row."""
        raise DataError(f"{self.meta.name}: records are read, not generated; nothing to regenerate")

    def planned_items(self, directory: Path) -> list[PlannedItem] | None:
        """Every item the local folder ``directory`` would give, counted without loading or generating it
        (``evalpipe plan``: n, N and prefill tokens with no data read); None: only loading the data tells."""
        return None

    def beyond_context(
        self, records: Sequence[SourceRecord], context: int, source: str
    ) -> tuple[list[str], str | None]:
        """The records built for more context than ``context`` (tokens per request, as the server resolved
        it: ``source``) and one line naming the lengths dropped and why.  Default: none — a read benchmark's
        prompts are checked against the context by the context-fit estimate instead."""
        return [], None

    # -- EvalScopePart: materialisation and preflight (with register_evalscope_adapter, prepare_review above)

    def materialize_row(self, record: SourceRecord, pinned: bool, where: str) -> dict[str, Any]:
        """The row written for EvalScope (``pinned``: the dataset's fingerprint is pinned in the config)."""
        return dict(record.raw)

    def instruction_ids(self, row: Mapping[str, Any]) -> list[str] | None:
        """Per-row instruction ids recorded in the index map (IFEval); None: not applicable."""
        return None

    def choice_order(self, row: Mapping[str, Any]) -> list[str] | None:
        """The record fields the adapter renders as options A, B, C, … in that order, recorded per entry in
        the index map when the adapter reorders them (GPQA-Diamond); None: the fields' own order."""
        return None

    def question_text(self, row: Mapping[str, Any]) -> object:
        """The question text the adapter puts into the final user message (the identity check's needle):
        the question field as materialised, unless the adapter transforms it (e.g. strips it)."""
        return row.get(self.meta.question_field)

    def prompt_text(self, row: Mapping[str, Any]) -> str:
        """The record text a prompt is built from, for the context-fit token estimate."""
        return str(row.get(self.meta.question_field) or "")

    # -- ScoringPart: outcomes

    def classify_wrong(self, score: ReviewScore) -> tuple[FailureClass, str | None]:
        """Failure class of a scored answer that is not correct: most adapters extract an answer first,
        so nothing extracted is ``unparsable_answer``, anything else ``wrong``."""
        extracted = score.get("extracted_prediction")
        if not isinstance(extracted, str) or not extracted.strip():
            return "unparsable_answer", None
        return "wrong", None

    def scoring_error_hint(self, entry: IndexMapEntry, score: ReviewScore, punkt_tab: bool) -> str | None:
        """Why a review produced no score, when the benchmark knows better than the review; None: no hint."""
        return None

    def needs_punkt(self, entry: IndexMapEntry) -> bool:
        """Scoring this entry needs NLTK's punkt_tab (see ``meta.nltk_module``)."""
        return False

    def post_review(self, row: OutcomeRow, score: ReviewScore, context: ReviewContext) -> OutcomeRow:
        """The outcome row of a reviewed sample after the benchmark's own checks (default: unchanged).

        A benchmark whose answers are programs records here how each ran and may re-run one (through
        ``context.launcher``, the run's sandbox) when the review's verdict depends on the host rather
        than the program.
        """
        return row

    def secondary_metrics(self, rows: Sequence[OutcomeRow | None]) -> list[MetricResult]:
        """Metrics besides the primary one, over the benchmark's rows (one per manifest entry, None
        where the entry has no row)."""
        return []

    # -- AnswerKeyPart: the items that prove the benchmark's scoring end to end (with bundled_dir above)

    @abstractmethod
    def key_items(self, data: BenchmarkData, solutions: Mapping[str, Any], sol_path: Path) -> list[KeyItem]:
        """One item per evaluation record, with the response its adapter scores correct; ``solutions``
        holds the responses the data cannot supply (``solutions.json`` of the data directory)."""

    def truncated_text(self, item: KeyItem) -> str:
        """What the model had written when its budget ran out (truncate fault): no final answer."""
        return item.answer[: max(1, len(item.answer) // 3)]  # the first third of the response
