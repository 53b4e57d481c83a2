"""The answer key: the bundled items, how a prompt is recognised, and what the server answers.

EvalScope wraps each question in its adapter's prompt template and may prepend few-shot examples.  An
item is therefore recognised by its *needle* (the question text as stored in the dataset, e.g. the
adapter's question field) found in the final user message; when several needles occur, the one ending
last wins (ties: the longer needle), i.e. the last question of the message, not a few-shot example.

Each benchmark module (``evalpipe/benchmarks/<name>``, method ``key_items``) writes its answers in the
form its adapter scores and declares which faults target its first item by default
(``BenchmarkMeta.default_faults``).  Items are loaded with the project's own source loaders, so their ids
are the canonical source ids the manifest uses.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from evalpipe.benchmarks import REGISTRY, benchmark, find
from evalpipe.benchmarks.base import KeyItem, fenced
from evalpipe.benchmarks.faults import (
    FAULTS as FAULTS,  # re-exported: the server and the tests import it here
)
from evalpipe.benchmarks.faults import Fault as Fault
from evalpipe.benchmarks.parts import AnswerKeyPart
from evalpipe.errors import DataError
from evalpipe.hashing import message_text

Mode = Literal["positive", "negative"]
Thinking = Literal["off", "reasoning_content", "inline"]
THINKING_MODES: tuple[str, ...] = get_args(Thinking)
MODES: tuple[str, ...] = get_args(Mode)

SOLUTIONS_FILE = "solutions.json"  # responses the data cannot supply (e.g. code, constructed answers)
FAULTS_FILE = "faults.json"  # which item carries which planted fault


def _default_fault_benchmark(fault: str) -> str | None:
    """Without a faults file: the first item (file order) of this benchmark carries the fault."""
    return next((b.meta.name for b in REGISTRY.values() if fault in b.meta.default_faults), None)


_TOKEN = re.compile(r"\w+|[^\w\s]")

# The thinking the answer-key server shows before its answer (thinking mode), and the thinking that never
# ends (reasoning_budget fault).  No digits and no option letters, so that reasoning leaking into the
# answer could not be scored as one.
_THINKING = (
    "I read the question carefully, work through it step by step and check the result before I answer."
)
_ENDLESS_THINKING = "Let me reconsider this once more from the beginning and check every step again. "


@dataclass(frozen=True, slots=True)
class Reply:
    content: str
    finish_reason: Literal["stop", "length"]
    fault: str | None = (
        None  # 'truncate', 'index_error' or 'reasoning_budget' when this reply is a planted fault
    )
    think_to_budget: bool = False  # reasoning_budget: think until the output budget, never answer


def planted_wrong(item: KeyItem, share: float, attempt_seed: int | None = None) -> bool:
    """Whether the planted regression answers ``item`` wrong: its label's hash, as a fraction of 2^32, is below
    ``share`` — a fixed set of items, the same on every request and every run, independent of any order.  With
    ``attempt_seed`` (``--wrong-per-attempt``: the request's seed) the draw is per attempt instead: attempts of
    one item disagree independently, as sampling at a temperature above 0 makes them, and the same attempt
    asked again (its seed) answers the same."""
    if share <= 0.0:
        return False
    salt = "" if attempt_seed is None else f":{attempt_seed}"
    digest = hashlib.sha256(f"planted-wrong:{item.label}{salt}".encode()).hexdigest()
    return int(digest[:8], 16) / 2**32 < share


def thinking_text() -> str:
    """The reasoning shown before a (correct) answer in thinking mode."""
    return _THINKING


def endless_thinking(tokens: int) -> str:
    """Reasoning at least ``tokens`` approximate tokens long (reasoning_budget: cut by the budget)."""
    per = count_tokens(_ENDLESS_THINKING)
    return _ENDLESS_THINKING * (tokens // per + 1)


# ---------------------------------------------------------------- tokens (approximate, no tokenizer)


def count_tokens(text: str) -> int:
    """Approximate token count: words and punctuation marks (the self-test has no model tokenizer)."""
    return len(_TOKEN.findall(text))


def limit_tokens(text: str, max_tokens: int | None) -> tuple[str, bool]:
    """``text`` cut to ``max_tokens`` approximate tokens, and whether it was cut (finish_reason length)."""
    if max_tokens is None:
        return text, False
    spans = list(_TOKEN.finditer(text))
    if len(spans) <= max_tokens:
        return text, False
    return (text[: spans[max_tokens - 1].end()] if max_tokens > 0 else ""), True


def prompt_text(messages: Iterable[Any]) -> str:
    """Text of the final user message (the one holding the question); all text if there is none."""
    msgs = list(messages)
    for m in reversed(msgs):
        if isinstance(m, dict) and m.get("role") == "user":
            return message_text(m.get("content"))
    return "\n".join(message_text(m.get("content")) for m in msgs if isinstance(m, dict))


# ---------------------------------------------------------------- answer formats


def index_error_code(item: KeyItem) -> str:
    """A plausible off-by-one solution that raises IndexError on every input."""
    if item.func_name:
        return (
            "class Solution:\n"
            f"    def {item.func_name}(self, *args):\n"
            "        values = list(args)\n"
            "        return values[len(values)]\n"
        )
    return "import sys\n\ntokens = sys.stdin.read().split()\nprint(tokens[len(tokens)])\n"


def truncated_response(item: KeyItem) -> str:
    """What the model had written when its budget ran out: reasoning or code without a final answer."""
    spec: AnswerKeyPart | None = find(item.benchmark)
    if spec is not None:
        return spec.truncated_text(item)
    return item.answer[: max(1, len(item.answer) // 3)]  # the first third of the response


# ---------------------------------------------------------------- loading


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: unreadable ({exc})") from None
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected a JSON object")
    return data


def _items_of(name: str, directory: Path, solutions: dict[str, Any], sol_path: Path) -> list[KeyItem]:
    spec: AnswerKeyPart = benchmark(name)
    data = spec.load_local(directory, None)
    data.check_unique_ids()
    items = spec.key_items(data, solutions, sol_path)
    for it in items:
        if not it.needle.strip():
            raise DataError(f"{directory}: {it.label}: empty question text cannot be recognised")
    return items


class AnswerKey:
    """The bundled items of a data directory, their negative-control partners and fault targets."""

    def __init__(self, items: list[KeyItem], fault_targets: dict[str, KeyItem], data_dir: Path) -> None:
        self.items = items
        self.data_dir = data_dir
        self.fault_targets = fault_targets
        self._by_label = {it.label: it for it in items}
        self._partners = self._negative_partners(items)

    # -- construction

    @classmethod
    def load(cls, data_dir: Path, only: Collection[str] | None = None) -> AnswerKey:
        """Load every benchmark folder present in ``data_dir`` plus ``solutions.json`` / ``faults.json``.

        A registered benchmark that ships its miniature elsewhere (``BenchmarkMeta.bundled_data``, e.g. a
        benchmark registered from outside evalpipe) is loaded from there: the answer key knows every
        registered benchmark it has items for; ``only``: just these benchmarks (a directory of full datasets,
        e.g. the sources' local copies, holds benchmarks that need answers the data cannot supply)."""
        data_dir = Path(data_dir)
        if not data_dir.is_dir():
            raise DataError(f"{data_dir}: answer-key data directory not found")
        sol_path = data_dir / SOLUTIONS_FILE
        solutions = _read_json(sol_path) if sol_path.is_file() else {}
        items: list[KeyItem] = []
        folders = {
            b.meta.name: b.meta.bundled_data or data_dir / b.meta.mirror_dir
            for b in REGISTRY.values()
            if only is None or b.meta.name in only
        }
        for name, folder in folders.items():
            if folder.is_dir():
                items.extend(_items_of(name, folder, solutions, sol_path))
        if not items:
            raise DataError(
                f"{data_dir}: no benchmark folders ({', '.join(f.name for f in folders.values())})"
            )
        by_label = {it.label: it for it in items}
        targets = cls._fault_targets(data_dir / FAULTS_FILE, items, by_label)
        return cls(items, targets, data_dir)

    @staticmethod
    def _fault_targets(path: Path, items: list[KeyItem], by_label: dict[str, KeyItem]) -> dict[str, KeyItem]:
        declared: dict[str, Any] = _read_json(path).get("targets", {}) if path.is_file() else {}
        targets: dict[str, KeyItem] = {}
        for fault in FAULTS:
            spec = declared.get(fault)
            if spec is not None:
                label = f"{spec.get('benchmark')}:{spec.get('source_id')}" if isinstance(spec, dict) else None
                if label not in by_label:
                    raise DataError(f"{path}: targets.{fault}: no bundled item {label or spec!r}")
                targets[fault] = by_label[label]
            else:
                first = next((it for it in items if it.benchmark == _default_fault_benchmark(fault)), None)
                if first is not None:
                    targets[fault] = first
        ie = targets.get("index_error")
        code_bench = _default_fault_benchmark("index_error")
        if ie is not None and ie.benchmark != code_bench:
            raise DataError(f"{path}: targets.index_error must be a {code_bench} item, got {ie.label}")
        return targets

    @staticmethod
    def _negative_partners(items: list[KeyItem]) -> dict[str, KeyItem | None]:
        """Wrong-index negative control: the next item (cyclic, file order) of the same benchmark whose
        gold differs.  Code items prefer the same style (stdin program for a stdin problem, a
        ``Solution`` class for a functional one), so a negative fails as a wrong answer where it can
        rather than because the program cannot even be loaded."""

        def cyclic_next(group: list[KeyItem], it: KeyItem) -> KeyItem | None:
            i, n = group.index(it), len(group)
            return next((group[(i + k) % n] for k in range(1, n) if group[(i + k) % n].gold != it.gold), None)

        by_bench: dict[str, list[KeyItem]] = {}
        by_style: dict[tuple[str, bool], list[KeyItem]] = {}
        for it in items:
            by_bench.setdefault(it.benchmark, []).append(it)
            by_style.setdefault((it.benchmark, it.func_name is None), []).append(it)
        partners: dict[str, KeyItem | None] = {}
        for it in items:
            same_style = cyclic_next(by_style[(it.benchmark, it.func_name is None)], it)
            partners[it.label] = same_style or cyclic_next(by_bench[it.benchmark], it)
        return partners

    # -- queries

    def item(self, benchmark: str, source_id: str) -> KeyItem:
        return self._by_label[f"{benchmark}:{source_id}"]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for it in self.items:
            out[it.benchmark] = out.get(it.benchmark, 0) + 1
        return out

    def negative_partner(self, item: KeyItem) -> KeyItem:
        partner = self._partners.get(item.label)
        if partner is None:
            raise DataError(f"{item.label}: no other item with a different gold answer (negative control)")
        return partner

    def check_mode(self, mode: str, faults: Collection[str]) -> None:
        """Fail before serving when the mode or a fault cannot be honoured by this data."""
        if mode not in MODES:
            raise DataError(f"unknown mode {mode!r} (expected one of {', '.join(MODES)})")
        if mode == "negative":
            for it in self.items:
                self.negative_partner(it)
        for fault in faults:
            if fault not in FAULTS:
                raise DataError(f"unknown fault {fault!r} (expected some of {', '.join(FAULTS)})")
            if fault not in self.fault_targets:
                raise DataError(
                    f"fault {fault}: no {_default_fault_benchmark(fault)} item in {self.data_dir}"
                )

    def match(self, text: str) -> KeyItem | None:
        """The item whose needle ends last in ``text`` (ties: the longest needle); None if none occurs."""
        best: KeyItem | None = None
        best_rank = (-1, -1)
        for it in self.items:
            pos = text.rfind(it.needle)
            if pos >= 0:
                rank = (pos + len(it.needle), len(it.needle))
                if rank > best_rank:
                    best, best_rank = it, rank
        return best

    def reply(
        self,
        item: KeyItem,
        *,
        mode: str,
        faults: Collection[str],
        wrong_share: Mapping[str, float] | None = None,
        attempt_seed: int | None = None,
    ) -> Reply:
        """The response for ``item``: planted content faults first, then the planted regression
        (``wrong_share``: per benchmark, the share of its items answered wrong, ``planted_wrong``), then the
        mode's answer."""
        if "index_error" in faults and self.fault_targets.get("index_error") is item:
            return Reply(fenced(index_error_code(item)), "stop", "index_error")
        if "truncate" in faults and self.fault_targets.get("truncate") is item:
            return Reply(truncated_response(item), "length", "truncate")
        if "reasoning_budget" in faults and self.fault_targets.get("reasoning_budget") is item:
            return Reply("", "length", "reasoning_budget", think_to_budget=True)
        if mode == "negative" or planted_wrong(
            item, (wrong_share or {}).get(item.benchmark, 0.0), attempt_seed
        ):
            return Reply(self.negative_partner(item).answer, "stop")
        return Reply(item.answer, "stop")
