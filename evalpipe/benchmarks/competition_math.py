"""Competition problems with one final answer — AIME (``aime24``/``aime25``/``aime26``) and HMMT February
(``hmmt25``/``hmmt26``): the behaviour those modules share.  Not a benchmark itself (not in ``_MODULES``).

Both EvalScope adapters put the problem into the prompt and score the answer extracted from the response
(``\\boxed{}`` first) against the record's answer with Math-Verify (``evalscope.metrics.math``): AIME with
``integer_only=True`` (the answers are 0-999), HMMT as any expression.  evalpipe leaves the scoring to
them; the answer key replies with the reference answer boxed after a line of reasoning.

**AIME** (adapter: ``problem`` → input, ``answer`` or else ``solution`` → target; split ``test``).  The
hub copies differ in their other columns and evalpipe cannot see them from here, so the canonical record
is every column of the row (scalars as text, so a CSV, JSONL or parquet copy hashes the same; it is also
what EvalScope reads, as the adapter's ``Sample`` accepts a text target only) and:

* id = the record's own ``id`` field, else ``ID``; without either, the first 16 hex characters of
  sha256(problem) (LF line endings), as for GSM8K;
* stratum ``part`` (contest I or II) = a ``part``/``Part`` field (``I``/``II``/``1``/``2``), else the part
  inside an AoPS-style id ``2025-I-7``, else the part in an AoPS wiki ``url`` (``…/2024_AIME_I_Problems/
  Problem_1``, the form the ``math-ai/aime24`` copy is assumed to carry); unknown otherwise (stratifying by ``part`` then stops with one
  line naming the benchmark).

**HMMT** (MathArena schema, as the adapter reads it: ``problem_idx``, ``problem``, ``answer``,
``problem_type``; split ``train``): id = ``problem_idx``; stratum ``problem_type`` = the record's types
sorted and joined with ``+`` (``Algebra+Geometry``), unknown where the field is empty.  The adapter strips
problem and answer, so the identity check looks for the stripped problem.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalpipe.artifacts.schema.outcomes import FailureClass
from evalpipe.benchmarks.base import (
    Benchmark,
    BenchmarkMeta,
    HubRows,
    HubSplits,
    KeyItem,
    ReviewScore,
    hub_records,
    local_data,
    read_records,
    text_field,
)
from evalpipe.errors import DataError
from evalpipe.hashing import normalize_newlines
from evalpipe.sources.base import (
    BenchmarkData,
    SourceRecord,
    Split,
    canonical_scalar,
    canonical_value,
    find_file,
    require,
)

AOPS_ID = re.compile(r"^\d{4}-(I|II)-\d{1,2}$")  # e.g. 2025-II-14
AOPS_URL = re.compile(r"_AIME_(I|II)_Problems/")  # an AoPS wiki address: .../2024_AIME_I_Problems/Problem_1
PARTS = {"I": "I", "II": "II", "1": "I", "2": "II"}
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")


def as_text(value: Any) -> Any:
    """A scalar as text (``60`` and ``"60"`` are the same field in a CSV and a parquet copy); structures
    value-canonicalised; None stays None (the column is then left out)."""
    value = canonical_value(value)
    if value is None or isinstance(value, str | list | dict):
        return value
    return str(value)


def problem_id(problem: str) -> str:
    return hashlib.sha256(normalize_newlines(problem).encode("utf-8")).hexdigest()[:16]


def response(answer: str) -> str:
    """The reference answer where Math-Verify extracts first: ``\\boxed{…}`` in inline math."""
    return f"Working through the problem step by step gives the result.\nThe final answer is $\\boxed{{{answer}}}$."


TRUNCATED = "Let me work through this problem step by step. First I need to rewrite the expression as"


class CompetitionMath(Benchmark):
    """What AIME and HMMT share: Math-Verify's failure classes, the boxed answer key, the truncation."""

    def classify_wrong(self, score: ReviewScore) -> tuple[FailureClass, str | None]:
        extracted = score.get("extracted_prediction")
        if not isinstance(extracted, str) or not extracted.strip():
            return "unparsable_answer", "no mathematical answer could be extracted (\\boxed{} or expression)"
        return "wrong", None

    def truncated_text(self, item: KeyItem) -> str:
        return TRUNCATED  # no digits, no boxed expression: nothing for Math-Verify to extract


# ---------------------------------------------------------------- AIME


def _aime_part(canonical: Mapping[str, Any], source_id: str, file: str, line: int) -> str | None:
    for field_name in ("part", "Part"):
        value = canonical.get(field_name)
        if value is not None:
            part = PARTS.get(str(value).strip().upper())
            if part is None:
                raise DataError(f"{file}:{line}: field {field_name!r} must be I or II, got {value!r}")
            return part
    match = AOPS_ID.match(source_id) or AOPS_URL.search(str(canonical.get("url") or ""))
    return match.group(1) if match else None


def aime_target(canonical: Mapping[str, Any]) -> str:
    """The adapter's target: ``answer``, or ``solution`` when ``answer`` is missing or empty."""
    return str(canonical.get("answer") or canonical.get("solution") or "")


def aime_gold(canonical: Mapping[str, Any]) -> str:
    """The answer a response must box: the target, or the last ``\\boxed{}`` of a solution-only record."""
    target = aime_target(canonical)
    if canonical.get("answer"):
        return target.strip()
    boxed = _BOXED.findall(target)
    return (boxed[-1] if boxed else target).strip()


class Aime(CompetitionMath):
    """AIME of one year (the module names the year); ids and contest part as the module docstring says."""

    def record(self, raw: dict[str, Any], *, file: str, line: int, row: int) -> SourceRecord:
        require(raw, ("problem",), file, line)
        problem = text_field(raw["problem"], file, line, "problem")
        if not problem.strip():
            raise DataError(f"{file}:{line}: field 'problem' is empty")
        canonical = {str(k): v for k, v in ((k, as_text(v)) for k, v in raw.items()) if v is not None}
        if not aime_target(canonical).strip():
            raise DataError(f"{file}:{line}: no answer: field 'answer' (or 'solution') is missing or empty")
        own = next((canonical[f] for f in ("id", "ID") if canonical.get(f) not in (None, "")), None)
        source_id = str(own) if own is not None else problem_id(problem)
        return SourceRecord(
            benchmark=self.meta.name,
            subset="default",
            stratum_fields={"part": _aime_part(canonical, source_id, file, line)},
            source_id=source_id,
            file=file,
            row=row,
            raw=raw,
            canonical=canonical,
        )

    def materialize_row(self, record: SourceRecord, pinned: bool, where: str) -> dict[str, Any]:
        """The canonical record (scalars as text): the adapter's ``Sample`` takes a text target only, so a
        copy whose answers are integers (a CSV read back as parquet, say) must reach it as text."""
        return dict(record.canonical)

    def load_local(self, directory: Path, subset: str | None) -> BenchmarkData:
        recs, info = read_records(find_file(directory, "test"), self.record)
        return local_data(self.meta.name, directory, Split("test", recs, [info]))

    def load_hub(self, rows: HubRows, where: str, subset: str | None, subsets: list[str]) -> HubSplits:
        return HubSplits(Split("test", hub_records(rows(subset or "default", "test"), where, self.record)))

    def key_items(self, data: BenchmarkData, solutions: Mapping[str, Any], sol_path: Path) -> list[KeyItem]:
        out = []
        for rec in data.eval.records:
            gold = aime_gold(rec.canonical)
            out.append(KeyItem(self.meta.name, rec.source_id, rec.canonical["problem"], gold, response(gold)))
        return out


AIME_ID_RULE = "the record's id (or ID) field; without one, first 16 hex of sha256(problem)"


def aime_layout(name: str) -> str:
    return (
        f"{name}/test.{{jsonl,csv,parquet}}: problem, answer (or solution); optional id/ID, part/Part "
        "(I/II; or an AoPS-style id 2025-I-7, or an AoPS wiki url …_AIME_I_Problems/…)"
    )


# ---------------------------------------------------------------- HMMT


def _problem_types(value: Any, file: str, line: int) -> list[str] | None:
    value = canonical_value(value)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DataError(f"{file}:{line}: field 'problem_type' must be a list of text, got {value!r}")
    return value


class Hmmt(CompetitionMath):
    """HMMT February of one year (MathArena schema)."""

    def record(self, raw: dict[str, Any], *, file: str, line: int, row: int) -> SourceRecord:
        require(raw, ("problem_idx", "problem", "answer"), file, line)
        idx = canonical_scalar(raw["problem_idx"])
        if isinstance(idx, str) and idx.strip().isdigit():  # a CSV copy
            idx = int(idx.strip())
        if not isinstance(idx, int) or isinstance(idx, bool):
            raise DataError(
                f"{file}:{line}: field 'problem_idx' must be an integer, got {raw['problem_idx']!r}"
            )
        problem = text_field(raw["problem"], file, line, "problem")
        answer = str(canonical_scalar(raw["answer"]))
        if not problem.strip() or not answer.strip():
            raise DataError(
                f"{file}:{line}: field {'problem' if not problem.strip() else 'answer'!r} is empty"
            )
        canonical: dict[str, Any] = {"problem_idx": idx, "problem": problem, "answer": answer}
        types = _problem_types(raw.get("problem_type"), file, line)
        if types:
            canonical["problem_type"] = types
        return SourceRecord(
            benchmark=self.meta.name,
            subset="default",
            stratum_fields={"problem_type": "+".join(sorted(types)) if types else None},
            source_id=str(idx),
            file=file,
            row=row,
            raw=raw,
            canonical=canonical,
        )

    def load_local(self, directory: Path, subset: str | None) -> BenchmarkData:
        recs, info = read_records(find_file(directory, "train"), self.record)
        return local_data(self.meta.name, directory, Split("train", recs, [info]))

    def load_hub(self, rows: HubRows, where: str, subset: str | None, subsets: list[str]) -> HubSplits:
        return HubSplits(Split("train", hub_records(rows(subset or "default", "train"), where, self.record)))

    def question_text(self, row: Mapping[str, Any]) -> object:
        return str(row.get("problem", "")).strip()  # the adapter strips the problem

    def key_items(self, data: BenchmarkData, solutions: Mapping[str, Any], sol_path: Path) -> list[KeyItem]:
        out = []
        for rec in data.eval.records:
            gold = rec.canonical["answer"].strip()
            needle = rec.canonical["problem"].strip()
            out.append(KeyItem(self.meta.name, rec.source_id, needle, gold, response(gold)))
        return out


HMMT_ID_RULE = "problem_idx"


def hmmt_layout(name: str) -> str:
    return f"{name}/train.{{jsonl,parquet}}: problem_idx, problem, answer, problem_type (list or null)"


def aime_benchmark(name: str, year: int) -> Aime:
    """The module of one AIME year (``aime24``…): every year shares the record, id rule and scoring."""
    return Aime(
        BenchmarkMeta(
            name=name,
            version="1",
            display_name=f"AIME {year}",
            population=30,  # AIME I and II, 15 problems each
            primary_metric="acc",
            mirror_dir=name,
            eval_split="test",
            fewshot_split=None,
            question_field="problem",
            default_subset="default",
            max_few_shot=0,
            stratifications=("part",),
            id_rule=AIME_ID_RULE,
            local_layout=aime_layout(name),
        )
    )


#: Problems per HMMT February year in the MathArena copy the adapter reads (its dataset card's ``num_examples``).
HMMT_POPULATION = {2025: 30, 2026: 33}


def hmmt_benchmark(name: str, year: int) -> Hmmt:
    """The module of one HMMT February year (``hmmt25``…): every year shares the record and scoring."""
    return Hmmt(
        BenchmarkMeta(
            name=name,
            version="1",
            display_name=f"HMMT Feb {year}",
            # the MathArena copies' dataset cards (split train, num_examples): hmmt_feb_2025 30, hmmt_feb_2026
            # 33; a year not listed has no fixed count here (planning it needs its data)
            population=HMMT_POPULATION.get(year),
            primary_metric="acc",
            mirror_dir=name,
            eval_split="train",
            fewshot_split=None,
            question_field="problem",
            default_subset="default",
            max_few_shot=0,
            stratifications=("problem_type",),
            id_rule=HMMT_ID_RULE,
            local_layout=hmmt_layout(name),
        )
    )
