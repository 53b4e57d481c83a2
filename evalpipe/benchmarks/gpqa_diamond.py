"""GPQA-Diamond (EvalScope ``gpqa_diamond``): 198 graduate-level multiple-choice science questions.

GPQA's authors ask that its questions never appear in plain text where crawlers can read them: the
bundled miniature (``evalpipe/selftest/data/gpqa_diamond``) is invented, in the native schema, and no real
item is copied anywhere in evalpipe.

Native schema (the columns of the authors' ``gpqa_diamond.csv``, which the hub copy ModelScope
``AI-ModelScope/gpqa_diamond``, split ``train``, is assumed to keep — the adapter reads the first five):
``Question``, ``Correct Answer``, ``Incorrect Answer 1..3``, ``Record ID``, ``High-level domain``,
``Subdomain`` (+ many annotation columns).  Canonical record: those fields as text (``Subdomain`` when
present; the annotation columns are not part of the item); id = ``Record ID``; stratum ``domain`` =
``High-level domain`` (Physics / Chemistry / Biology).  Mirror layout: ``gpqa_diamond/gpqa_diamond.csv``
(or .jsonl / .parquet).

**Choice order.**  The adapter (EvalScope 1.14 ``GPQAAdapter._process_input``) strips the four answers,
lists them as ``[Incorrect Answer 1, Incorrect Answer 2, Incorrect Answer 3, Correct Answer]`` and shuffles
that list with ``random.Random(seed).shuffle`` where ``seed = int.from_bytes(sha256(Question.strip())
.digest()[:8], "big")``; the target letter is the position of the (stripped) correct answer's first
occurrence.  The order depends only on the question text: the run's seed does not reach it (the task's
``seed`` drives nothing here; ``shuffle_choices`` is off for this adapter).  evalpipe re-derives the
order with the same rule (``choice_order``), records it per entry in ``index_map.json`` (field names in
rendered order, A first) and builds the answer key's letter from it — so the positive control passing is
the proof that the recorded order is the one EvalScope rendered, and ``tests/benchmarks/test_gpqa_diamond.py``
compares it with the adapter's own function.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalpipe.benchmarks.base import (
    Benchmark,
    BenchmarkMeta,
    HubRows,
    HubSplits,
    KeyItem,
    hub_records,
    local_data,
    read_records,
    text_field,
)
from evalpipe.errors import DataError
from evalpipe.sources.base import BenchmarkData, SourceRecord, Split, find_file, require

NAME = "gpqa_diamond"
ANSWERS = ("Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3", "Correct Answer")
FIELDS = ("Record ID", "Question", *ANSWERS, "High-level domain")
OPTIONAL = ("Subdomain",)
LETTERS = "ABCD"


def _stripped(value: Any) -> str:
    return " " if value is None else str(value).strip()  # the adapter's ``preprocess``


def choice_order(row: Mapping[str, Any]) -> list[str]:
    """The answer fields in the order the adapter renders them as A, B, C, D (see the module docstring)."""
    seed = int.from_bytes(hashlib.sha256(_stripped(row.get("Question")).encode("utf-8")).digest()[:8], "big")
    order = list(ANSWERS)
    random.Random(seed).shuffle(order)  # the same permutation the adapter applies to the answer texts
    return order


def target_letter(row: Mapping[str, Any]) -> str:
    """The adapter's target: where the correct answer's text first occurs among the rendered options."""
    texts = [_stripped(row.get(f)) for f in choice_order(row)]
    return LETTERS[texts.index(_stripped(row.get("Correct Answer")))]


def record(raw: dict[str, Any], *, file: str, line: int, row: int) -> SourceRecord:
    require(raw, FIELDS, file, line)
    canonical = {f: text_field(raw[f], file, line, f) for f in FIELDS}
    for f in OPTIONAL:
        if raw.get(f) is not None:
            canonical[f] = text_field(raw[f], file, line, f)
    for f in ("Record ID", "Question", "Correct Answer", "High-level domain"):
        if not canonical[f].strip():
            raise DataError(f"{file}:{line}: field {f!r} is empty")
    return SourceRecord(
        benchmark=NAME,
        subset="default",
        stratum_fields={"domain": canonical["High-level domain"]},
        source_id=canonical["Record ID"],
        file=file,
        row=row,
        raw=raw,
        canonical=canonical,
    )


def response(letter: str) -> str:
    """The form the adapter's template asks for and MultiChoiceAdapter parses: the last line ``ANSWER: X``."""
    return f"Weighing the four options against each other settles it.\nANSWER: {letter}"


class GPQADiamond(Benchmark):
    """Options rendered in the adapter's question-seeded order, recorded per entry (``choice_order``)."""

    def load_local(self, directory: Path, subset: str | None) -> BenchmarkData:
        recs, info = read_records(find_file(directory, "gpqa_diamond"), record)
        return local_data(NAME, directory, Split("train", recs, [info]))

    def load_hub(self, rows: HubRows, where: str, subset: str | None, subsets: list[str]) -> HubSplits:
        return HubSplits(Split("train", hub_records(rows(subset or "default", "train"), where, record)))

    def choice_order(self, row: Mapping[str, Any]) -> list[str] | None:
        return choice_order(row)

    def prompt_text(self, row: Mapping[str, Any]) -> str:
        return "\n".join(str(row.get(f) or "") for f in ("Question", *ANSWERS))

    def key_items(self, data: BenchmarkData, solutions: Mapping[str, Any], sol_path: Path) -> list[KeyItem]:
        out = []
        for rec in data.eval.records:
            letter = target_letter(rec.canonical)
            out.append(KeyItem(NAME, rec.source_id, rec.canonical["Question"], letter, response(letter)))
        return out

    def truncated_text(self, item: KeyItem) -> str:
        return "considering each option in turn, the first thing to check is whether the mechanism"


BENCHMARK = GPQADiamond(
    BenchmarkMeta(
        name=NAME,
        version="1",
        display_name="GPQA-Diamond",
        population=198,
        primary_metric="acc",
        mirror_dir=NAME,
        eval_split="train",
        fewshot_split=None,
        question_field="Question",
        default_subset="default",
        max_few_shot=0,
        stratifications=("domain",),
        id_rule="Record ID",
        local_layout=(
            "gpqa_diamond/gpqa_diamond.{csv,jsonl,parquet}: Question, Correct Answer, Incorrect Answer 1-3, "
            "Record ID, High-level domain[, Subdomain]"
        ),
    )
)
