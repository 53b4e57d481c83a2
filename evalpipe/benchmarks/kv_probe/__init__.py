"""KV-cache probes (``kv_probe``): synthetic long-context retrieval items generated from a spec, evidence
placed at chosen token offsets of the served prompt, scored by exact match through EvalScope's TriviaQA
adapter (registered under this name by ``adapter.py``).

A probe folder (``source.local``) holds only ``probe.json`` (``spec.ProbeSpec``): the seed, tasks, context
lengths, depths, KV page size, sparse top-k and the served model's tokenizer.  ``load_local`` generates every
item from it — filler written here (``filler.py``), RULER-style tasks (``tasks.py``), evidence placed and
measured in tokens (``generate.py``) — so the dataset's fingerprint, each record's sha256 and each manifest
entry's ``generated`` block (seed, task, length, placement, targets, measured offsets, context sha256) are
re-derived by ``evalpipe verify``: an item that does not regenerate byte for byte is a difference.

Items derive from the spec's ``seed``, not the config's ``sampling_seed``, on purpose: the folder is the
dataset, so its fingerprint (pinned in configs as ``fingerprint``) and every record's sha256 are functions
of the folder's bytes alone, as for every read benchmark.  ``sampling_seed`` then does what it does
everywhere — choose which of these records a run takes — and a run re-sampled with another seed (``plan``,
``build_manifest(seed=…)``) draws from the same population instead of a different one.  Feeding the
sampling seed into generation would need ``load_local`` (the contract every benchmark meets) to take the
run's seed and would make the dataset's identity change with the selection seed.

Lengths whose prompt would not fit ``context_length`` (the server's context per sequence) are dropped with
one line on stderr naming them: a probe never asks the server to truncate.  Once the server is up, the
context its ``/server_info`` resolved caps the lengths again (``beyond_context``): the sampled items of longer
lengths stay in the manifest and are dropped before anything is sent, listed in ``context_fit.json`` with the
line naming the lengths, the context and its source, and scored ``context_overflow`` like every consented
drop (the selection stays a function of the folder and the seed, whichever server a variant gets).  Strata: ``length``, ``task``,
``placement``, ``length_task``, ``length_placement``; every one that names a length gives the KV-cache view
(paired result per length bucket in compare.json).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalpipe.artifacts.schema.sources import GeneratedItem, SourceFile
from evalpipe.benchmarks.base import (
    Benchmark,
    BenchmarkMeta,
    HubRows,
    HubSplits,
    KeyItem,
    PlannedItem,
    local_data,
)
from evalpipe.benchmarks.kv_probe.filler import (
    sentences as sentences,  # the haystack, the numerics probe's too
)
from evalpipe.benchmarks.kv_probe.generate import Measure, generate, generate_item, placements
from evalpipe.benchmarks.kv_probe.spec import LENGTH_GRID, SPEC_FILE, TASKS, read_spec
from evalpipe.benchmarks.kv_probe.tasks import Draw as Draw  # the numerics probe draws its text alike
from evalpipe.benchmarks.kv_probe.tasks import build
from evalpipe.benchmarks.kv_probe.tokens import FileTokenizer as FileTokenizer  # the numerics probe's too
from evalpipe.benchmarks.kv_probe.tokens import chat_frame as chat_frame
from evalpipe.benchmarks.kv_probe.tokens import resolve_tokenizer
from evalpipe.benchmarks.kv_probe.tokens import tokenizer_directory as tokenizer_directory
from evalpipe.errors import ConfigError, DataError
from evalpipe.hashing import sha256_hex
from evalpipe.sources.base import BenchmarkData, SourceRecord, Split

NAME = "kv_probe"
LENGTH_STRATA = ("length", "length_task", "length_placement")


def dropped_line(dropped: list[int], context_length: int, reserve: int, source: str = "probe.json") -> str:
    return (
        f"kv_probe: lengths {', '.join(map(str, dropped))} dropped: with {reserve} tokens reserved for the "
        f"template and the answer they exceed the server's context of {context_length} tokens ({source})"
    )


def _strata(length: str, task: str, placement: str) -> dict[str, str]:
    return {
        "length": length,
        "task": task,
        "placement": placement,
        "length_task": f"{length}/{task}",
        "length_placement": f"{length}/{placement}",
    }


def _record(raw: dict[str, Any], file: str, row: int) -> SourceRecord:
    probe = raw["probe"]
    return SourceRecord(
        benchmark=NAME,
        subset="default",
        stratum_fields=_strata(str(probe["length"]), probe["task"], probe["placement"]),
        source_id=raw["question_id"],
        file=file,
        row=row,
        raw=raw,
        canonical=raw,
    )


class KVProbe(Benchmark):
    """Generated, not read: the folder's spec is the data; the adapter is TriviaQA's under this name."""

    def load_local(self, directory: Path, subset: str | None) -> BenchmarkData:
        spec = read_spec(directory)
        counter, prefix = resolve_tokenizer(spec.tokenizer, directory)
        lengths, dropped = spec.fitting_lengths()
        if dropped and spec.context_length is not None:
            print(dropped_line(dropped, spec.context_length, spec.reserve_tokens), file=sys.stderr)
        if not lengths:
            raise ConfigError(f"{directory / SPEC_FILE}: no length fits the server's context")
        where = str(directory / SPEC_FILE)
        records = [
            _record(raw, where, i) for i, raw in enumerate(generate(spec, Measure(counter, prefix), lengths))
        ]
        data = (directory / SPEC_FILE).read_bytes()
        info = SourceFile(path=where, bytes=len(data), sha256=sha256_hex(data))
        return local_data(NAME, directory, Split("test", records, [info]))

    def load_hub(self, rows: HubRows, where: str, subset: str | None, subsets: list[str]) -> HubSplits:
        raise ConfigError(
            f"{NAME} is generated: set benchmarks[{NAME}].source.local to a folder with {SPEC_FILE}"
        )

    def register_evalscope_adapter(self) -> None:
        # import cost: evalscope (the adapter registers itself there), only when a run binds the benchmark
        from evalpipe.benchmarks.kv_probe import adapter

        assert adapter.NAME == NAME

    def generated_item(self, record: SourceRecord) -> GeneratedItem | None:
        return GeneratedItem.model_validate(record.raw["probe"])

    def evidence(self, item: GeneratedItem, source_id: str) -> tuple[str, ...]:
        """The item's evidence sentences, drawn again from its seed and id (no tokenizer: the draw alone
        decides them, ``generate.generate_item``)."""
        task = next((t for t in TASKS if t == item.task), None)
        return build(task, Draw(item.seed, source_id)).evidence if task is not None else ()

    def regenerate(self, item: GeneratedItem, source_id: str, spec_file: Path) -> SourceRecord:
        spec = read_spec(spec_file.parent).model_copy(update={"seed": item.seed, "page_size": item.page_size})
        counter, prefix = resolve_tokenizer(spec.tokenizer, spec_file.parent)
        if counter.name != item.tokenizer:
            raise DataError(
                f"{source_id}: recorded with tokenizer {item.tokenizer}, {spec_file} now names {counter.name}"
            )
        task = next((t for t in TASKS if t == item.task), None)
        if task is None:
            raise DataError(f"{source_id}: task {item.task!r} is not a kv_probe task")
        raw = generate_item(
            spec, Measure(counter, prefix), task, item.length, item.placement, item.depth, item.index
        )
        if raw["question_id"] != source_id:
            raise DataError(f"{source_id}: its recorded parameters give the id {raw['question_id']}")
        return _record(raw, str(spec_file), item.index)

    def planned_items(self, directory: Path) -> list[PlannedItem] | None:
        """The spec's items (after its own context cap) without generating them: no tokenizer is loaded; each
        is priced at its context length (the template, question and answer reserve come on top)."""
        spec = read_spec(directory)
        lengths, _ = spec.fitting_lengths()
        return [
            PlannedItem(_strata(str(length), task, name), length, spec.reserve_tokens)
            for length in lengths
            for task in spec.tasks
            for name, _ in placements(spec, length)
            for _ in range(spec.items_per_cell)
        ]

    def beyond_context(
        self, records: Sequence[SourceRecord], context: int, source: str
    ) -> tuple[list[str], str | None]:
        if not records:
            return [], None
        spec = read_spec(Path(records[0].file).parent)
        reserve = spec.reserve_tokens
        lengths = sorted({int(r.raw["probe"]["length"]) for r in records})
        dropped = [n for n in lengths if n + reserve > context]
        if not dropped:
            return [], None
        ids = [r.source_id for r in records if int(r.raw["probe"]["length"]) in dropped]
        return ids, dropped_line(dropped, context, reserve, source)

    def length_bucket(self, stratify_by: str, stratum: str) -> str | None:
        return stratum.split("/", 1)[0] if stratify_by in LENGTH_STRATA else None

    def prompt_text(self, row: Mapping[str, Any]) -> str:
        return f"{row['entity_pages']['wiki_context']}\n{row['question']}"

    def key_items(self, data: BenchmarkData, solutions: Mapping[str, Any], sol_path: Path) -> list[KeyItem]:
        out = []
        for rec in data.eval.records:
            raw = rec.raw
            # the question repeats across items; the context's tail before it makes the prompt unique
            needle = f"{raw['entity_pages']['wiki_context'][-160:]}\n\nQuestion: {raw['question']}"
            gold = raw["answer"]["aliases"][0]
            out.append(KeyItem(NAME, rec.source_id, needle, gold, f"The content says so.\nANSWER: {gold}"))
        return out

    def truncated_text(self, item: KeyItem) -> str:
        return "Reading the content from the start, the evidence sits somewhere in the"


BENCHMARK = KVProbe(
    BenchmarkMeta(
        name=NAME,
        version="1",
        display_name="KV-cache probe",
        primary_metric="acc",
        mirror_dir=NAME,
        id_rule="task-length-placement-index (generated from probe.json)",
        local_layout=f"kv_probe/{SPEC_FILE}: seed, tasks, lengths, depths[, page_size, sparse_top_k, tokenizer, "
        "context_length, reserve_tokens]",
        eval_split="test",
        fewshot_split=None,
        question_field="question",
        default_subset="default",
        max_few_shot=0,
        stratifications=("length", "task", "placement", "length_task", "length_placement"),
        file_format="jsonl",
        length_order=tuple(str(n) for n in LENGTH_GRID),
    )
)
